import Crypto
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// AES-GCM nonces for sealing, drawn from the system's generator 4 KiB at a time.
///
/// A nonce must never repeat under one key, and a random 96-bit one is the usual way to make
/// sure; it need not be secret. swift-crypto draws each one with its own `getrandom` call, a
/// tenth of a sealed append's sealing time; here one read serves 341 nonces. Bytes are handed out
/// once each, under a lock. The buffer is refilled in a child process after a `fork` (the pid
/// is checked on every draw), so a child can never reuse its parent's nonces.
///
/// Keys are never drawn from here: they come from swift-crypto (`SymmetricKey(size:)`).
final class NonceSource: Sendable {
    /// The process's source.
    static let shared = NonceSource()

    private struct Pool {
        var bytes = [UInt8](repeating: 0, count: 4092)  // 341 nonces
        var next = Int.max
        var owner: pid_t = 0
    }

    private let pool = Mutex(Pool())

    /// A fresh random nonce.
    func next() -> AES.GCM.Nonce {
        let bytes: [UInt8] = pool.withLock { pool in
            let pid = getpid()
            if pool.next > pool.bytes.count - 12 || pool.owner != pid {
                Self.fill(&pool.bytes)
                pool.next = 0
                pool.owner = pid
            }
            defer { pool.next += 12 }
            return Array(pool.bytes[pool.next..<(pool.next + 12)])
        }
        // 12 bytes is the nonce size AES.GCM.Nonce(data:) accepts; it cannot throw here.
        return try! AES.GCM.Nonce(data: bytes)
    }

    /// Fills `bytes` from `/dev/urandom` (Glibc's module does not export `getrandom`), or from
    /// the standard library's generator, eight bytes per call, if that device cannot be read.
    private static func fill(_ bytes: inout [UInt8]) {
        let read = bytes.withUnsafeMutableBytes { buffer -> Bool in
            let descriptor = open("/dev/urandom", O_RDONLY | O_CLOEXEC)
            guard descriptor >= 0 else { return false }
            defer { close(descriptor) }
            var filled = 0
            while filled < buffer.count {
                let got = Glibc.read(descriptor, buffer.baseAddress! + filled, buffer.count - filled)
                if got > 0 {
                    filled += got
                } else if got == 0 || errno != EINTR {
                    return false
                }
            }
            return true
        }
        guard !read else { return }
        var generator = SystemRandomNumberGenerator()
        for start in stride(from: 0, to: bytes.count, by: 8) {
            withUnsafeBytes(of: generator.next() as UInt64) { word in
                for offset in 0..<min(8, bytes.count - start) { bytes[start + offset] = word[offset] }
            }
        }
    }
}
