import Foundation
import LedgerProviders
import LedgerTestKit

/// A request as printed in the Google App Conversion Tracking API's samples, read back into its
/// parts.
struct GASampleRequest {
    var method: String
    var path: String
    var query: [QueryItem]
    var headers: [Header]
    var body: String?

    /// Reads `POST /path\n ?a=1\n &b=2\nHost: …\nName: value\n{body}` as the document prints it.
    init(_ text: String) {
        var lines = text.split(separator: "\n", omittingEmptySubsequences: true).map { $0.trimmingCharacters(in: .whitespaces) }
        let requestLine = lines.removeFirst().split(separator: " ")
        method = String(requestLine[0])
        path = String(requestLine[1])
        query = []
        headers = []
        body = nil
        for line in lines {
            if line.hasPrefix("?") || line.hasPrefix("&") {
                let pair = line.dropFirst().split(separator: "=", maxSplits: 1)
                query.append(QueryItem(String(pair[0]), String(pair[1])))
            } else if line.hasPrefix("{") {
                body = line
            } else if let colon = line.firstIndex(of: ":") {
                let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
                headers.append(Header(String(line[..<colon]), value))
            }
        }
    }

    /// The query string as the document prints it (no character there needs percent-encoding).
    var encodedQuery: String { query.map { "\($0.name)=\($0.value)" }.joined(separator: "&") }
}

/// The Google App Conversion Tracking API's samples, built for the document's own endpoint.
typealias GASamples = GoogleDocumentSample

extension GoogleDocumentSample {
    static let builder = GoogleConversionRequestBuilder(link: link)
}

extension Data {
    /// The body as UTF-8 text, for assertions.
    var gaText: String { String(decoding: self, as: UTF8.self) }
}
