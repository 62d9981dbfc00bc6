import Foundation

/// Compact JSON writing of ``GAJSONValue``: exactly the bytes Google's samples show
/// (`{"app_event_data":{"item_id":["Crayons","Markers"]}}`), which `JSONSerialization` cannot
/// promise (it escapes `/` and may reorder keys).
extension GAJSON {
    /// Writes a value compactly (no spaces), members in order, `/` not escaped, non-ASCII kept as UTF-8.
    static func serialize(_ value: GAJSONValue) -> String {
        var out = ""
        write(value, into: &out)
        return out
    }

    private static func write(_ value: GAJSONValue, into out: inout String) {
        switch value {
        case .null: out += "null"
        case .bool(let flag): out += flag ? "true" : "false"
        case .number(let text): out += text
        case .string(let text): writeString(text, into: &out)
        case .array(let items):
            out += "["
            for (offset, item) in items.enumerated() {
                if offset > 0 { out += "," }
                write(item, into: &out)
            }
            out += "]"
        case .object(let members):
            out += "{"
            for (offset, member) in members.enumerated() {
                if offset > 0 { out += "," }
                writeString(member.key, into: &out)
                out += ":"
                write(member.value, into: &out)
            }
            out += "}"
        }
    }

    /// JSON string escaping: `"`, `\` and control characters only.
    static func writeString(_ text: String, into out: inout String) {
        out += "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case "\u{08}": out += "\\b"
            case "\u{0C}": out += "\\f"
            default:
                if scalar.value < 0x20 {
                    let hex = String(scalar.value, radix: 16, uppercase: false)
                    out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        out += "\""
    }
}
