import Foundation
import Testing

@testable import LedgerProviders

/// Runs `body` and checks it throws a ``ProviderError`` with this field and rule (and kind).
func expectProviderError(
    field: String, rule: String, kind: ProviderError.Kind? = nil,
    sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> Void
) {
    do {
        try body()
        Issue.record("expected ProviderError \(field) / \(rule), got success", sourceLocation: sourceLocation)
    } catch let error as ProviderError {
        #expect(error.field == field, "\(error)", sourceLocation: sourceLocation)
        #expect(error.rule == rule, "\(error)", sourceLocation: sourceLocation)
        if let kind { #expect(error.kind == kind, sourceLocation: sourceLocation) }
        #expect(!error.message.isEmpty, sourceLocation: sourceLocation)
    } catch {
        Issue.record("expected ProviderError, got \(error)", sourceLocation: sourceLocation)
    }
}

/// Parses JSON text for comparisons (object equality, numbers compared by text, bools apart).
func json(_ text: String, sourceLocation: SourceLocation = #_sourceLocation) -> BSJSON {
    do { return try BSJSONReader.parse(text) } catch {
        Issue.record("not JSON: \(error)", sourceLocation: sourceLocation)
        return .null
    }
}

/// Parses JSON bytes.
func json(_ data: Data?, sourceLocation: SourceLocation = #_sourceLocation) -> BSJSON {
    json(String(decoding: data ?? Data(), as: UTF8.self), sourceLocation: sourceLocation)
}

/// A fixed instant for tests: 2023-11-14T22:13:20Z.
let testNow = Date(timeIntervalSince1970: 1_700_000_000)
