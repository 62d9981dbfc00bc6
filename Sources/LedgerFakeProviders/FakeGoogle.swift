import Foundation
import LedgerProviders
import Synchronization

/// Google app conversion tracking (seed 000), faked.
///
/// - `POST /pagead/conversion/app/1.0` answers `{"ad_events": […], "errors": […], "attributed": …}`
///   by the configured ``Answer`` (default: `.affirmative()`, a UAC ad event). An affirmative answer carries one ad
///   event in the document's sample shape with a fresh `ad_event_id` per request.
/// - `POST /pagead/conversion/app/1.0/cross_network` answers a bare `200` with an empty body, and
///   notes an anomaly when `ad_event_id` was never issued, repeats, or `attributed` is not `0`/`1`.
/// - A `POST` without a body and without `Content-Length` is answered `411` ("our server requires
///   that you explicitly set the Content-Length: 0 header"), noted as `content_length_required`.
/// - Missing required query parameters or headers are noted (`missing_parameter`,
///   `missing_header`) but still answered, so a test can see them all at once.
public final class FakeGoogle: FakeProvider {
    /// How the model answers a conversion request.
    public enum Answer: Sendable, Hashable {
        /// `attributed: true`, one ad event of this `campaign_type` (`UAC`, `Search`, `Display`,
        /// `Video`), fields as in the document's sample for that type.
        case affirmative(campaignType: String = "UAC")
        /// `{"ad_events": [], "errors": [], "attributed": false}`.
        case negative
        /// `{"ad_events": [], "errors": codes, "attributed": false}`, e.g. `INVALID_CURRENCY_CODE`.
        case errors([String])
        /// A bare status (e.g. `500`, `503`) with a short text body.
        case status(Int)
    }

    /// Which provider this fakes.
    public let provider = Provider.google
    /// Requests, script, anomalies, delay.
    public let recorder = FakeRecorder()

    private struct Model {
        var defaultAnswer = Answer.affirmative()
        var byRDID: [String: Answer] = [:]
        var issued: [String] = []
        var issuedSet: Set<String> = []
        var crossNetworkReported: Set<String> = []
        var counter = 0
    }

    private let model = Mutex(Model())

    init() {}

    /// The answer for every conversion request without a per-device answer.
    public func setDefaultAnswer(_ answer: Answer) { model.withLock { $0.defaultAnswer = answer } }

    /// The answer for conversion requests with this `rdid`.
    public func setAnswer(_ answer: Answer, forRDID rdid: String) {
        model.withLock { $0.byRDID[rdid.uppercased()] = answer }
    }

    /// Every `ad_event_id` issued in an affirmative answer, in order.
    public var issuedAdEventIDs: [String] { model.withLock { $0.issued } }

    /// The conversion requests received (not cross-network).
    public var conversionRequests: [RecordedRequest] {
        requests.filter { $0.path == GoogleConversionRequestBuilder.conversionPath }
    }

    /// The cross-network attribution requests received.
    public var crossNetworkRequests: [RecordedRequest] {
        requests.filter { $0.path == GoogleConversionRequestBuilder.crossNetworkPath }
    }

    /// Forgets answers, issued ids and reported cross-network decisions.
    public func resetModel() { model.withLock { $0 = Model() } }

    static let requiredQuery = [
        "dev_token", "link_id", "app_event_type", "rdid", "id_type", "lat", "app_version", "os_version", "sdk_version",
        "timestamp",
    ]

    func handle(_ request: RecordedRequest) -> FakeReply {
        answer(request) { request in
            if request.body.isEmpty, request.headerValue("Content-Length") == nil,
                request.headerValue("Transfer-Encoding") == nil
            {
                note(request, "content_length_required", "a POST without a body must carry Content-Length: 0 (seed 000)")
                return .text(411, "Length Required")
            }
            for name in Self.requiredQuery where request.queryValue(name) == nil {
                note(request, "missing_parameter", "\(name) is required (seed 000)")
            }
            for name in ["User-Agent", "X-Forwarded-For"] where request.headerValue(name) == nil {
                note(request, "missing_header", "\(name) is required (seed 000)")
            }
            if request.path == GoogleConversionRequestBuilder.crossNetworkPath {
                return crossNetwork(request)
            }
            return conversion(request)
        }
    }

    private func crossNetwork(_ request: RecordedRequest) -> FakeReply {
        let adEventID = request.queryValue("ad_event_id")
        let attributed = request.queryValue("attributed")
        if attributed != "0" && attributed != "1" {
            note(request, "attributed_0_or_1", "attributed must be 0 or 1, got \(attributed ?? "nothing")")
        }
        if let adEventID {
            let (known, repeated) = model.withLock { model in
                (model.issuedSet.contains(adEventID), !model.crossNetworkReported.insert(adEventID).inserted)
            }
            if !known { note(request, "unknown_ad_event_id", "ad_event_id \(adEventID) was never issued") }
            if repeated { note(request, "repeated_cross_network", "ad_event_id \(adEventID) was already reported") }
        } else {
            note(request, "missing_parameter", "ad_event_id is required on cross_network (seed 000)")
        }
        // "Answer: a bare 200 with no body."
        return .empty(200)
    }

    private func conversion(_ request: RecordedRequest) -> FakeReply {
        let rdid = request.queryValue("rdid")?.uppercased() ?? ""
        let (answer, adEventID) = model.withLock { model -> (Answer, String?) in
            let answer = model.byRDID[rdid] ?? model.defaultAnswer
            guard case .affirmative = answer else { return (answer, nil) }
            model.counter += 1
            let id = Self.adEventID(model.counter)
            model.issued.append(id)
            model.issuedSet.insert(id)
            return (answer, id)
        }
        switch answer {
        case .negative:
            return .respond(200, json: #"{"ad_events":[],"errors":[],"attributed":false}"#)
        case .errors(let codes):
            return .respond(
                200, json: #"{"ad_events":[],"errors":[\#(codes.map(jsonString).joined(separator: ","))],"attributed":false}"#)
        case .status(let status):
            return .text(status, "fake google: status \(status)")
        case .affirmative(let campaignType):
            let stamp = Self.adEventTimestamp(before: request.queryValue("timestamp"))
            return .respond(
                200,
                json: #"{"ad_events":[\#(Self.adEvent(id: adEventID ?? "", campaignType: campaignType, timestamp: stamp))],"#
                    + #""errors":[],"attributed":true}"#)
        }
    }

    /// A 30-character URL-safe id like the document's `Q2owS0VRancwZHk0QlJDdXVMX2U1TQ`, unique per
    /// fake instance and reproducible run to run.
    static func adEventID(_ n: Int) -> String {
        let text = "fake-ad-event-\(n)"
        var id = Data(text.utf8).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
        while id.count < 30 { id += "A" }
        return id
    }

    /// One hour before the conversion's own timestamp (the click precedes the event), keeping its
    /// microseconds; the document's sample value when the request has none.
    static func adEventTimestamp(before timestamp: String?) -> String {
        guard let timestamp else { return "1432681913.123456" }
        let parts = timestamp.split(separator: ".", maxSplits: 1)
        guard let first = parts.first, let seconds = Int64(first), seconds > 3_600 else { return "1432681913.123456" }
        return parts.count > 1 ? "\(seconds - 3_600).\(parts[1])" : "\(seconds - 3_600)"
    }

    /// The document's sample ad event for a campaign type (UAC, Search, Display, Video).
    static func adEvent(id: String, campaignType: String, timestamp: String) -> String {
        var networkType = "Search"
        var networkSubtype = #""GoogleSearch""#
        var videoID = "null"
        var keyword = "null"
        var matchType = "null"
        var placement = "null"
        var adGroupID = "123456789"
        var creativeID = "123456789"
        switch campaignType {
        case "UAC":
            adGroupID = "null"
            creativeID = "null"
        case "Search":
            keyword = #""+space +birds""#
            matchType = #""b""#
        case "Display":
            networkType = "Display"
            networkSubtype = #""mGDN""#
            placement = #""mobile-app::2-343200656""#
        case "Video":
            networkType = "YouTube"
            networkSubtype = #""YouTubeVideos""#
            videoID = #""dQw4w9WgXcQ""#
        default: break
        }
        return #"{"ad_event_id":\#(jsonString(id)),"conversion_metric":"conversion","interaction_type":null,"#
            + #""campaign_type":\#(jsonString(campaignType)),"campaign_id":123456789,"campaign_name":"My App Campaign","#
            + #""ad_type":"ClickToDownload","external_customer_id":123456789,"location":21144,"#
            + #""network_type":"\#(networkType)","network_subtype":\#(networkSubtype),"video_id":\#(videoID),"#
            + #""keyword":\#(keyword),"match_type":\#(matchType),"placement":\#(placement),"#
            + #""ad_group_id":\#(adGroupID),"creative_id":\#(creativeID),"timestamp":\#(timestamp)}"#
    }
}
