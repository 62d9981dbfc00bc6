import Testing
@testable import LedgerAttribution

@Suite struct LedgerAttributionPlaceholderTests {
    @Test func moduleLinks() { #expect(Bool(true)) }
}
