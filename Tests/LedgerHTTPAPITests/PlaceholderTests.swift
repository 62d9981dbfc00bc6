import Testing
@testable import LedgerHTTPAPI

@Suite struct LedgerHTTPAPIPlaceholderTests {
    @Test func moduleLinks() { #expect(Bool(true)) }
}
