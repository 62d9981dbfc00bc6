import Foundation

/// The operating system of a device. It decides which identifiers exist (IDFA/IDFV on iOS; GAID,
/// ANDROID_ID, OAID on Android) and how providers are called (Branch's `os` is `iOS` or `Android`).
public enum Platform: String, LedgerEnum {
    /// Apple iOS / iPadOS.
    case ios
    /// Google Android.
    case android

    /// The platform's usual spelling, as Branch and Singular want it: `iOS`, `Android`.
    public var displayName: String {
        switch self {
        case .ios: "iOS"
        case .android: "Android"
        }
    }
}
