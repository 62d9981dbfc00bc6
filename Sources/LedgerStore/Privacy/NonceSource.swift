import Crypto
import Foundation
import Glibc

/// AES-GCM nonces for sealing, each read from the kernel's generator in one system call.
///
/// A nonce must never repeat under one key, and a random 96-bit one is the usual way to make
/// sure; it need not be secret. swift-crypto's `AES.GCM.Nonce()` draws one with two calls of the
/// standard library's generator, one `getrandom` system call each, about a tenth of a sealed
/// append's sealing time. Here one `read` of 12 bytes from `/dev/urandom`, kept open for the
/// process, makes a nonce: half the system calls, and no random bytes are kept in the process
/// (so a `fork`, or a restored snapshot of the process or its machine, cannot replay any: each
/// nonce comes from the kernel when it is made, as swift-crypto's do). Glibc's module does not
/// export `getrandom` itself, hence the device.
///
/// Keys are never drawn from here: they come from swift-crypto (`SymmetricKey(size:)`).
final class NonceSource: Sendable {
    /// The process's source.
    static let shared = NonceSource()

    /// `/dev/urandom`, or -1 when it could not be opened (then swift-crypto draws each nonce).
    private let descriptor: Int32

    private init() {
        descriptor = open("/dev/urandom", O_RDONLY | O_CLOEXEC)
    }

    deinit {
        if descriptor >= 0 { close(descriptor) }
    }

    /// A fresh random nonce.
    func next() -> AES.GCM.Nonce {
        var bytes = [UInt8](repeating: 0, count: 12)
        let filled = descriptor >= 0 && bytes.withUnsafeMutableBytes { buffer -> Bool in
            var done = 0
            while done < buffer.count {
                let got = read(descriptor, buffer.baseAddress! + done, buffer.count - done)
                if got > 0 {
                    done += got
                } else if got == 0 || errno != EINTR {
                    return false
                }
            }
            return true
        }
        // 12 bytes is the size AES.GCM.Nonce(data:) accepts: it cannot throw here.
        return filled ? try! AES.GCM.Nonce(data: bytes) : AES.GCM.Nonce()
    }
}
