import Foundation
import LedgerDomain

/// The deep link data of a Branch session: the `data` of the `v1/open` answer, parsed.
///
/// Named fields are the ones the Branch v1/open server-to-server guide explains ("a few key
/// parameters to be aware") plus the link analytics tags `~campaign`, `~channel` and `~feature`;
/// every other key (`$og_title`, `~tags`, `~id`, custom keys) is kept in ``other`` as received.
/// Encodes with Branch's own keys, flat.
public struct BranchSessionData: Sendable, Hashable, Codable {
    /// `+clicked_branch_link`: the session came from a Branch link.
    public var clickedBranchLink: Bool?
    /// `+is_first_session`: Branch never saw this device install the app before.
    public var isFirstSession: Bool?
    /// `+match_guaranteed`: matched to the click with certainty (not for SAN-attributed installs).
    public var matchGuaranteed: Bool?
    /// `+click_timestamp`: the link click, in Unix seconds.
    public var clickTimestamp: Int64?
    /// `~campaign`.
    public var campaign: String?
    /// `~channel`.
    public var channel: String?
    /// `~feature`.
    public var feature: String?
    /// `$canonical_url`: a web URL for deep link routing.
    public var canonicalURL: String?
    /// `$deeplink_path`: a URI path for deep link routing.
    public var deeplinkPath: String?
    /// `+non_branch_link`: the non-Branch link (e.g. a Universal Link) that opened the app.
    public var nonBranchLink: String?
    /// Every other key, as received.
    public var other: [String: JSONValue]

    /// The click time as a `Date`, from ``clickTimestamp``.
    public var clickDate: Date? { clickTimestamp.map { Date(timeIntervalSince1970: TimeInterval($0)) } }

    /// Creates empty link data; set the fields as properties.
    public init(other: [String: JSONValue] = [:]) { self.other = other }

    static let boolKeys = ["+clicked_branch_link", "+is_first_session", "+match_guaranteed"]
    static let stringKeys = ["~campaign", "~channel", "~feature", "$canonical_url", "$deeplink_path", "+non_branch_link"]
    static let knownKeys = Set(boolKeys + stringKeys + ["+click_timestamp"])

    init(parsing members: [String: ProviderJSON]) throws(ProviderError) {
        self.init()
        clickedBranchLink = try BranchParsing.bool(members["+clicked_branch_link"], field: "data.+clicked_branch_link")
        isFirstSession = try BranchParsing.bool(members["+is_first_session"], field: "data.+is_first_session")
        matchGuaranteed = try BranchParsing.bool(members["+match_guaranteed"], field: "data.+match_guaranteed")
        clickTimestamp = try BranchParsing.integer(members["+click_timestamp"], field: "data.+click_timestamp")
        campaign = try BranchParsing.string(members["~campaign"], field: "data.~campaign")
        channel = try BranchParsing.string(members["~channel"], field: "data.~channel")
        feature = try BranchParsing.string(members["~feature"], field: "data.~feature")
        canonicalURL = try BranchParsing.string(members["$canonical_url"], field: "data.$canonical_url")
        deeplinkPath = try BranchParsing.string(members["$deeplink_path"], field: "data.$deeplink_path")
        nonBranchLink = try BranchParsing.string(members["+non_branch_link"], field: "data.+non_branch_link")
        other = try BranchParsing.others(members, excluding: Self.knownKeys, prefix: "data.")
    }

    private var boolValues: [Bool?] { [clickedBranchLink, isFirstSession, matchGuaranteed] }
    private var stringValues: [String?] { [campaign, channel, feature, canonicalURL, deeplinkPath, nonBranchLink] }

    /// Decodes the stored form (Branch's keys, flat).
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: FieldCodingKey.self)
        self.init()
        let bools = try Self.boolKeys.map { try container.decodeIfPresent(Bool.self, forKey: FieldCodingKey($0)) }
        (clickedBranchLink, isFirstSession, matchGuaranteed) = (bools[0], bools[1], bools[2])
        clickTimestamp = try container.decodeIfPresent(Int64.self, forKey: FieldCodingKey("+click_timestamp"))
        let strings = try Self.stringKeys.map { try container.decodeIfPresent(String.self, forKey: FieldCodingKey($0)) }
        (campaign, channel, feature) = (strings[0], strings[1], strings[2])
        (canonicalURL, deeplinkPath, nonBranchLink) = (strings[3], strings[4], strings[5])
        for key in container.allKeys where !Self.knownKeys.contains(key.stringValue) {
            other[key.stringValue] = try container.decode(JSONValue.self, forKey: key)
        }
    }

    /// Encodes with Branch's keys, flat; ``other`` keys at the same level.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: FieldCodingKey.self)
        for (key, value) in other { try container.encode(value, forKey: FieldCodingKey(key)) }
        for (key, value) in zip(Self.boolKeys, boolValues) {
            try container.encodeIfPresent(value, forKey: FieldCodingKey(key))
        }
        try container.encodeIfPresent(clickTimestamp, forKey: FieldCodingKey("+click_timestamp"))
        for (key, value) in zip(Self.stringKeys, stringValues) {
            try container.encodeIfPresent(value, forKey: FieldCodingKey(key))
        }
    }
}
