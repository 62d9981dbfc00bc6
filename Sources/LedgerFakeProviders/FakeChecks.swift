import Foundation

/// The small format checks the fakes make on what they receive. Written here, apart from the
/// ledger's own validators in `LedgerProviders`, so that a fault in those cannot hide itself by
/// making the fakes lenient in the same way.
enum FakeChecks {
    /// 8-4-4-4-12 hexadecimal digits, either case (the all-zero UUID included).
    static func isUUID(_ text: String) -> Bool {
        let groups = text.split(separator: "-", omittingEmptySubsequences: false)
        guard groups.map(\.count) == [8, 4, 4, 4, 12] else { return false }
        return groups.allSatisfy { $0.allSatisfy(\.isHexDigit) }
    }

    /// Empty or only whitespace.
    static func isBlank(_ text: String?) -> Bool { text?.allSatisfy(\.isWhitespace) ?? true }

    /// Standard Base64 (`A–Z a–z 0–9 + /`), `=` padding only at the end (at most two), nothing
    /// else — no whitespace anywhere. Unpadded text is accepted (the Apple AdServices attribution
    /// API's sample is unpadded).
    static func isBase64(_ text: String) -> Bool {
        guard !text.isEmpty else { return false }
        let bytes = Array(text.utf8)
        let padding = bytes.reversed().prefix { $0 == UInt8(ascii: "=") }.count
        guard padding <= 2 else { return false }
        let body = bytes.dropLast(padding)
        guard !body.isEmpty else { return false }
        if padding > 0, bytes.count % 4 != 0 { return false }
        return body.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "+"), UInt8(ascii: "/"):
                true
            default: false
            }
        }
    }

    /// An IPv4 (dotted quad) or IPv6 literal, as `inet_pton` reads it; `nil` otherwise.
    static func ipBytes(_ text: String) -> [UInt8]? {
        var v4 = in_addr()
        if text.withCString({ inet_pton(AF_INET, $0, &v4) }) == 1 {
            return withUnsafeBytes(of: &v4) { Array($0) }
        }
        var v6 = in6_addr()
        if text.withCString({ inet_pton(AF_INET6, $0, &v6) }) == 1 {
            return withUnsafeBytes(of: &v6) { Array($0) }
        }
        return nil
    }

    /// An IP literal that can be a device's public address: not unspecified, loopback, private
    /// (RFC 1918), carrier-grade NAT, link-local, multicast or unique-local. (Documentation ranges
    /// such as 203.0.113.0/24 pass: tests use them as devices' addresses.)
    static func isPublicIP(_ text: String) -> Bool {
        guard var bytes = ipBytes(text) else { return false }
        if bytes.count == 16, bytes.prefix(10).allSatisfy({ $0 == 0 }), bytes[10] == 0xFF, bytes[11] == 0xFF {
            bytes = Array(bytes[12...])
        }
        if bytes.count == 4 {
            switch (bytes[0], bytes[1]) {
            case (0, _), (10, _), (127, _), (169, 254), (192, 168), (172, 16...31), (100, 64...127), (224...255, _): return false
            default: return true
            }
        }
        if bytes.prefix(15).allSatisfy({ $0 == 0 }) { return false }  // :: and ::1
        if bytes[0] == 0xFF || bytes[0] & 0xFE == 0xFC || (bytes[0] == 0xFE && bytes[1] & 0xC0 == 0x80) { return false }
        return true
    }

    /// Whole digits, with an optional leading `-`.
    static func isInteger(_ text: String) -> Bool {
        let digits = text.hasPrefix("-") ? text.dropFirst() : Substring(text)
        return !digits.isEmpty && digits.allSatisfy { $0.isASCII && $0.isNumber }
    }

    /// A decimal written with an optional `-`, digits, and an optional `.` and digits: no
    /// exponent, no grouping, no sign `+`.
    static func isPlainDecimal(_ text: String) -> Bool {
        let unsigned = text.hasPrefix("-") ? text.dropFirst() : Substring(text)
        let parts = unsigned.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        guard let whole = parts.first, !whole.isEmpty, whole.allSatisfy({ $0.isASCII && $0.isNumber }) else { return false }
        if parts.count == 2 { return !parts[1].isEmpty && parts[1].allSatisfy { $0.isASCII && $0.isNumber } }
        return true
    }

    /// Every number token of a JSON text outside strings, as written.
    static func jsonNumberTokens(_ text: String) -> [String] {
        var tokens: [String] = []
        var inString = false
        var escaped = false
        var current = ""
        for character in text {
            if inString {
                if escaped { escaped = false } else if character == "\\" { escaped = true } else if character == "\"" { inString = false }
                continue
            }
            if character == "\"" {
                inString = true
            } else if character.isNumber || "+-.eE".contains(character) {
                current.append(character)
                continue
            }
            if !current.isEmpty {
                tokens.append(current)
                current = ""
            }
        }
        if !current.isEmpty { tokens.append(current) }
        return tokens
    }

    /// An absolute `http(s)` URL with a host.
    static func isWebURL(_ text: String) -> Bool {
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https",
            let host = url.host, !host.isEmpty
        else { return false }
        return true
    }
}

/// A JSON value as the fakes read request bodies: booleans, numbers and strings kept apart (a
/// `true` is never the number 1), objects by key.
enum FakeJSON: Sendable, Hashable, Decodable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([FakeJSON])
    case object([String: FakeJSON])

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let flag = try? container.decode(Bool.self) {
            self = .bool(flag)
        } else if let number = try? container.decode(Double.self) {
            self = .number(number)
        } else if let text = try? container.decode(String.self) {
            self = .string(text)
        } else if let array = try? container.decode([FakeJSON].self) {
            self = .array(array)
        } else {
            self = .object(try container.decode([String: FakeJSON].self))
        }
    }

    /// The JSON text parsed, or `nil` when it is not JSON.
    static func parse(_ data: Data) -> FakeJSON? { try? JSONDecoder().decode(FakeJSON.self, from: data) }

    /// The members of an object.
    var object: [String: FakeJSON]? {
        if case .object(let members) = self { return members }
        return nil
    }

    /// A string's text.
    var string: String? {
        if case .string(let text) = self { return text }
        return nil
    }

    /// A string that is not blank.
    var text: String? {
        guard let text = string, !FakeChecks.isBlank(text) else { return nil }
        return text
    }

    /// A boolean's value.
    var bool: Bool? {
        if case .bool(let flag) = self { return flag }
        return nil
    }

    /// A number's value.
    var number: Double? {
        if case .number(let value) = self { return value }
        return nil
    }

    /// A whole number.
    var isWholeNumber: Bool { number.map { $0.rounded() == $0 } ?? false }

    /// A string, number or boolean (what arrays of "primitive values" hold).
    var isPrimitive: Bool {
        switch self {
        case .bool, .number, .string: true
        default: false
        }
    }
}
