import Foundation

/// Standard Base64 (RFC 4648 §4, padded, no line breaks), written straight into a byte buffer.
///
/// The same text `Data.base64EncodedData()` gives; the sealer writes the box into the stored
/// payload with it, where going through `Data` cost an allocation and a copy per sealed event.
enum Base64 {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    /// Appends the Base64 text of `bytes` to `out`.
    static func append(_ bytes: Data, to out: inout [UInt8]) {
        let start = out.count
        let length = (bytes.count + 2) / 3 * 4
        out.append(contentsOf: repeatElement(UInt8(ascii: "="), count: length))
        bytes.withUnsafeBytes { (input: UnsafeRawBufferPointer) in
            alphabet.withUnsafeBufferPointer { table in
                out.withUnsafeMutableBufferPointer { output in
                    var from = 0
                    var to = start
                    while from < input.count {
                        let remaining = input.count - from
                        let value = UInt32(input[from]) << 16
                            | (remaining > 1 ? UInt32(input[from + 1]) << 8 : 0)
                            | (remaining > 2 ? UInt32(input[from + 2]) : 0)
                        output[to] = table[Int(value >> 18)]
                        output[to + 1] = table[Int(value >> 12 & 0x3F)]
                        // Past the input's end the padding written above stays.
                        if remaining > 1 { output[to + 2] = table[Int(value >> 6 & 0x3F)] }
                        if remaining > 2 { output[to + 3] = table[Int(value & 0x3F)] }
                        from += 3
                        to += 4
                    }
                }
            }
        }
    }
}
