import Crypto
import Foundation
import LedgerDomain

/// The API keys the server accepts: per app, the SHA-256 digests of its keys (never the keys).
///
/// Configuration is a JSON object from app id to one lowercase hex SHA-256 digest or a list of
/// them (two during a key rotation):
///
/// ```json
/// {"com.example.game": "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
///  "com.example.other": ["…", "…"]}
/// ```
///
/// given in `LEDGER_API_KEYS`, or in the file `LEDGER_API_KEYS_FILE` names. A digest is
/// `printf %s "$KEY" | sha256sum`. A presented key is hashed and compared with every digest in
/// constant time, so neither the comparison nor the configuration reveals a key.
public struct APIKeys: Sendable {
    /// The digests, with the app each belongs to.
    let entries: [(app: AppID, digest: [UInt8])]

    /// Keys from digests by app.
    /// - Throws: ``APIError`` (``APIError/Code/invalidAPIKeys``) for an invalid app id, a digest that is not 64 hex digits, or a
    ///   digest given to two apps (a key must belong to one app).
    public init(digests: [String: [String]]) throws(APIError) {
        var entries: [(app: AppID, digest: [UInt8])] = []
        var owners: [[UInt8]: String] = [:]
        for (app, hexes) in digests.sorted(by: { $0.key < $1.key }) {
            let appID: AppID
            do { appID = try AppID(app) } catch { throw .invalidApp(app, rule: error.rule) }
            for hex in hexes {
                guard let digest = Self.bytes(hex: hex) else { throw .invalidDigest(app: app) }
                if let owner = owners[digest] {
                    if owner == app { continue }
                    throw .digestOfTwoApps(owner, app)
                }
                owners[digest] = app
                entries.append((appID, digest))
            }
        }
        self.entries = entries
    }

    /// Keys from the JSON form described above.
    /// - Throws: ``APIError`` (``APIError/Code/invalidAPIKeys``).
    public init(json: Data) throws(APIError) {
        try self.init(digests: try Self.digests(json: json))
    }

    /// The digests by app of the JSON form described above, not yet checked.
    /// - Throws: ``APIError`` (``APIError/Code/invalidAPIKeys``) when it is not an object of strings or lists of strings.
    public static func digests(json: Data) throws(APIError) -> [String: [String]] {
        guard let object = try? JSONSerialization.jsonObject(with: json) as? [String: Any] else { throw .notAnObject }
        var digests: [String: [String]] = [:]
        for (app, value) in object {
            switch value {
            case let one as String: digests[app] = [one]
            case let many as [String]: digests[app] = many
            default: throw .invalidDigest(app: app)
            }
        }
        return digests
    }

    /// Keys from `LEDGER_API_KEYS` (JSON) or `LEDGER_API_KEYS_FILE` (a path to the JSON).
    /// - Throws: ``APIError`` (``APIError/Code/invalidAPIKeys``) when neither is set, the file cannot be read, or the JSON is invalid.
    public static func fromEnvironment(_ environment: [String: String]) throws(APIError) -> APIKeys {
        guard let digests = try digestsFromEnvironment(environment) else { throw .notConfigured }
        return try APIKeys(digests: digests)
    }

    /// The digests by app `LEDGER_API_KEYS` or `LEDGER_API_KEYS_FILE` holds, not yet checked; nil
    /// when neither is set (the apps file may hold every key).
    /// - Throws: ``APIError`` (``APIError/Code/invalidAPIKeys``) when the file cannot be read or the JSON is invalid.
    public static func digestsFromEnvironment(_ environment: [String: String]) throws(APIError) -> [String: [String]]? {
        if let inline = environment["LEDGER_API_KEYS"], !inline.isEmpty {
            return try digests(json: Data(inline.utf8))
        }
        if let path = environment["LEDGER_API_KEYS_FILE"], !path.isEmpty {
            guard let data = FileManager.default.contents(atPath: path) else { throw .unreadableFile(path) }
            return try digests(json: data)
        }
        return nil
    }

    /// No API keys anywhere: neither the variables nor the apps file give one.
    public static let noneConfigured: APIError = .notConfigured

    /// The app a presented key belongs to, or nil when it is no configured key.
    public func app(forKey key: String) -> AppID? {
        let presented = Array(SHA256.hash(data: Data(key.utf8)))
        var found: AppID?
        // Every digest is compared, whatever matched, in time independent of where bytes differ.
        for entry in entries {
            var difference: UInt8 = 0
            for (left, right) in zip(presented, entry.digest) { difference |= left ^ right }
            if difference == 0, found == nil { found = entry.app }
        }
        return found
    }

    /// The lowercase hex SHA-256 digest of `key`: what the configuration holds for it.
    public static func digest(of key: String) -> String {
        SHA256.hash(data: Data(key.utf8)).map { byte in (byte < 16 ? "0" : "") + String(byte, radix: 16) }.joined()
    }

    /// The apps that have at least one key.
    public var apps: [AppID] {
        var seen = Set<AppID>()
        return entries.compactMap { seen.insert($0.app).inserted ? $0.app : nil }
    }

    private static func bytes(hex: String) -> [UInt8]? {
        let digits = Array(hex.utf8)
        guard digits.count == 64 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(32)
        var index = 0
        while index < 64 {
            guard let high = nibble(digits[index]), let low = nibble(digits[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
            index += 2
        }
        return bytes
    }

    private static func nibble(_ digit: UInt8) -> UInt8? {
        switch digit {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): digit - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): digit - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): digit - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}

extension APIError {
    /// Neither `LEDGER_API_KEYS` nor `LEDGER_API_KEYS_FILE` is set.
    static let notConfigured = refusedConfiguration(
        .invalidAPIKeys, rule: "configured", "no API keys: set LEDGER_API_KEYS (JSON: app id → SHA-256 hex of the key) or LEDGER_API_KEYS_FILE")
    /// The file could not be read.
    static func unreadableFile(_ path: String) -> APIError {
        refusedConfiguration(.invalidAPIKeys, field: path, rule: "readable_file", "LEDGER_API_KEYS_FILE \(path) cannot be read")
    }
    /// The configuration is not a JSON object.
    static let notAnObject = refusedConfiguration(
        .invalidAPIKeys, rule: "json_object", "the API key configuration must be a JSON object: app id → SHA-256 hex digest (or a list of them)")
    /// An app id is not valid.
    static func invalidApp(_ app: String, rule: String) -> APIError {
        refusedConfiguration(.invalidAPIKeys, field: app, rule: rule,
                             "the API key configuration names an invalid app id '\(app)' [\(rule)]")
    }
    /// A digest of this app is not 64 hex digits (or not a string).
    static func invalidDigest(app: String) -> APIError {
        refusedConfiguration(.invalidAPIKeys, field: app, rule: "sha256_hex",
                             "the API key digest of app '\(app)' must be 64 hex digits (the SHA-256 of the key)")
    }
    /// One digest is given to both apps (named in order); the digest itself is not kept.
    static func digestOfTwoApps(_ first: String, _ second: String) -> APIError {
        refusedConfiguration(.invalidAPIKeys, field: second, rule: "one_app_per_key",
                             "apps '\(first)' and '\(second)' have the same API key digest: a key must belong to one app; give each app a key of its own")
    }
}
