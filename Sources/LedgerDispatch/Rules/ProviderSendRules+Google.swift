import Foundation
import LedgerDomain
import LedgerProviders
import LedgerStore

/// Google app conversion tracking (Google App Conversion Tracking API): the conversion request from
/// its cause, and the cross-network request derived from the rebuilt conversion request.
extension ProviderSendRules {
    /// `POST /pagead/conversion/app/1.0` for `send`, built from `cause`.
    func googleConversionRequest(
        send: SendRequested, cause: RecordedEvent, context: SendContext
    ) throws(DispatchError) -> ProviderRequest {
        guard let builder = google else { throw Self.notConfigured(.google) }
        let event = try googleEvent(send: send, cause: cause, context: context)
        return try Self.building { () throws(ProviderError) in try builder.conversionRequest(for: event) }
    }

    /// `POST /pagead/conversion/app/1.0/cross_network`: "identical to the original conversion
    /// tracking request", rebuilt from the conversion's `SendRequested` and cause (never from the
    /// stored, redacted request), plus `ad_event_id` and `attributed`.
    func googleCrossNetworkRequest(_ context: SendContext) throws(DispatchError) -> ProviderRequest {
        guard google != nil else { throw Self.notConfigured(.google) }
        guard let conversion = context.conversion else {
            throw .unbuildable(rule: "conversion_missing", detail: "a cross_network send needs the conversion send and its cause")
        }
        guard let adEventID = context.send.parameters?["ad_event_id"] else {
            throw .unbuildable(rule: "ad_event_id_missing", detail: "parameters.ad_event_id is required for cross_network")
        }
        let attributed = try Self.attributed(context.send, adEventID: adEventID, cause: context.cause)
        let original = try googleConversionRequest(send: conversion.send, cause: conversion.cause, context: context)
        return try Self.building { () throws(ProviderError) in
            try GoogleConversionRequestBuilder.crossNetworkRequest(derivedFrom: original, adEventID: adEventID, attributed: attributed)
        }
    }

    /// `attributed`: `parameters.attributed` (`1` / `0`); without it, whether the decision that caused
    /// the send made this ad event the winner.
    static func attributed(_ send: SendRequested, adEventID: String, cause: RecordedEvent) throws(DispatchError) -> Bool {
        switch send.parameters?["attributed"] {
        case "1": return true
        case "0": return false
        case .some:
            throw .unbuildable(rule: "attributed_invalid", detail: "parameters.attributed must be 0 or 1")
        case nil:
            guard case .decision(let decision) = try SendCause(cause) else {
                throw .unbuildable(rule: "attributed_missing",
                    detail: "parameters.attributed is absent and the cause is not an AttributionDecided")
            }
            guard let winner = decision.winner else { return false }
            return winner.source == .google && winner.adEventID == adEventID
        }
    }

    /// The event the conversion request reports (the Google App Conversion Tracking API's parameter
    /// table).
    func googleEvent(send: SendRequested, cause: RecordedEvent, context: SendContext) throws(DispatchError)
        -> GoogleConversionEvent
    {
        let decoded = try context.decodedCauses.cause(cause)
        let device = try Self.device(of: decoded, context: context)
        var type: LedgerProviders.GoogleAppEventType
        var name: String?
        var value: Money?
        var eventData = GoogleEventData()
        var deepLink: DeepLink?
        var referrerGclid: String?
        switch decoded {
        case .firstOpen(let open):
            // "first_open … should always be sent for attributing installs".
            type = .firstOpen
            deepLink = open.deepLink
            referrerGclid = open.installReferrer?.gclid
        case .sessionStarted(let session):
            // "session_start … for reattributing sessions".
            type = .sessionStart
            deepLink = session.deepLink
        case .inAppEvent(let event):
            if let declared = event.googleEventType {
                type = try Self.googleEventType(declared.rawValue)
            } else {
                type = .custom
            }
            if type == .custom { name = event.name }
            value = event.value
            if let custom = event.customData, !custom.isEmpty { eventData = try Self.googleEventData(custom) }
        case .revenue(let revenue):
            // "in_app_purchase: a purchase made through the native app store".
            type = .inAppPurchase
            value = revenue.revenue
        default:
            throw Self.notSupported(decoded, send)
        }
        if let override = send.parameters?["app_event_type"] {
            type = try Self.googleEventType(override)
            if type == .custom {
                guard let customName = send.parameters?["app_event_name"] ?? name else {
                    throw .unbuildable(rule: "required_for_custom", detail: "app_event_type custom needs parameters.app_event_name")
                }
                name = customName
            } else {
                name = nil
            }
        }
        let platform: GoogleDevicePlatform
        let rdid: String
        switch device.platform {
        case .ios:
            platform = .iOS
            rdid = device.idfa ?? Self.zeroUUID
        case .android:
            platform = .android
            rdid = device.gaid ?? Self.zeroUUID
        }
        let parts = try Self.requireUserAgent(device)
        let ip = try Self.requireIP(device)
        try refuseServerAddress(ip)
        let timestamp = try Self.building { () throws(ProviderError) in try GoogleTimestamp(cause.occurredAt) }
        var valueText: String?
        if let amount = value?.amount {
            valueText = try Self.building { () throws(ProviderError) in try GoogleConversionEvent.valueText(amount) }
        }
        return GoogleConversionEvent(
            appEventType: type, appEventName: name, rdid: rdid, platform: platform,
            limitAdTracking: device.limitsAdTracking, appVersion: device.appVersion, osVersion: device.osVersion,
            sdkVersion: device.sdkVersion, timestamp: timestamp, value: valueText, currencyCode: value?.currency.rawValue,
            gclid: deepLink?.gclid ?? referrerGclid, gbraid: deepLink?.gbraid, userAgent: Self.googleUserAgent(parts, product: google?.product ?? .ledger),
            deviceIP: ip, eventData: eventData)
    }

    static func googleEventType(_ text: String) throws(DispatchError) -> LedgerProviders.GoogleAppEventType {
        try building { () throws(ProviderError) in try LedgerProviders.GoogleAppEventType(validating: text) }
    }

    /// `app_event_data` from `custom_data`, through Google's own importer (integers stay integers,
    /// other numbers are written exactly, keys sorted as the ledger stores them).
    static func googleEventData(_ custom: [String: JSONValue]) throws(DispatchError) -> GoogleEventData {
        let data: Data
        do {
            data = try LedgerJSON.makeEncoder().encode(custom)
        } catch {
            throw .unbuildable(rule: "cause_unreadable", detail: "custom_data does not encode as JSON")
        }
        return try building { () throws(ProviderError) in try GoogleEventData.fromJSON(data) }
    }

    /// The Google App Conversion Tracking API's app User-Agent, built server side: the
    /// analytics/ads `product`'s name and version, the device's parts, and `; Proxy`:
    /// `AttributionLedger/1.0.0 (iOS 17.1; en_US; iPhone15,2; Build/21B74; Proxy)`. (The app's own
    /// name belongs there only in a User-Agent built on the device.) The locale is sent in the
    /// form `AppUserAgentLocale.googleForm(_:)` writes (`en-US` → `en_US`, `zh_Hans_CN` → `zh_CN`),
    /// the rule facts were checked by when appended; a missing build is left blank for the builder
    /// to refuse (only facts appended before the build was required lack it).
    static func googleUserAgent(_ parts: UserAgentParts, product: GoogleUserAgentProduct) -> GoogleAppUserAgent {
        GoogleAppUserAgent(
            name: product.name, version: product.version, osAndVersion: "\(parts.osName) \(parts.osVersion)",
            locale: AppUserAgentLocale.googleForm(parts.locale) ?? parts.locale, device: parts.deviceModel,
            build: parts.build.map { "Build/\($0)" } ?? "", proxy: true)
    }

    /// Refuses a device address that is one of this service's own (``serverPublicIPs``), compared
    /// as hosts (`::ffff:203.0.113.9` is `203.0.113.9`). Google App Conversion Tracking API:
    /// `X-Forwarded-For` is "the public IPv4 or IPv6 address of the device where the event was
    /// measured"; ours means the address was captured on the server, not the device.
    func refuseServerAddress(_ ip: String) throws(DispatchError) {
        guard let address = BranchIPAddress(ip)?.unmapped,
            serverPublicIPs.contains(where: { BranchIPAddress($0)?.unmapped == address })
        else { return }
        throw .unbuildable(
            rule: "not_server_ip",
            detail: "X-Forwarded-For must be the device's public IP, not one of this service's own (LEDGER_SERVER_PUBLIC_IPS; "
                + "Google App Conversion Tracking API)")
    }
}
