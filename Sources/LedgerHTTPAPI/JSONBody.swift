import Foundation
import HTTPTypes
import Hummingbird
import LedgerDomain
import LedgerProviders

/// Request bodies as the API accepts them: `Content-Type: application/json` (a
/// `charset=utf-8` parameter allowed), strict UTF-8 JSON read by the providers' reader, no key
/// twice in an object at any depth.
enum JSONBody {
    /// The nesting the reader accepts.
    static let maxDepth = 512

    /// Whether `contentType` is `application/json`, its only parameter (if any) `charset=utf-8`;
    /// names and values compared case-insensitively.
    static func isJSON(contentType: String?) -> Bool {
        guard let contentType else { return false }
        let parts = contentType.split(separator: ";", omittingEmptySubsequences: false)
            .map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
        guard parts.first == "application/json" else { return false }
        for parameter in parts.dropFirst() where !parameter.isEmpty {
            let pair = parameter.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            guard pair.count == 2, pair[0] == "charset" else { return false }
            let quoted = pair[1].count >= 2 && pair[1].hasPrefix("\"") && pair[1].hasSuffix("\"")
            guard (quoted ? String(pair[1].dropFirst().dropLast()) : pair[1]) == "utf-8" else { return false }
        }
        return true
    }

    /// Refuses a request whose `Content-Type` is not JSON.
    /// - Throws: 415 ``APIError`` (`unsupported_media_type`, field `Content-Type`, rule `application_json`).
    static func requireJSON(_ request: Request) throws(APIError) {
        guard isJSON(contentType: request.headers[.contentType]) else {
            throw APIError(.unsupportedMediaType, code: .unsupportedMediaType, field: "Content-Type", rule: "application_json",
                           message: "The body must be JSON, sent with 'Content-Type: application/json'.")
        }
    }

    /// Reads `data` as one JSON value.
    /// - Throws: 400 ``APIError`` `malformed_json`: rule `json_syntax` for text that is not JSON,
    ///   rule `no_duplicate_keys` (field: the key's path, as `events[0].data.device`) for an
    ///   object that names a key twice.
    static func parse(_ data: Data) throws(APIError) -> JSONValue {
        let document: ProviderJSON
        do {
            document = try ProviderJSONReader.parse(data, limits: .init(maxDepth: maxDepth, maxBytes: nil, skipsByteOrderMark: true))
        } catch {
            throw syntaxError
        }
        return try value(of: document, at: "")
    }

    private static let syntaxError = APIError(.badRequest, code: .malformedJSON, field: "body", rule: "json_syntax",
                                              message: "The body is not valid JSON (UTF-8, at most \(maxDepth) levels deep).")

    /// `document` as a ``JSONValue``; `path` is where it sits (`""` for the root).
    private static func value(of document: ProviderJSON, at path: String) throws(APIError) -> JSONValue {
        switch document {
        case .null: return .null
        case .bool(let flag): return .bool(flag)
        case .string(let text): return .string(text)
        case .number(let text):
            guard let number = Decimal(string: text, locale: Locale(identifier: "en_US_POSIX")), !number.isNaN else {
                throw syntaxError
            }
            return .number(number)
        case .array(let items):
            var values: [JSONValue] = []
            values.reserveCapacity(items.count)
            for (index, item) in items.enumerated() { values.append(try value(of: item, at: "\(path)[\(index)]")) }
            return .array(values)
        case .object(let members):
            var object: [String: JSONValue] = [:]
            object.reserveCapacity(members.count)
            for member in members {
                let memberPath = path.isEmpty ? member.key : "\(path).\(member.key)"
                guard object[member.key] == nil else {
                    throw APIError(.badRequest, code: .malformedJSON, field: memberPath, rule: "no_duplicate_keys",
                                   message: "The key appears twice in one JSON object; each key may appear once.")
                }
                object[member.key] = try value(of: member.value, at: memberPath)
            }
            return .object(object)
        }
    }
}
