import Foundation
import LedgerProviders
import Testing

// Helpers shared by the Google and Apple tests of this package (names prefixed `ga` so they do
// not collide with the Branch/Singular helpers in the same test target).

/// Runs `body`, which must throw a `ProviderError` with this field and rule.
func gaExpectError<T>(
    field: String, rule: String, sourceLocation: SourceLocation = #_sourceLocation,
    _ body: () throws -> T
) {
    do {
        let value = try body()
        Issue.record("Expected \(field) / \(rule), got a value: \(value)", sourceLocation: sourceLocation)
    } catch let error as ProviderError {
        #expect(error.field == field, "\(error)", sourceLocation: sourceLocation)
        #expect(error.rule == rule, "\(error)", sourceLocation: sourceLocation)
    } catch {
        Issue.record("Expected a ProviderError, got \(error)", sourceLocation: sourceLocation)
    }
}

/// A request as printed in the Google App Conversion Tracking API's samples, read back into its
/// parts.
struct GASampleRequest {
    var method: String
    var path: String
    var query: [QueryItem]
    var headers: [Header]
    var body: String?

    /// Reads `POST /path\n ?a=1\n &b=2\nHost: …\nName: value\n{body}` as the document prints it.
    init(_ text: String) {
        var lines = text.split(separator: "\n", omittingEmptySubsequences: true).map { $0.trimmingCharacters(in: .whitespaces) }
        let requestLine = lines.removeFirst().split(separator: " ")
        method = String(requestLine[0])
        path = String(requestLine[1])
        query = []
        headers = []
        body = nil
        for line in lines {
            if line.hasPrefix("?") || line.hasPrefix("&") {
                let pair = line.dropFirst().split(separator: "=", maxSplits: 1)
                query.append(QueryItem(String(pair[0]), String(pair[1])))
            } else if line.hasPrefix("{") {
                body = line
            } else if let colon = line.firstIndex(of: ":") {
                let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
                headers.append(Header(String(line[..<colon]), value))
            }
        }
    }

    /// The query string as the document prints it (no character there needs percent-encoding).
    var encodedQuery: String { query.map { "\($0.name)=\($0.value)" }.joined(separator: "&") }
}

/// The credentials and values of the Google App Conversion Tracking API's samples.
enum GASamples {
    static let link = GoogleAppLink(devToken: "Z_eErE4DkvcKjDM1OVE4c4", linkID: "31FF8D67E5BB5DD5029DCC2734C2F884")
    static let userAgent = GoogleAppUserAgent(
        name: "MyAnalyticsCompany", version: "1.0.0", osAndVersion: "iOS 10.0.2", locale: "en_US", device: "iPhone9,1",
        build: "Build/13D15")

    /// The event of the Google App Conversion Tracking API's samples; `sdk_version` is given
    /// explicitly (`1.9.5r6`).
    static func event(
        _ type: GoogleAppEventType, name: String? = nil, value: String? = nil, currency: String? = nil, gclid: String? = nil,
        eventData: GoogleEventData = GoogleEventData()
    ) throws -> GoogleConversionEvent {
        GoogleConversionEvent(
            appEventType: type, appEventName: name, rdid: "0F7AB11F-DA50-498E-B225-21AC1977A85D", platform: .iOS,
            limitAdTracking: false, appVersion: "1.2.4", osVersion: "9.3.2", sdkVersion: "1.9.5r6",
            timestamp: try GoogleTimestamp(text: "1432681913.123456"), value: value, currencyCode: currency, gclid: gclid,
            userAgent: userAgent, deviceIP: "216.58.194.174", eventData: eventData)
    }

    static let builder = GoogleConversionRequestBuilder(link: link)
}

extension Data {
    /// The body as UTF-8 text, for assertions.
    var gaText: String { String(decoding: self, as: UTF8.self) }
}
