import Foundation

/// The top-level members of a stored payload, found by a byte scan that steps over nested values
/// without parsing them: for reducers that need two or three fields of a large payload.
///
/// Payloads in the log were checked when appended, so this meets only JSON the catalog wrote; it
/// still gives up (nil) on anything it does not read exactly as `JSONDecoder` would (an escaped
/// key, a repeated key, bytes that do not scan), and the caller then decodes the usual way.
struct PayloadMembers {
    /// Each member's key and raw value, as ranges of the scanned bytes.
    private(set) var members: [(key: Range<Int>, value: Range<Int>)] = []
    let bytes: [UInt8]

    init?(_ data: Data) {
        bytes = [UInt8](data)
        var index = 0
        func skipSpace() {
            while index < bytes.count, bytes[index] == 0x20 || bytes[index] == 0x0A || bytes[index] == 0x0D || bytes[index] == 0x09 {
                index += 1
            }
        }
        func skipString() -> Bool {
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { return false }
            index += 1
            while index < bytes.count {
                switch bytes[index] {
                case UInt8(ascii: "\""):
                    index += 1
                    return true
                case UInt8(ascii: "\\"): index += 2
                default: index += 1
                }
            }
            return false
        }
        func skipValue(depth: Int) -> Bool {
            guard depth < 64, index < bytes.count else { return false }
            switch bytes[index] {
            case UInt8(ascii: "\""):
                return skipString()
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                let isObject = bytes[index] == UInt8(ascii: "{")
                let close = isObject ? UInt8(ascii: "}") : UInt8(ascii: "]")
                index += 1
                skipSpace()
                if index < bytes.count, bytes[index] == close {
                    index += 1
                    return true
                }
                while true {
                    skipSpace()
                    if isObject {
                        guard skipString() else { return false }
                        skipSpace()
                        guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { return false }
                        index += 1
                        skipSpace()
                    }
                    guard skipValue(depth: depth + 1) else { return false }
                    skipSpace()
                    guard index < bytes.count else { return false }
                    if bytes[index] == UInt8(ascii: ",") {
                        index += 1
                        continue
                    }
                    guard bytes[index] == close else { return false }
                    index += 1
                    return true
                }
            default:
                let start = index
                while index < bytes.count, ![UInt8(ascii: ","), UInt8(ascii: "}"), UInt8(ascii: "]"), 0x20, 0x0A, 0x0D, 0x09]
                    .contains(bytes[index]) {
                    index += 1
                }
                return index > start
            }
        }
        skipSpace()
        guard index < bytes.count, bytes[index] == UInt8(ascii: "{") else { return nil }
        index += 1
        skipSpace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
            index += 1
        } else {
            while true {
                skipSpace()
                let keyStart = index
                guard skipString() else { return nil }
                let key = (keyStart + 1)..<(index - 1)
                guard !bytes[key].contains(UInt8(ascii: "\\")) else { return nil }
                skipSpace()
                guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { return nil }
                index += 1
                skipSpace()
                let valueStart = index
                guard skipValue(depth: 0) else { return nil }
                members.append((key, valueStart..<index))
                skipSpace()
                guard index < bytes.count else { return nil }
                if bytes[index] == UInt8(ascii: ",") {
                    index += 1
                    continue
                }
                guard bytes[index] == UInt8(ascii: "}") else { return nil }
                index += 1
                break
            }
        }
        skipSpace()
        guard index == bytes.count else { return nil }
        // A repeated key: which one counts is the decoder's business.
        for (position, member) in members.enumerated()
        where members[..<position].contains(where: { bytes[$0.key].elementsEqual(bytes[member.key]) }) {
            return nil
        }
    }

    /// The raw value of the member named `name`, if present.
    func raw(_ name: String) -> ArraySlice<UInt8>? {
        let wanted = Array(name.utf8)
        return members.first { bytes[$0.key].elementsEqual(wanted) }.map { bytes[$0.value] }
    }

    /// A JSON object of only the members named in `names` (in their stored order): what a slim
    /// `Decodable` view of the payload needs, without the rest.
    func object(keeping names: Set<String>) -> Data {
        var out: [UInt8] = [UInt8(ascii: "{")]
        for member in members where names.contains(String(decoding: bytes[member.key], as: UTF8.self)) {
            if out.count > 1 { out.append(UInt8(ascii: ",")) }
            out.append(UInt8(ascii: "\""))
            out.append(contentsOf: bytes[member.key])
            out.append(contentsOf: [UInt8(ascii: "\""), UInt8(ascii: ":")])
            out.append(contentsOf: bytes[member.value])
        }
        out.append(UInt8(ascii: "}"))
        return Data(out)
    }

    /// `true` / `false`; nil for anything else.
    static func bool(_ raw: ArraySlice<UInt8>) -> Bool? {
        if raw.elementsEqual("true".utf8) { return true }
        if raw.elementsEqual("false".utf8) { return false }
        return nil
    }

    /// An integer written as plain digits (an optional `-`); nil for anything else.
    static func integer(_ raw: ArraySlice<UInt8>) -> Int? {
        guard !raw.isEmpty, raw.count <= 18 else { return nil }
        var digits = raw[...]
        let negative = digits.first == UInt8(ascii: "-")
        if negative { digits = digits.dropFirst() }
        guard !digits.isEmpty, digits.allSatisfy({ (48...57).contains($0) }) else { return nil }
        let value = digits.reduce(0) { $0 * 10 + Int($1 - 48) }
        return negative ? -value : value
    }

    /// A string with no escapes; nil for anything else.
    static func plainString(_ raw: ArraySlice<UInt8>) -> String? {
        guard raw.count >= 2, raw.first == UInt8(ascii: "\""), raw.last == UInt8(ascii: "\""),
            !raw.contains(UInt8(ascii: "\\")) else { return nil }
        return String(decoding: raw.dropFirst().dropLast(), as: UTF8.self)
    }

    /// `null`.
    static func isNull(_ raw: ArraySlice<UInt8>) -> Bool { raw.elementsEqual("null".utf8) }
}
