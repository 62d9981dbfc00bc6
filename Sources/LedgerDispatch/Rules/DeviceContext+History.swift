import LedgerDomain

extension DeviceContext {
    /// Whether the device lets its advertising identifiers be used: limit-ad-tracking off and,
    /// where the App Tracking Transparency status is known, tracking authorized.
    var allowsAdvertisingIdentifiers: Bool {
        !limitAdTracking && (attStatus == nil || attStatus == .authorized)
    }

    /// Whether an identifier ``completeIdentifiers(from:)`` could still fill is missing (an
    /// advertising id only while tracking is allowed; on Android a GAID or an OAID, not both).
    var lacksIdentifiers: Bool {
        let advertising = allowsAdvertisingIdentifiers
        switch platform {
        case .ios: return idfv == nil || (advertising && idfa == nil)
        case .android: return androidID == nil || (advertising && gaid == nil && oaid == nil)
        }
    }

    /// Fills the identifiers this context lacks from `earlier`, a context the same device recorded
    /// before (a launch), so a fact that does not repeat them — a purchase reported by the app's
    /// backend — is sent with the identifiers the providers need (Singular's `idfv`, Google's
    /// `rdid`, Branch's `hardware_id`):
    /// - the vendor and hardware ids (`idfv`, `android_id`), which do not depend on consent;
    /// - the advertising ids (`idfa`, `gaid`, `oaid`) only when both this context and `earlier`
    ///   allow ad tracking (``allowsAdvertisingIdentifiers``): an id the user has since withheld is
    ///   never brought back.
    ///
    /// Identifiers this context carries are kept; a context of another platform gives nothing.
    mutating func completeIdentifiers(from earlier: DeviceContext) {
        guard earlier.platform == platform else { return }
        if idfv == nil { idfv = earlier.idfv }
        if androidID == nil { androidID = earlier.androidID }
        guard allowsAdvertisingIdentifiers, earlier.allowsAdvertisingIdentifiers else { return }
        if idfa == nil { idfa = earlier.idfa }
        if gaid == nil { gaid = earlier.gaid }
        if oaid == nil { oaid = earlier.oaid }
    }
}
