import Foundation

/// Lowercase hex text of bytes, and back: how digests, key ids and hashes are written in seals,
/// checkpoints and exports.
enum Hex {
    /// The lowercase hex text of `bytes`.
    static func text(_ bytes: some Sequence<UInt8>) -> String {
        bytes.map { String(format: "%02x", $0) }.joined()
    }

    /// The bytes of hex `text` (either case), or nil when it is not an even number of hex digits.
    static func bytes(_ text: String) -> Data? {
        let digits = Array(text.utf8)
        guard digits.count % 2 == 0 else { return nil }
        var bytes = Data(capacity: digits.count / 2)
        var index = 0
        while index < digits.count {
            guard let byte = UInt8(String(decoding: digits[index...index + 1], as: UTF8.self), radix: 16) else { return nil }
            bytes.append(byte)
            index += 2
        }
        return bytes
    }
}
