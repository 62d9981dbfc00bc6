import Foundation

extension Data {
    /// Whether `needle` occurs in these bytes (a plain scan: `Data.range(of:)` was a visible share
    /// of an append's and of a read's client time). For the ledger's own modules.
    package func contains(bytes needle: [UInt8]) -> Bool {
        guard let first = needle.first else { return true }
        return withUnsafeBytes { (haystack: UnsafeRawBufferPointer) -> Bool in
            guard haystack.count >= needle.count else { return false }
            for start in 0...(haystack.count - needle.count) where haystack[start] == first {
                var matches = true
                for offset in 1..<needle.count where haystack[start + offset] != needle[offset] {
                    matches = false
                    break
                }
                if matches { return true }
            }
            return false
        }
    }
}
