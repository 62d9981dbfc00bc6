import Foundation

/// The id of one stream of the event store, e.g. `device-com.example.game-4f1c…` or `send-<uuid>`.
///
/// Syntax (the store's `events_stream_id_valid` constraint): an ASCII letter or digit, then up to
/// 255 ASCII letters, digits, `.`, `_`, `:` or `-`. The part before the first `-` is the stream's
/// ``category``; the store indexes it so projections can read one category in order.
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
            rawValue.unicodeScalars.count <= Self.maximumLength, Self.isStreamSafe(rawValue)
        else {
            throw RuleViolation(
                rule: "stream_id_syntax",
                message: "A stream id starts with an ASCII letter or digit, followed by up to 255 ASCII letters, digits, '.', '_', ':' or '-'.")
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

    /// The stream of one device of one app: `device-<app>-<device>`. Every device event goes here.
    /// - Throws: `stream_safe_characters` when the device id holds a character a stream id cannot.
    public static func device(app: AppID, device: DeviceID) throws(RuleViolation) -> StreamID {
        try perDevice(.device, app: app, device: device)
    }

    /// The stream of one send's lifecycle: `send-<uuid>` (the UUID in lowercase, as PostgreSQL
    /// prints it).
    public static func send(id: UUID) -> StreamID {
        StreamID(unchecked: "send-" + id.uuidString.lowercased())
    }

    /// The stream of the attribution decisions about one device: `decision-<app>-<device>`. Kept
    /// apart from the device stream so deciding never races the device's own appends.
    /// - Throws: `stream_safe_characters` when the device id holds a character a stream id cannot.
    public static func decisions(app: AppID, device: DeviceID) throws(RuleViolation) -> StreamID {
        try perDevice(.decision, app: app, device: device)
    }

    /// The stream of the SKAN postbacks of one app-install transaction: `skan-<app>-<transaction-id>`
    /// (Apple's `transaction-id`, shared by a transaction's up to three postbacks).
    /// - Throws: `stream_safe_characters` or `stream_id_syntax` when the transaction id cannot be
    ///   part of a stream id.
    public static func skanPostbacks(app: AppID, transactionID: String) throws(RuleViolation) -> StreamID {
        guard !transactionID.isEmpty, isStreamSafe(transactionID) else {
            throw RuleViolation(
                rule: "stream_safe_characters",
                message: "A SKAN transaction id may hold only ASCII letters, digits, '.', '_', ':' and '-'.")
        }
        return try StreamID("\(StreamCategory.skan.rawValue)-\(app.rawValue)-\(transactionID)")
    }

    /// Orders stream ids by their text.
    public static func < (lhs: StreamID, rhs: StreamID) -> Bool { lhs.rawValue < rhs.rawValue }

    /// Whether every character of `text` may appear in a stream id.
    static func isStreamSafe(_ text: String) -> Bool {
        text.unicodeScalars.allSatisfy { scalar in
            scalar.isASCII && (scalar.properties.isAlphabetic || ("0"..."9").contains(scalar) || "._:-".unicodeScalars.contains(scalar))
        }
    }

    private init(unchecked rawValue: String) { self.rawValue = rawValue }

    private static func perDevice(_ category: StreamCategory, app: AppID, device: DeviceID) throws(RuleViolation) -> StreamID {
        guard isStreamSafe(device.rawValue) else {
            throw RuleViolation(
                rule: "stream_safe_characters",
                message: "This device id holds characters a stream id cannot ('.', '_', ':', '-', ASCII letters and digits only).")
        }
        // AppID ≤ 100 and DeviceID ≤ 128 keep every per-device stream id under 256 characters.
        return StreamID(unchecked: "\(category.rawValue)-\(app.rawValue)-\(device.rawValue)")
    }
}

/// The stream categories the ledger writes (the part of a stream id before the first `-`).
public enum StreamCategory: String, LedgerEnum {
    /// `device-<app>-<device>`: everything one device of one app did, and its erasure.
    case device
    /// `send-<uuid>`: one send's request, attempts, answers and outcome.
    case send
    /// `decision-<app>-<device>`: the attribution decisions about one device.
    case decision
    /// `skan-<app>-<transaction-id>`: the SKAN postbacks of one install transaction.
    case skan
}
