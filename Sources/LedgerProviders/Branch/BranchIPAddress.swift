import Foundation

/// A strict textual IP address check, for Branch's `X-IP-Override` header and `local_ip` field.
///
/// Why strict: the header value goes into an HTTP request verbatim, and a wrong address silently
/// ruins attribution (Branch v1/open server-to-server guide: "it is critical this uses the device's
/// IP, and not your server's IP"). Accepted forms: dotted-quad IPv4 with no leading zeros
/// (`1.2.3.4`), and RFC 4291 IPv6 text (`2001:db8::1`, `::ffff:1.2.3.4`) without zone ids or
/// brackets.
public enum BranchIPAddress: Sendable, Hashable {
    /// An IPv4 address, as its four octets.
    case v4([UInt8])
    /// An IPv6 address, as its sixteen bytes.
    case v6([UInt8])

    /// Parses `text`, or returns `nil` when it is not exactly an IPv4 or IPv6 address.
    public init?(_ text: String) {
        if let octets = Self.parseV4(Substring(text)) {
            self = .v4(octets)
        } else if let bytes = Self.parseV6(text) {
            self = .v6(bytes)
        } else {
            return nil
        }
    }

    /// The same host with an IPv4-mapped IPv6 address (`::ffff:203.0.113.9`, as dual-stack
    /// listeners report IPv4 peers) as its IPv4 address; any other address as it is.
    public var unmapped: BranchIPAddress {
        guard case .v6(let b) = self, b.prefix(10).allSatisfy({ $0 == 0 }), b[10] == 0xFF, b[11] == 0xFF else { return self }
        return .v4(Array(b[12...]))
    }

    /// `true` when this address can be a device's public address: not unspecified, loopback,
    /// private (RFC 1918), carrier-grade NAT (100.64/10), link-local, multicast, broadcast or
    /// unique-local (fc00::/7). IPv4-mapped IPv6 addresses are judged by their IPv4 part.
    ///
    /// Why: such an address in `X-IP-Override` means the device's public IP was not captured (a
    /// proxy's or the LAN's address leaked in), and Branch would match against the wrong network.
    public var isPublic: Bool {
        switch self {
        case .v4(let o):
            switch (o[0], o[1]) {
            case (0, _), (10, _), (127, _), (169, 254), (192, 168): return false
            case (172, 16...31), (100, 64...127): return false
            case (224...255, _): return false
            default: return true
            }
        case .v6(let b):
            if case .v4 = unmapped { return unmapped.isPublic }
            if b.prefix(15).allSatisfy({ $0 == 0 }) && (b[15] == 0 || b[15] == 1) { return false }
            if b[0] == 0xFF { return false }
            if b[0] & 0xFE == 0xFC { return false }
            if b[0] == 0xFE && b[1] & 0xC0 == 0x80 { return false }
            return true
        }
    }

    private static func parseV4(_ text: Substring) -> [UInt8]? {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4 else { return nil }
        var octets: [UInt8] = []
        for part in parts {
            guard (1...3).contains(part.count), part.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }),
                part.count == 1 || part.first != "0", let value = Int(part), value <= 255
            else { return nil }
            octets.append(UInt8(value))
        }
        return octets
    }

    private static func parseV6(_ text: String) -> [UInt8]? {
        guard text.count >= 2, text.count <= 45, text.contains(":") else { return nil }
        let halves = text.components(separatedBy: "::")
        guard halves.count <= 2 else { return nil }
        func groups(_ part: String, allowV4Tail: Bool) -> [UInt16]? {
            if part.isEmpty { return [] }
            let fields = part.split(separator: ":", omittingEmptySubsequences: false)
            var out: [UInt16] = []
            for (index, field) in fields.enumerated() {
                if allowV4Tail, index == fields.count - 1, field.contains(".") {
                    guard let o = parseV4(field) else { return nil }
                    out.append(UInt16(o[0]) << 8 | UInt16(o[1]))
                    out.append(UInt16(o[2]) << 8 | UInt16(o[3]))
                    continue
                }
                guard (1...4).contains(field.count), field.utf8.allSatisfy(BranchSingularHTTP.isHexDigit),
                    let value = UInt16(field, radix: 16)
                else { return nil }
                out.append(value)
            }
            return out
        }
        var words: [UInt16]
        if halves.count == 2 {
            guard let head = groups(halves[0], allowV4Tail: false),
                let tail = groups(halves[1], allowV4Tail: true), head.count + tail.count <= 7
            else { return nil }
            words = head + Array(repeating: 0, count: 8 - head.count - tail.count) + tail
        } else {
            guard let all = groups(text, allowV4Tail: true), all.count == 8 else { return nil }
            words = all
        }
        return words.flatMap { [UInt8($0 >> 8), UInt8($0 & 0xFF)] }
    }
}
