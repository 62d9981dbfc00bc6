import Foundation

/// The id of one stream of the event store, e.g. `device-com.example.game/4f1c…` or `send-<uuid>`.
///
/// Syntax (checked by the store before every append): an ASCII letter or digit, then up to 255
/// ASCII letters, digits, `.`, `_`, `:`, `-` or `/`. The part before the first `-` is the stream's
/// ``category``; the store indexes it so projections can read one category in order.
///
/// Per-app streams (`device-`, `decision-`, `skan-`) are `<category>-<app>/<local>`: app ids and
/// the local parts never hold `/`, so the first `/` ends the app id and no two apps can name the
/// same stream (``tenant``).
public struct StreamID: ValidatedString, Comparable {
    /// The stream id text.
    public let rawValue: String

    /// The longest stream id the store accepts.
    public static let maximumLength = 256

    /// Validates `rawValue` against the store's stream-id syntax.
    /// - Throws: `stream_id_syntax`.
    public init(_ rawValue: String) throws(RuleViolation) {
        guard let first = rawValue.unicodeScalars.first, first.isASCII,
            first.properties.isAlphabetic || ("0"..."9").contains(first),
            rawValue.unicodeScalars.count <= Self.maximumLength,
            rawValue.unicodeScalars.allSatisfy({ $0 == Self.tenantSeparator || Self.isStreamSafe($0) })
        else {
            throw RuleViolation(
                rule: "stream_id_syntax",
                message: "A stream id starts with an ASCII letter or digit, followed by up to 255 ASCII letters, digits, '.', '_', ':', '-' or '/'.")
        }
        self.rawValue = rawValue
    }

    /// The category: the text before the first `-` (the whole id when it has none, as PostgreSQL's
    /// `split_part` answers).
    public var category: String {
        rawValue.split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? rawValue
    }

    /// The send id of a `send-<uuid>` stream, or `nil` for any other stream.
    public var sendID: UUID? {
        guard category == StreamCategory.send.rawValue else { return nil }
        return UUID(uuidString: String(rawValue.dropFirst(StreamCategory.send.rawValue.count + 1)))
    }

    /// The stream of one device of one app: `device-<app>/<device>`. Every device event goes here.
    /// - Throws: `stream_safe_characters` when the device id holds a character a stream id cannot.
    public static func device(app: AppID, device: DeviceID) throws(RuleViolation) -> StreamID {
        try perDevice(.device, app: app, device: device)
    }

    /// The stream of one send's lifecycle: `send-<uuid>` (the UUID in lowercase, as PostgreSQL
    /// prints it).
    public static func send(id: UUID) -> StreamID {
        StreamID(unchecked: "send-" + id.uuidString.lowercased())
    }

    /// The stream of the attribution decisions about one device: `decision-<app>/<device>`. Kept
    /// apart from the device stream so deciding never races the device's own appends.
    /// - Throws: `stream_safe_characters` when the device id holds a character a stream id cannot.
    public static func decisions(app: AppID, device: DeviceID) throws(RuleViolation) -> StreamID {
        try perDevice(.decision, app: app, device: device)
    }

    /// The stream of the SKAN postbacks of one app-install transaction: `skan-<app>/<transaction-id>`
    /// (Apple's `transaction-id`, shared by a transaction's up to three postbacks).
    /// - Throws: `stream_safe_characters` when the transaction id is empty or holds a character a
    ///   stream id component cannot.
    public static func skanPostbacks(app: AppID, transactionID: String) throws(RuleViolation) -> StreamID {
        guard !transactionID.isEmpty, isStreamSafe(transactionID) else {
            throw RuleViolation(
                rule: "stream_safe_characters",
                message: "A SKAN transaction id may hold only ASCII letters, digits, '.', '_', ':' and '-'.")
        }
        return try perApp(.skan, app: app, local: transactionID)
    }

    /// The stream of one AdAttributionKit postback identifier of an app:
    /// `skan-<app>/aak/<postback-identifier>` (the up to three postbacks of one conversion share
    /// it). The second `/` keeps it apart from every SKAN transaction's stream, whose id cannot hold one.
    /// - Throws: `stream_safe_characters` when the identifier is empty or not stream-safe.
    public static func aakPostbacks(app: AppID, postbackIdentifier: String) throws(RuleViolation) -> StreamID {
        guard !postbackIdentifier.isEmpty, isStreamSafe(postbackIdentifier) else {
            throw RuleViolation(
                rule: "stream_safe_characters",
                message: "A postback identifier may hold only ASCII letters, digits, '.', '_', ':' and '-'.")
        }
        return try StreamID("\(StreamCategory.skan.rawValue)-\(app.rawValue)/aak/\(postbackIdentifier)")
    }

    /// The stream of the SKAN postbacks an app sent that broke the postback schema:
    /// `skan-<app>/rejected/<digest>` (`digest`: hex digits naming the refused input). The second
    /// `/` keeps it apart from every transaction's stream, whose id cannot hold one.
    /// - Throws: `stream_safe_characters` when `digest` is not stream-safe.
    public static func refusedSKANPostbacks(app: AppID, digest: String) throws(RuleViolation) -> StreamID {
        guard isStreamSafe(digest) else {
            throw RuleViolation(rule: "stream_safe_characters", message: "A digest holds only ASCII letters and digits.")
        }
        return try StreamID("\(StreamCategory.skan.rawValue)-\(app.rawValue)/rejected/\(digest)")
    }

    /// The app and the app-local part of a per-app stream id (`device-`, `decision-` or `skan-`,
    /// then `<app>/<local>`); nil for any other stream, and for per-app streams written before
    /// the `/` separator (see ``isLegacyPerApp``).
    ///
    /// No app id may hold `/`, so the first `/` ends the app id; device ids and transaction ids
    /// hold no `/` either, so two different (app, device) or (app, transaction) pairs never name
    /// the same stream.
    public var tenant: (app: AppID, local: String)? {
        let text = rawValue.unicodeScalars
        guard let dash = text.firstIndex(of: "-"), let category = StreamCategory(rawValue: String(text[..<dash])),
            category != .send
        else { return nil }
        let rest = text[text.index(after: dash)...]
        guard let slash = rest.firstIndex(of: Self.tenantSeparator),
            let app = try? AppID(String(rest[..<slash]))
        else { return nil }
        let local = String(rest[rest.index(after: slash)...])
        guard !local.isEmpty else { return nil }
        return (app, local)
    }

    /// Whether this is a per-app stream (`device-`, `decision-` or `skan-`) named the way the
    /// ledger named them before the `/` separator (`device-<app>-<device>`): such a name does not
    /// say where the app id ends, so the ledger never addresses these streams by app.
    /// `ledger tenancy check` lists them.
    public var isLegacyPerApp: Bool {
        guard let category = StreamCategory(rawValue: category), category != .send,
            !rawValue.hasPrefix(Self.skanModelPrefix)
        else { return false }
        return !rawValue.unicodeScalars.contains(Self.tenantSeparator)
    }

    /// The prefix of an app's SKAN conversion model stream, `skan-model-<app-id>`: a fixed word
    /// before the app, so it names one app without a `/`.
    public static let skanModelPrefix = "skan-model-"

    /// Orders stream ids by their text.
    public static func < (lhs: StreamID, rhs: StreamID) -> Bool { lhs.rawValue < rhs.rawValue }

    /// The character between the app id and the app-local part of a per-app stream id: one no
    /// app id, device id or transaction id may hold.
    public static let tenantSeparator: Unicode.Scalar = "/"

    /// Whether every character of `text` may appear in an app id or an app-local part of a stream id.
    static func isStreamSafe(_ text: String) -> Bool {
        text.unicodeScalars.allSatisfy(isStreamSafe)
    }

    static func isStreamSafe(_ scalar: Unicode.Scalar) -> Bool {
        scalar.isASCII && (scalar.properties.isAlphabetic || ("0"..."9").contains(scalar) || "._:-".unicodeScalars.contains(scalar))
    }

    private init(unchecked rawValue: String) { self.rawValue = rawValue }

    private static func perDevice(_ category: StreamCategory, app: AppID, device: DeviceID) throws(RuleViolation) -> StreamID {
        guard isStreamSafe(device.rawValue) else {
            throw RuleViolation(
                rule: "stream_safe_characters",
                message: "This device id holds characters a stream id cannot ('.', '_', ':', '-', ASCII letters and digits only).")
        }
        // AppID ≤ 100 and DeviceID ≤ 128 keep every per-device stream id under 256 characters.
        return StreamID(unchecked: "\(category.rawValue)-\(app.rawValue)/\(device.rawValue)")
    }

    private static func perApp(_ category: StreamCategory, app: AppID, local: String) throws(RuleViolation) -> StreamID {
        guard isStreamSafe(local) else {
            throw RuleViolation(rule: "stream_safe_characters",
                                message: "The app-local part of a stream id may hold only ASCII letters, digits, '.', '_', ':' and '-'.")
        }
        return try StreamID("\(category.rawValue)-\(app.rawValue)/\(local)")
    }
}

/// The stream categories the ledger writes (the part of a stream id before the first `-`).
public enum StreamCategory: String, LedgerEnum {
    /// `device-<app>/<device>`: everything one device of one app did, and its erasure.
    case device
    /// `send-<uuid>`: one send's request, attempts, answers and outcome.
    case send
    /// `decision-<app>/<device>`: the attribution decisions about one device.
    case decision
    /// `skan-<app>/<transaction-id>`: the SKAN postbacks of one install transaction (and
    /// `skan-<app>/rejected/<digest>`, the app's postbacks that broke the schema).
    case skan
}
