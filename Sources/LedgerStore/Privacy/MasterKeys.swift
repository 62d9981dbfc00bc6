import Crypto
import Foundation

/// The master keys that wrap the per-device data keys: the current one (new data keys are wrapped
/// by it) and, during a rotation, the previous ones (data keys they wrapped still open).
///
/// Configuration, in order:
/// 1. `LEDGER_MASTER_KEY`: base64 of 32 random bytes (`openssl rand -base64 32`).
/// 2. `LEDGER_MASTER_KEY_FILE`: a file holding that base64 text.
/// 3. Development only, when neither is set and the database is a private cluster (reached over
///    the Unix socket of a cluster folder, by default `.ledger/postgres`): the file `master.key` in
///    that cluster's folder, generated on first use with mode 0600.
///
/// `LEDGER_MASTER_KEY_PREVIOUS` (comma-separated base64 keys) lists keys being rotated away from.
/// Keys are never logged or printed; a key is named only by its ``fingerprint(of:)``.
public struct MasterKeys: Sendable {
    // Raw bytes: `SymmetricKey` is not `Sendable`; a key is rebuilt from them when used.
    private let currentBytes: Data
    private let previousBytes: [String: Data]
    /// The current key's fingerprint.
    public let currentID: String

    /// The key new data keys are wrapped by.
    public var current: SymmetricKey { SymmetricKey(data: currentBytes) }
    /// Older keys, by fingerprint, that may still unwrap data keys during a rotation.
    public var previous: [String: SymmetricKey] { previousBytes.mapValues { SymmetricKey(data: $0) } }

    /// Master keys from explicit keys (tests, tools).
    public init(current: SymmetricKey, previous: [SymmetricKey] = []) {
        self.currentBytes = current.withUnsafeBytes { Data($0) }
        self.currentID = Self.fingerprint(of: current)
        self.previousBytes = Dictionary(previous.map { key in (Self.fingerprint(of: key), key.withUnsafeBytes { Data($0) }) },
                                        uniquingKeysWith: { first, _ in first })
    }

    /// Master keys from their base64 texts (as `LEDGER_MASTER_KEY` holds them).
    /// - Throws: ``PrivacyError/masterKeyMalformed(source:)`` when one is not base64 of 32 bytes.
    public init(base64 current: String, previous: [String] = []) throws(PrivacyError) {
        var older: [SymmetricKey] = []
        for text in previous { older.append(try Self.parse(text, source: "a previous master key")) }
        self.init(current: try Self.parse(current, source: "the master key"), previous: older)
    }

    /// The key with this fingerprint, if configured.
    public func key(id: String) -> SymmetricKey? {
        id == currentID ? current : previousBytes[id].map { SymmetricKey(data: $0) }
    }

    /// A key's public name: `mk-` and the first 8 bytes of SHA-256("ledger-master-key" || key), in
    /// hex. It tells keys apart without revealing them.
    public static func fingerprint(of key: SymmetricKey) -> String {
        var hasher = SHA256()
        hasher.update(data: Data("ledger-master-key".utf8))
        key.withUnsafeBytes { hasher.update(bufferPointer: $0) }
        return "mk-" + Hex.text(hasher.finalize().prefix(8))
    }

    /// A key from its base64 text; `source` names where it came from in errors.
    public static func parse(_ text: String, source: String) throws(PrivacyError) -> SymmetricKey {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard let bytes = Data(base64Encoded: trimmed), bytes.count == 32 else { throw .masterKeyMalformed(source: source) }
        return SymmetricKey(data: bytes)
    }

    /// A new random key as base64 text (what `ledger keys generate` prints).
    public static func generateText() -> String {
        SymmetricKey(size: .bits256).withUnsafeBytes { Data($0).base64EncodedString() }
    }

    /// Resolves the keys from the environment (see the type's documentation).
    ///
    /// - Parameter conninfo: the database's conninfo; the development key file is used only when
    ///   it is the private cluster's socket.
    public static func resolve(environment: [String: String] = ProcessInfo.processInfo.environment,
                               conninfo: String) throws(PrivacyError) -> MasterKeys {
        var previous: [SymmetricKey] = []
        if let list = environment["LEDGER_MASTER_KEY_PREVIOUS"], !list.isEmpty {
            for part in list.split(separator: ",") {
                previous.append(try parse(String(part), source: "LEDGER_MASTER_KEY_PREVIOUS"))
            }
        }
        if let text = environment["LEDGER_MASTER_KEY"], !text.isEmpty {
            return MasterKeys(current: try parse(text, source: "LEDGER_MASTER_KEY"), previous: previous)
        }
        if let path = environment["LEDGER_MASTER_KEY_FILE"], !path.isEmpty {
            guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
                throw .masterKeyMalformed(source: "LEDGER_MASTER_KEY_FILE (\(path) cannot be read)")
            }
            return MasterKeys(current: try parse(text, source: "LEDGER_MASTER_KEY_FILE"), previous: previous)
        }
        guard let clusterDirectory = privateClusterDirectory(conninfo: conninfo, environment: environment) else {
            throw .masterKeyMissing
        }
        return MasterKeys(current: try developmentKey(in: clusterDirectory), previous: previous)
    }

    /// The folder of the private cluster `conninfo` reaches, or nil when it reaches another server:
    /// a socket folder `<dir>/run` whose `<dir>` holds a cluster (`data/`), or the short socket
    /// folder `/tmp/ledger-pg-…` of the default cluster in a deep checkout.
    static func privateClusterDirectory(conninfo: String, environment: [String: String]) -> String? {
        guard conninfo.hasPrefix("host=/") else { return nil }
        let host = String(conninfo.dropFirst("host=".count).prefix { $0 != " " })
        if host.hasSuffix("/run") {
            let directory = String(host.dropLast("/run".count))
            if FileManager.default.fileExists(atPath: directory + "/data") { return directory }
        }
        if host.hasPrefix("/tmp/ledger-pg-") { return developmentClusterDirectory(environment: environment) }
        return nil
    }

    /// `$LEDGER_CLUSTER_DIR`, else `.ledger/postgres` under the working folder (as the private cluster).
    static func developmentClusterDirectory(environment: [String: String]) -> String {
        let configured = environment["LEDGER_CLUSTER_DIR"].flatMap { $0.isEmpty ? nil : $0 }
            ?? FileManager.default.currentDirectoryPath + "/.ledger/postgres"
        return URL(fileURLWithPath: configured).standardizedFileURL.path
    }

    /// The development key file's key, generated (mode 0600) if missing. Created under a
    /// temporary name and linked into place, so racing processes all end up with the same key.
    static func developmentKey(in directory: String) throws(PrivacyError) -> SymmetricKey {
        let path = directory + "/master.key"
        if let text = try? String(contentsOfFile: path, encoding: .utf8) { return try parse(text, source: path) }
        try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let temporary = path + ".\(getpid()).\(UUID().uuidString)"
        let created = FileManager.default.createFile(
            atPath: temporary, contents: Data((generateText() + "\n").utf8), attributes: [.posixPermissions: 0o600])
        if created {
            _ = link(temporary, path)  // fails harmlessly when another process won the race
            unlink(temporary)
        }
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
            throw .masterKeyMalformed(source: "\(path) (cannot be created)")
        }
        return try parse(text, source: path)
    }
}
