import Crypto
import Foundation

/// One numbered plain-SQL file of `schema/`, such as `0001_event_store.sql`.
public struct Migration: Sendable, Hashable {
    /// The number before the first `_` (applied in ascending order).
    public var version: Int
    /// The rest of the file name, without `.sql`.
    public var name: String
    /// The file's SQL.
    public var sql: String
    /// The SHA-256 of the file's bytes, in hex: an applied file must never change.
    public var checksum: String

    /// The file name this migration came from.
    public var fileName: String { String(format: "%04d_%@.sql", version, name) }

    public init(version: Int, name: String, sql: String) {
        self.version = version
        self.name = name
        self.sql = sql
        self.checksum = SHA256.hash(data: Data(sql.utf8)).map { String(format: "%02x", $0) }.joined()
    }

    /// Reads every `*.sql` file of a folder, sorted by version.
    /// - Throws: ``MigrationError`` for a missing folder, a badly named file, or a repeated number.
    public static func load(directory: String) throws(MigrationError) -> [Migration] {
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: directory)
        } catch {
            throw .schemaFolderMissing(path: directory)
        }
        var migrations: [Migration] = []
        for fileName in names.sorted() where fileName.hasSuffix(".sql") {
            let stem = fileName.dropLast(4)
            guard let underscore = stem.firstIndex(of: "_"), let version = Int(stem[..<underscore]), version > 0,
                stem[..<underscore].allSatisfy(\.isASCII)
            else {
                throw .badFileName(fileName: fileName)
            }
            guard let data = FileManager.default.contents(atPath: directory + "/" + fileName),
                let sql = String(data: data, encoding: .utf8)
            else { throw .unreadable(fileName: fileName) }
            if let twin = migrations.first(where: { $0.version == version }) {
                throw .duplicateVersion(version: version, files: [twin.fileName, fileName])
            }
            migrations.append(Migration(version: version, name: String(stem[stem.index(after: underscore)...]), sql: sql))
        }
        return migrations.sorted { $0.version < $1.version }
    }

    /// The `schema/` folder: `$LEDGER_SCHEMA_DIR`, else `./schema` when it holds SQL files, else the
    /// one beside this source tree (for `swift run` and `swift test` from any working folder).
    public static func defaultDirectory(environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        if let configured = environment["LEDGER_SCHEMA_DIR"], !configured.isEmpty { return configured }
        let local = FileManager.default.currentDirectoryPath + "/schema"
        if (try? FileManager.default.contentsOfDirectory(atPath: local))?.contains(where: { $0.hasSuffix(".sql") }) == true {
            return local
        }
        return URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("schema").path
    }
}

/// Why migrations could not be read or applied. Each reads as one line naming the file.
public enum MigrationError: Error, Sendable, CustomStringConvertible {
    case schemaFolderMissing(path: String)
    case badFileName(fileName: String)
    case unreadable(fileName: String)
    case duplicateVersion(version: Int, files: [String])
    /// A file already applied has changed since: fix forward with a new file instead.
    case checksumMismatch(fileName: String, applied: String, onDisk: String)
    /// The database records a migration whose file is gone.
    case appliedFileMissing(version: Int, name: String)
    /// A file failed to apply; its transaction was rolled back, so nothing of it stays.
    case failed(fileName: String, reason: String, sqlState: String?)

    public var description: String {
        switch self {
        case .schemaFolderMissing(let path):
            "schema folder \(path) not found (set LEDGER_SCHEMA_DIR or run from the project folder)"
        case .badFileName(let fileName):
            "schema file \(fileName) is not named NNNN_name.sql with a number above 0"
        case .unreadable(let fileName): "schema file \(fileName) cannot be read as UTF-8"
        case .duplicateVersion(let version, let files):
            "schema files \(files.joined(separator: " and ")) share number \(version)"
        case .checksumMismatch(let fileName, let applied, let onDisk):
            "schema file \(fileName) changed after it was applied (applied sha256 \(applied.prefix(12))…, "
                + "now \(onDisk.prefix(12))…); never edit an applied migration, add a new one"
        case .appliedFileMissing(let version, let name):
            "the database has migration \(version) (\(name)) applied but its file is missing from schema/"
        case .failed(let fileName, let reason, let sqlState):
            "schema file \(fileName) failed to apply\(sqlState.map { " (SQLSTATE \($0))" } ?? ""): \(reason); "
                + "nothing of it was applied"
        }
    }
}
