import Foundation

/// A strict validator for the `X-Forwarded-For` header of the Google App Conversion Tracking API:
/// "The public IPv4 or IPv6 address of the device where the event was measured."
///
/// Strict means: exactly one address (no list, no port, no brackets, no zone `%eth0`), IPv4 in
/// dotted-quad form without leading zeros (`010.1.1.1` is ambiguous — octal to some parsers), IPv6
/// in RFC 4291 text form (at most one `::`, optional trailing dotted quad). "Public" means not
/// loopback, private, shared (CGNAT), link-local, unspecified, multicast or reserved: such an
/// address can only be ours or a proxy's, never the device's as Google must see it.
public enum GoogleDeviceIPAddress {
    /// The address family of a valid address.
    public enum Family: String, Sendable, Hashable, Codable {
        /// A dotted quad; an IPv6 text address.
        case ipv4, ipv6
    }

    /// Checks `text` and returns its family.
    ///
    /// - Throws: `ProviderError` on `field` with rule `ipv4_or_ipv6` (not one strict address) or
    ///   `public_address` (a valid address that is not public).
    @discardableResult
    public static func validate(_ text: String, field: String = "X-Forwarded-For") throws(ProviderError) -> Family {
        if let octets = ipv4Octets(text) {
            guard isPublic(ipv4: octets) else { throw notPublic(text, field: field) }
            return .ipv4
        }
        if let groups = ipv6Groups(text) {
            guard isPublic(ipv6: groups) else { throw notPublic(text, field: field) }
            return .ipv6
        }
        throw ProviderError(
            .invalidRequest, provider: .google, field: field, rule: "ipv4_or_ipv6",
            message: "\(field) must be one IPv4 or IPv6 address, e.g. 216.58.194.174 (Google App Conversion Tracking API).")
    }

    /// The family of `text` if it is one syntactically valid address (public or not).
    public static func family(of text: String) -> Family? {
        if ipv4Octets(text) != nil { return .ipv4 }
        if ipv6Groups(text) != nil { return .ipv6 }
        return nil
    }

    private static func notPublic(_ text: String, field: String) -> ProviderError {
        ProviderError(
            .invalidRequest, provider: .google, field: field, rule: "public_address",
            message: "\(field) must be the device's public address; \(text) is loopback, private, "
                + "link-local, multicast or reserved (Google App Conversion Tracking API).")
    }

    /// The four octets of a strict dotted quad.
    static func ipv4Octets(_ text: some StringProtocol) -> [UInt8]? {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4 else { return nil }
        var octets: [UInt8] = []
        for part in parts {
            guard (1...3).contains(part.utf8.count),
                part.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }),
                part.count == 1 || part.first != "0",
                let value = UInt8(part)
            else { return nil }
            octets.append(value)
        }
        return octets
    }

    /// The eight 16-bit groups of a strict IPv6 text address.
    static func ipv6Groups(_ text: String) -> [UInt16]? {
        guard text.utf8.count >= 2, text.utf8.count <= 45, text.contains(":") else { return nil }
        let halves = text.components(separatedBy: "::")
        guard halves.count <= 2 else { return nil }
        func groups(_ part: String, allowIPv4Tail: Bool) -> [UInt16]? {
            if part.isEmpty { return [] }
            let pieces = part.split(separator: ":", omittingEmptySubsequences: false)
            var result: [UInt16] = []
            for (offset, piece) in pieces.enumerated() {
                if allowIPv4Tail, offset == pieces.count - 1, piece.contains(".") {
                    guard let octets = ipv4Octets(piece) else { return nil }
                    result.append(UInt16(octets[0]) << 8 | UInt16(octets[1]))
                    result.append(UInt16(octets[2]) << 8 | UInt16(octets[3]))
                    continue
                }
                guard (1...4).contains(piece.utf8.count), piece.allSatisfy(\.isHexDigit),
                    let value = UInt16(piece, radix: 16)
                else { return nil }
                result.append(value)
            }
            return result
        }
        if halves.count == 1 {
            guard let all = groups(halves[0], allowIPv4Tail: true), all.count == 8 else { return nil }
            return all
        }
        guard let head = groups(halves[0], allowIPv4Tail: false),
            let tail = groups(halves[1], allowIPv4Tail: true),
            head.count + tail.count <= 7
        else { return nil }
        return head + Array(repeating: 0, count: 8 - head.count - tail.count) + tail
    }

    static func isPublic(ipv4 octets: [UInt8]) -> Bool {
        let (first, second) = (octets[0], octets[1])
        switch first {
        case 0, 10, 127: return false  // "this network", private, loopback
        case 100 where (64...127).contains(second): return false  // shared address space (CGNAT)
        case 169 where second == 254: return false  // link-local
        case 172 where (16...31).contains(second): return false  // private
        case 192 where second == 168: return false  // private
        case 224...255: return false  // multicast, reserved, broadcast
        default: return true
        }
    }

    static func isPublic(ipv6 groups: [UInt16]) -> Bool {
        if groups.allSatisfy({ $0 == 0 }) { return false }  // :: unspecified
        if groups.dropLast().allSatisfy({ $0 == 0 }), groups[7] == 1 { return false }  // ::1 loopback
        if groups[0] & 0xFFC0 == 0xFE80 { return false }  // fe80::/10 link-local
        if groups[0] & 0xFE00 == 0xFC00 { return false }  // fc00::/7 unique local
        if groups[0] & 0xFF00 == 0xFF00 { return false }  // ff00::/8 multicast
        if groups[0..<5].allSatisfy({ $0 == 0 }), groups[5] == 0xFFFF {  // ::ffff:a.b.c.d mapped
            let octets = [UInt8(groups[6] >> 8), UInt8(groups[6] & 0xFF), UInt8(groups[7] >> 8), UInt8(groups[7] & 0xFF)]
            return isPublic(ipv4: octets)
        }
        return true
    }
}
