import Crypto
import Foundation

/// The `Ledger-Signature` header scheme (docs/webhooks.md): `t=<unix seconds>,v1=<hex>` with one
/// `v1` per signing secret, each the HMAC-SHA256 of `"<t>.<body>"` under that secret, as Stripe
/// signs. The timestamp inside the signed text lets a receiver refuse an old delivery replayed
/// later; two `v1` values let a receiver switch secrets without missing a delivery.
public enum WebhookSignature {
    /// The header's name.
    public static let headerName = "Ledger-Signature"

    /// The hex HMAC-SHA256 of `"<timestamp>.<body>"` under `secret`.
    public static func hmac(secret: String, timestamp: Int64, body: Data) -> String {
        var signed = Data("\(timestamp).".utf8)
        signed.append(body)
        let code = HMAC<SHA256>.authenticationCode(for: signed, using: SymmetricKey(data: Data(secret.utf8)))
        return code.map { String(format: "%02x", $0) }.joined()
    }

    /// The header's value: `t=<timestamp>,v1=<hex>[,v1=<hex>]`, one `v1` per secret, in order.
    public static func header(secrets: [String], timestamp: Int64, body: Data) -> String {
        (["t=\(timestamp)"] + secrets.map { "v1=" + hmac(secret: $0, timestamp: timestamp, body: body) })
            .joined(separator: ",")
    }

    /// Whether `header` carries a `v1` signature of `body` under `secret` for its own `t`, what a
    /// receiver checks (compared in constant time). Returns the header's timestamp when it does.
    public static func verify(header: String, body: Data, secret: String) -> Int64? {
        var timestamp: Int64?
        var signatures: [String] = []
        for part in header.split(separator: ",") {
            let pair = part.split(separator: "=", maxSplits: 1).map(String.init)
            guard pair.count == 2 else { continue }
            switch pair[0].trimmingCharacters(in: .whitespaces) {
            case "t": timestamp = Int64(pair[1])
            case "v1": signatures.append(pair[1].lowercased())
            default: continue
            }
        }
        guard let timestamp else { return nil }
        let expected = Array(hmac(secret: secret, timestamp: timestamp, body: body).utf8)
        for signature in signatures {
            let given = Array(signature.utf8)
            guard given.count == expected.count else { continue }
            var difference: UInt8 = 0
            for (a, b) in zip(given, expected) { difference |= a ^ b }
            if difference == 0 { return timestamp }
        }
        return nil
    }
}
