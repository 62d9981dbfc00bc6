import Crypto
import Foundation

/// Hex SHA-256 digests of personal values (store transaction ids, attribution tokens): projections
/// key by these, never by the values. Hex by table lookup: `String(format:)` per byte cost more
/// than the rest of a rebuild put together.
enum Digest {
    private static let hexDigits = Array("0123456789abcdef".utf8)

    /// The lowercase hex SHA-256 of `text`, cut to `length` characters.
    static func sha256Hex(_ text: String, length: Int = 64) -> String {
        var out = [UInt8]()
        out.reserveCapacity(64)
        for byte in SHA256.hash(data: Data(text.utf8)) {
            out.append(hexDigits[Int(byte >> 4)])
            out.append(hexDigits[Int(byte & 0x0F)])
        }
        return String(decoding: out.prefix(length), as: UTF8.self)
    }
}
