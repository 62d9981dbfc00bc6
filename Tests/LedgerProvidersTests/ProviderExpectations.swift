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

/// ``expectProviderError(field:rule:kind:sourceLocation:_:)`` for a body that returns a value.
func gaExpectError<T>(field: String, rule: String, sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> T) {
    expectProviderError(field: field, rule: rule, sourceLocation: sourceLocation) { _ = try body() }
}

/// Parses JSON text for comparisons: objects' members sorted by key at every level, so two
/// objects compare equal whatever their order; numbers compared by text, bools apart.
func json(_ text: String, sourceLocation: SourceLocation = #_sourceLocation) -> ProviderJSON {
    do { return try ProviderJSONReader.parse(text, limits: .branchSingular).sortingKeys() } catch {
        Issue.record("not JSON: \(error)", sourceLocation: sourceLocation)
        return .null
    }
}

/// Parses JSON bytes.
func json(_ data: Data?, sourceLocation: SourceLocation = #_sourceLocation) -> ProviderJSON {
    json(String(decoding: data ?? Data(), as: UTF8.self), sourceLocation: sourceLocation)
}

/// A fixed instant for tests: 2023-11-14T22:13:20Z.
let testNow = Date(timeIntervalSince1970: 1_700_000_000)

extension ProviderJSON {
    /// This value with every object's members sorted by key (stably, so duplicates keep their order).
    func sortingKeys() -> ProviderJSON {
        switch self {
        case .array(let items): .array(items.map { $0.sortingKeys() })
        case .object(let members):
            .object(
                members.enumerated()
                    .sorted { ($0.element.key, $0.offset) < ($1.element.key, $1.offset) }
                    .map { ProviderJSONMember(key: $0.element.key, value: $0.element.value.sortingKeys()) })
        default: self
        }
    }
}
