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

    /// The bytes of standard, padded, canonical Base64 text (`=` only as the last one or two
    /// characters, no whitespace, length a multiple of 4, unused bits zero); nil for anything else.
    static func decode(_ text: ArraySlice<UInt8>) -> [UInt8]? {
        guard text.count % 4 == 0 else { return nil }
        if text.isEmpty { return [] }
        var padding = 0
        if text.last == UInt8(ascii: "=") { padding += 1 }
        if text.dropLast().last == UInt8(ascii: "=") { padding += 1 }
        var out = [UInt8](repeating: 0, count: text.count / 4 * 3 - padding)
        let valid = text.withUnsafeBytes { (input: UnsafeRawBufferPointer) -> Bool in
            decodingTable.withUnsafeBufferPointer { table in
                out.withUnsafeMutableBufferPointer { output in
                    var to = 0
                    var from = 0
                    while from < input.count {
                        let last = from + 4 == input.count
                        let a = table[Int(input[from])], b = table[Int(input[from + 1])]
                        let c = last && padding == 2 ? 0 : table[Int(input[from + 2])]
                        let d = last && padding >= 1 ? 0 : table[Int(input[from + 3])]
                        guard a | b | c | d < 64 else { return false }
                        // Bits past the data must be zero (the canonical text); anything else is
                        // left to Foundation's decoder.
                        if last && padding == 2 && b & 0x0F != 0 || last && padding == 1 && c & 0x03 != 0 { return false }
                        let value = UInt32(a) << 18 | UInt32(b) << 12 | UInt32(c) << 6 | UInt32(d)
                        output[to] = UInt8(truncatingIfNeeded: value >> 16)
                        if to + 1 < output.count { output[to + 1] = UInt8(truncatingIfNeeded: value >> 8) }
                        if to + 2 < output.count { output[to + 2] = UInt8(truncatingIfNeeded: value) }
                        from += 4
                        to += 3
                    }
                    return true
                }
            }
        }
        return valid ? out : nil
    }

    /// Each byte's 6-bit value; 255 for a byte outside the alphabet (`=` included).
    private static let decodingTable: [UInt8] = {
        var table = [UInt8](repeating: 255, count: 256)
        for (value, byte) in alphabet.enumerated() { table[Int(byte)] = UInt8(value) }
        return table
    }()
}
