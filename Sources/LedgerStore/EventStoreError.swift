import Foundation
import LedgerPostgres

/// The store's one error: why an append, a read, a scan or a seal was refused. Each case names
/// what to fix; nothing of a refused append is stored. Never quotes a key.
public enum EventStoreError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The stream is not at the version the append expected.
    case wrongExpectedVersion(stream: String, expected: ExpectedVersion, actual: Int64)
    /// An event id was already appended with other content, or to another stream.
    case eventIDConflict(eventID: UUID)
    /// An event of the batch breaks a rule. `index` is its place in the batch; `field` names the
    /// envelope field (`type`, `data`, `metadata`, `id`) or a payload path from the catalog.
    case invalidEvent(index: Int, eventType: String, field: String, rule: String, message: String)
    /// The stream id is empty or malformed.
    case invalidStreamID(String, rule: String)
    /// An append needs at least one event.
    case emptyBatch
    /// A conditional append's gate (``AppendCondition/function``) is not a plain identifier: the
    /// name is written into the statement, so nothing else may pass.
    case invalidConditionFunction(String)
    /// A log scan could not be made: a type name that breaks the rule, or a COPY row that could
    /// not be read (a bug, or a server that speaks another format).
    case logScan(reason: String)
    /// The named setting is not base64 of a 32-byte Ed25519 seal key.
    case invalidSealKey(setting: String)
    /// The seal key file cannot be read.
    case unreadableSealKeyFile(path: String)
    /// The newest seal is signed, and no key was given for the next.
    case sealKeyRequired(afterSeal: Int64)
    /// A checkpoint's named field is missing or malformed.
    case invalidCheckpoint(field: String)
    /// The read database (a streaming standby, `LEDGER_READ_DATABASE_URL`) had not replayed the
    /// asked `position` within the wait: it holds the log, gap-safe, through `readableThrough`.
    /// Retry later, or read from the primary.
    case readDatabaseBehind(position: Int64, readableThrough: Int64, waited: Duration)

    /// One line for an operator.
    public var description: String {
        switch self {
        case .wrongExpectedVersion(let stream, let expected, let actual):
            "stream \(stream) is at version \(actual), not the expected \(expected)"
        case .eventIDConflict(let id):
            "event id \(id) was already appended with other content or to another stream"
        case .invalidEvent(let index, let type, let field, let rule, let message):
            "event \(index) (\(type)): \(field): \(message) [\(rule)]"
        case .invalidStreamID(let id, let rule):
            "stream id \(id.isEmpty ? "(empty)" : id) is invalid [\(rule)]"
        case .emptyBatch:
            "an append needs at least one event"
        case .invalidConditionFunction:
            "an append condition's function name must be a plain identifier (a-z, 0-9, _)"
        case .logScan(let reason): "log scan: \(reason)"
        case .invalidSealKey(let name):
            "\(name) must be the base64 of a 32-byte Ed25519 key (make one with `ledger keys seal-key`)"
        case .unreadableSealKeyFile(let path): "LEDGER_SEAL_SIGNING_KEY_FILE \(path) cannot be read"
        case .sealKeyRequired(let number):
            "seal \(number) is signed: seal only with LEDGER_SEAL_SIGNING_KEY set (an unsigned seal would fail every later verify --public-key)"
        case .invalidCheckpoint(let field): "the checkpoint's \(field) is malformed"
        case .readDatabaseBehind(let position, let readable, let waited):
            "the read database holds the log through position \(readable), not yet \(position), after waiting \(waited.components.seconds * 1000 + waited.components.attoseconds / 1_000_000_000_000_000) ms [read_database_behind]"
        }
    }

    /// Custom SQLSTATEs raised by the append statements and the database's checks (schema/).
    enum SQLStates {
        static let wrongExpectedVersion = "LE001"
        static let eventIDConflict = "LE002"
        static let badBatch = "LE003"
        /// The database's check of an inserted event (schema/0016): its previous version is
        /// missing or its hash does not chain to it. From the store's own statements only when a
        /// concurrent append took the version before it: a lost race, as LE001.
        static let unchained = "LE005"
        /// The database's check of an inserted event's `recorded_at` (schema/0016): before its
        /// stream's previous event, or away from the server's clock by more than the tolerance.
        static let recordedAtRefused = "LE006"
        static let appendOnly = "LE100"
    }
}

/// Checks an event's payload against the catalog of event types before it is appended.
///
/// The store itself knows only envelopes; the domain's catalog knows what each type must hold.
/// Throw ``EventStoreError/invalidEvent(index:eventType:field:rule:message:)`` to refuse.
public typealias EventValidator = @Sendable (_ index: Int, _ event: NewEvent) throws -> Void
