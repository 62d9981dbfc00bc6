import Testing
@testable import AttributionLedger

@Suite struct AttributionLedgerPlaceholderTests {
    @Test func moduleLinks() { #expect(Bool(true)) }
}
