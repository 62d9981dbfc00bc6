import Foundation

/// Recognises the textual forms of IPv4 and IPv6 addresses, without any system call.
///
/// A device's IP goes into provider headers (`X-Forwarded-For`, `X-IP-Override`); checking its
/// shape keeps garbage and header injection out of requests.
enum IPAddressSyntax {
    /// Whether `text` is a dotted-quad IPv4 address or an IPv6 address (with `::` compression and an
    /// optional IPv4 tail; no zone index).
    static func isValid(_ text: String) -> Bool {
        isIPv4(Substring(text)) || isIPv6(text)
    }

    /// Four decimal octets 0–255 without leading zeros.
    static func isIPv4(_ text: Substring) -> Bool {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts.allSatisfy { part in
            guard (1...3).contains(part.count), part.allSatisfy(\.isASCIIDigit), let value = Int(part) else { return false }
            return value <= 255 && (part.count == 1 || part.first != "0")
        }
    }

    private static func isIPv6(_ text: String) -> Bool {
        guard text.contains(":"), text.count <= 45 else { return false }
        let halves = text.components(separatedBy: "::")
        guard halves.count <= 2 else { return false }
        let groups = halves.map { $0.isEmpty ? [] : $0.split(separator: ":", omittingEmptySubsequences: false) }
        let all = groups.flatMap { $0 }
        var units = 0
        for (index, group) in all.enumerated() {
            if index == all.count - 1, group.contains(".") {
                guard isIPv4(group) else { return false }
                units += 2
            } else {
                guard (1...4).contains(group.count), group.allSatisfy(\.isHexDigit) else { return false }
                units += 1
            }
        }
        return halves.count == 2 ? units <= 7 : units == 8
    }
}

extension Character {
    fileprivate var isASCIIDigit: Bool { isASCII && isNumber }
}
