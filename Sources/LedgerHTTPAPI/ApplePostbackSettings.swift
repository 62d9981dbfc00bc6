import Foundation
import LedgerDomain

/// Per-app settings of the routes that take Apple's ad-attribution postbacks: which host name
/// binds a developer copy to an app, and which apps take postbacks signed with Apple's
/// development keys.
///
/// Apple's device sends a winning postback's copy to the advertised app's own domain (the
/// registrable part of the URL in the app's `NSAdvertisingAttributionReportEndpoint` or
/// `AttributionCopyEndpoint`), with no credential: the host name the request reached is the only
/// thing that says which app it is for, so a host belongs to one app and an unknown host is
/// answered 404 without storing anything.
public struct ApplePostbackSettings: Sendable, Hashable {
    /// The app each developer-copy host name belongs to (lowercase, without port).
    public private(set) var copyHosts: [String: AppID]
    /// The apps that take postbacks signed with Apple's development keys (test builds).
    public var developmentKeyApps: Set<AppID>
    /// Developer copies per app per second (Apple sends a few a day; a flood is not Apple).
    public var copyRateLimit: HTTPRateLimit
    /// The largest developer copy accepted, in bytes (Apple's postbacks are under 2 KiB).
    public var copyMaxBytes: Int

    /// Settings with no copy hosts and no development keys: 10 copies per second per app in
    /// bursts of 50, 16 KiB each.
    public init(copyHosts: [String: AppID] = [:], developmentKeyApps: Set<AppID> = [],
                copyRateLimit: HTTPRateLimit = HTTPRateLimit(requestsPerSecond: 10, burst: 50), copyMaxBytes: Int = 16_384) {
        self.copyHosts = Dictionary(copyHosts.map { (Self.normalized($0.key), $0.value) }, uniquingKeysWith: { first, _ in first })
        self.developmentKeyApps = developmentKeyApps
        self.copyRateLimit = copyRateLimit
        self.copyMaxBytes = copyMaxBytes
    }

    /// The app a request's host (`Host` header, possibly with a port) is bound to, if any.
    public func app(forHost host: String?) -> AppID? {
        guard let host else { return nil }
        return copyHosts[Self.normalized(host)]
    }

    /// `Example.COM.:443` → `example.com`.
    static func normalized(_ host: String) -> String {
        var name = Substring(host)
        if !name.hasPrefix("["), let colon = name.lastIndex(of: ":") { name = name[..<colon] }
        while name.hasSuffix(".") { name = name.dropLast() }
        return name.lowercased()
    }
}
