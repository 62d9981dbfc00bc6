/// Text made safe for HTML and SVG: every value the page shows (campaign names a provider sent,
/// device ids an app chose) goes through ``escape(_:)``, so markup in a value is shown as text and
/// never runs. The page is built by plain string concatenation; this is its only guard, and it
/// is applied to attribute values and element text alike.
enum HTMLText {
    /// `text` with `&`, `<`, `>`, `"` and `'` replaced by their character references: safe inside
    /// an element and inside a quoted attribute value.
    static func escape(_ text: String) -> String {
        var escaped = ""
        escaped.reserveCapacity(text.utf8.count)
        for character in text.unicodeScalars {
            switch character {
            case "&": escaped += "&amp;"
            case "<": escaped += "&lt;"
            case ">": escaped += "&gt;"
            case "\"": escaped += "&quot;"
            case "'": escaped += "&#39;"
            default: escaped.unicodeScalars.append(character)
            }
        }
        return escaped
    }

    /// `name="value"` with the value escaped, for building tags.
    static func attribute(_ name: String, _ value: String) -> String { "\(name)=\"\(escape(value))\"" }
}
