import Foundation

/// Standard Base64 (RFC 4648 §4, padded, no line breaks), written straight into a byte buffer.
///
/// The same text `Data.base64EncodedData()` gives; the sealer writes the box into the stored
/// payload with it, where going through `Data` cost an allocation and a copy per sealed event.
enum Base64 {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    /// Appends the Base64 text of `bytes` to `out`.
    static func append(_ bytes: Data, to out: inout [UInt8]) {
        out.reserveCapacity(out.count + (bytes.count + 2) / 3 * 4)
        bytes.withUnsafeBytes { (input: UnsafeRawBufferPointer) in
            alphabet.withUnsafeBufferPointer { table in
                var index = 0
                let whole = input.count - input.count % 3
                while index < whole {
                    let value = UInt32(input[index]) << 16 | UInt32(input[index + 1]) << 8 | UInt32(input[index + 2])
                    out.append(table[Int(value >> 18)])
                    out.append(table[Int(value >> 12 & 0x3F)])
                    out.append(table[Int(value >> 6 & 0x3F)])
                    out.append(table[Int(value & 0x3F)])
                    index += 3
                }
                switch input.count - whole {
                case 1:
                    let value = UInt32(input[index]) << 16
                    out.append(table[Int(value >> 18)])
                    out.append(table[Int(value >> 12 & 0x3F)])
                    out.append(contentsOf: [UInt8(ascii: "="), UInt8(ascii: "=")])
                case 2:
                    let value = UInt32(input[index]) << 16 | UInt32(input[index + 1]) << 8
                    out.append(table[Int(value >> 18)])
                    out.append(table[Int(value >> 12 & 0x3F)])
                    out.append(table[Int(value >> 6 & 0x3F)])
                    out.append(UInt8(ascii: "="))
                default:
                    break
                }
            }
        }
    }
}
