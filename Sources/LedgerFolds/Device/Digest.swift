import Crypto
import Foundation

/// Hex SHA-256 digests of personal values (store transaction ids, attribution tokens): projections
/// key by these, never by the values. Hex by table lookup: `String(format:)` per byte cost more
/// than the rest of a rebuild put together.
enum Digest {
    /// Lowercase hex digits by value (also ``JSONText``'s `\u00XX` escapes).
    static let hexDigits = Array("0123456789abcdef".utf8)

    /// The lowercase hex SHA-256 of `text`, cut to `length` characters.
    static func sha256Hex(_ text: String, length: Int = 64) -> String {
        // Hashed from the string's own bytes and written straight into the result (no `Data` of
        // the text, no array of digits): a third of a revenue event's fold went here.
        var text = text
        let digest = text.withUTF8 { SHA256.hash(data: UnsafeRawBufferPointer($0)) }
        let count = min(max(length, 0), 64)
        return digest.withUnsafeBytes { bytes in
            String(unsafeUninitializedCapacity: count) { out in
                for index in 0..<count {
                    let byte = bytes[index / 2]
                    out[index] = hexDigits[Int(index % 2 == 0 ? byte >> 4 : byte & 0x0F)]
                }
                return count
            }
        }
    }
}
