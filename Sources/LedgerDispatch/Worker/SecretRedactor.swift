import Foundation
import LedgerDomain
import LedgerProviders
import Synchronization

/// Removes configured secret values (``SendRules/configuredSecrets``) from what the worker
/// appends: a provider's answer is stored as received, and an error answer may repeat the request
/// it got, credentials included, which would put them in the immutable log. Every occurrence of a
/// secret — as written, percent-encoded (as a query carries it) and JSON-escaped (as a JSON body
/// carries it) — is replaced by ``ProviderRequest/redactedMarker``, in answer bodies and header
/// values, failure and retry details, and the stored request.
struct SecretRedactor: Sendable {
    /// The forms to look for, longest first (so a longer form is replaced before a shorter one
    /// inside it).
    private let forms: [String]
    private let marker = ProviderRequest.redactedMarker
    /// The secrets it was made for: a cache compares them to tell whether it still applies.
    let secrets: [String]

    /// A redactor for `secrets`; blank values are ignored.
    init(secrets: [String]) {
        self.secrets = secrets
        var forms = Set<String>()
        var unreserved = CharacterSet.alphanumerics
        unreserved.insert(charactersIn: "-._~")
        for secret in secrets where !secret.trimmingCharacters(in: .whitespaces).isEmpty {
            forms.insert(secret)
            if let encoded = secret.addingPercentEncoding(withAllowedCharacters: unreserved) { forms.insert(encoded) }
            if let encoded = secret.addingPercentEncoding(withAllowedCharacters: .urlQueryAllowed) { forms.insert(encoded) }
            let quoted = ProviderJSON.string(secret).serialized
            forms.insert(String(quoted.dropFirst().dropLast()))
        }
        self.forms = forms.sorted { ($0.utf8.count, $0) > ($1.utf8.count, $1) }
    }

    /// Whether there is nothing to redact.
    var isEmpty: Bool { forms.isEmpty }

    /// `text` without any secret.
    func redact(_ text: String) -> String {
        forms.reduce(text) { $0.replacingOccurrences(of: $1, with: marker) }
    }

    /// `data` without any secret's bytes.
    func redact(_ data: Data) -> Data {
        var result = Data(data)
        let replacement = Data(marker.utf8)
        for form in forms {
            let needle = Data(form.utf8)
            var from = result.startIndex
            while from < result.endIndex, let found = result.range(of: needle, in: from..<result.endIndex) {
                result.replaceSubrange(found, with: replacement)
                from = found.lowerBound + replacement.count
            }
        }
        return result
    }

    /// `body` without any secret, in its own encoding.
    func redact(_ body: RecordedBody) -> RecordedBody {
        guard let bytes = body.bytes else { return body }
        let redacted = redact(bytes)
        return redacted == bytes ? body : RecordedBody(bytes: redacted)
    }

    /// `headers` with every value redacted.
    func redact(_ headers: [HTTPHeader]) -> [HTTPHeader] {
        headers.map { HTTPHeader($0.name, redact($0.value)) }
    }

    /// `request` (already stripped of its known credential fields) without any secret elsewhere.
    func redact(_ request: RecordedRequest) -> RecordedRequest {
        guard !isEmpty else { return request }
        return RecordedRequest(method: request.method, url: request.url.map(redact), headers: request.headers.map(redact),
                               body: request.body.map(redact))
    }

    /// `answer` without any secret in its headers or body.
    func redact(_ answer: ResponseReceived) -> ResponseReceived {
        guard !isEmpty else { return answer }
        var copy = answer
        copy.headers = redact(answer.headers)
        copy.body = answer.body.map(redact)
        return copy
    }
}

/// The worker's redactor, made again only when the configured secrets change (a `SIGHUP` reload):
/// making one percent-encodes and sorts every secret, which is not work for every try.
final class SecretRedactorCache: Sendable {
    private let current = Mutex<SecretRedactor?>(nil)

    /// The redactor for `secrets`: the last one made when they are the same.
    func redactor(for secrets: [String]) -> SecretRedactor {
        current.withLock { cached in
            if let cached, cached.secrets == secrets { return cached }
            let made = SecretRedactor(secrets: secrets)
            cached = made
            return made
        }
    }
}
