import Foundation
import LedgerDomain

// event_encode: the catalog's encoding of the three events a send worker appends on a try
// (`SendAttempted` with its request, `ResponseReceived` with its body, `SendSucceeded`), with
// `CanonicalJSONEncoder`, against Foundation's `JSONEncoder` with the same settings
// (`LedgerJSON.makeEncoder()`, a new one per event as the catalog made it) in the same run. No
// database involved.

/// A try's events, as the worker records them for an Apple AdServices lookup.
func sampleTryEvents() -> (SendAttempted, ResponseReceived, SendSucceeded) {
    let request = RecordedRequest(
        method: "POST", url: "https://api-adservices.apple.com/api/v1/",
        headers: [HTTPHeader("Content-Type", "text/plain"), HTTPHeader("Accept", "application/json")],
        body: RecordedBody(bytes: Data("dG9rZW4tZm9yLWF0dHJpYnV0aW9uLWJlbmNobWFyaw==".utf8)))
    let answer = """
        {"attribution":true,"orgId":40669820,"campaignId":542370539,"conversionType":"Download","clickDate":"2020-04-08T17:17Z",\
        "claimType":"Click","adGroupId":542317095,"countryOrRegion":"US","keywordId":87675432,"adId":542317136}
        """
    let response = ResponseReceived(attempt: 1, status: 200, headers: [HTTPHeader("Content-Type", "application/json")],
                                    body: RecordedBody(bytes: Data(answer.utf8)), latencyMilliseconds: 12)
    return (SendAttempted(attempt: 1, request: request), response, SendSucceeded(attempt: 1))
}

enum EventEncodingBenchError: Error {
    /// The two encoders wrote different bytes for the same event.
    case disagreement
}

func benchEventEncoding(rounds: Int = 6, perRound: Int = 5_000) throws -> Measurement {
    let (attempted, received, succeeded) = sampleTryEvents()
    // The two must agree before their speed means anything.
    for (canonical, foundation) in [
        (try CanonicalJSONEncoder.encode(attempted), try LedgerJSON.makeEncoder().encode(attempted)),
        (try CanonicalJSONEncoder.encode(received), try LedgerJSON.makeEncoder().encode(received)),
        (try CanonicalJSONEncoder.encode(succeeded), try LedgerJSON.makeEncoder().encode(succeeded)),
    ] where canonical != foundation {
        throw EventEncodingBenchError.disagreement
    }
    var bytes = 0
    func timed(_ body: () throws -> Void) rethrows -> Double {
        let start = DispatchTime.now()
        try body()
        return Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e9
    }
    var canonicalSeconds = 0.0
    var foundationSeconds = 0.0
    for _ in 0..<rounds {
        canonicalSeconds += try timed {
            for _ in 0..<perRound {
                bytes &+= try CanonicalJSONEncoder.encode(attempted).count
                bytes &+= try CanonicalJSONEncoder.encode(received).count
                bytes &+= try CanonicalJSONEncoder.encode(succeeded).count
            }
        }
        foundationSeconds += try timed {
            for _ in 0..<perRound {
                bytes &+= try LedgerJSON.makeEncoder().encode(attempted).count
                bytes &+= try LedgerJSON.makeEncoder().encode(received).count
                bytes &+= try LedgerJSON.makeEncoder().encode(succeeded).count
            }
        }
    }
    precondition(bytes > 0)
    let events = Double(rounds * perRound * 3)
    return Measurement(bench: "event_encode", rate: events / canonicalSeconds, unit: "events/s",
                       baselineRate: events / foundationSeconds,
                       baseline: "Foundation JSONEncoder (sorted keys, the ledger's date strategy), the same three events")
}
