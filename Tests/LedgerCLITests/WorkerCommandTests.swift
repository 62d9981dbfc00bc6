import Foundation
import Testing

/// `ledger worker`'s options, refused before it touches a database (exit 64).
@Suite("ledger worker options")
struct WorkerCommandTests {
    // Issue 6 (leases): a try is called only with its timeout and a tenth of its lease left; a
    // lease without that room would leave every try uncalled, so it is refused at start.
    @Test("a lease that leaves no room for a call is refused")
    func leaseWithoutRoomIsRefused() async throws {
        let tight = try await LedgerProcess.runDetached(["worker", "--lease", "21", "--timeout", "20"])
        #expect(tight.status == 64)
        #expect(tight.stderr.contains("--lease must leave --timeout"), "\(tight.stderr)")
    }

    @Test("more sends ahead than slots are refused")
    func prefetchAboveSlotsIsRefused() async throws {
        let ahead = try await LedgerProcess.runDetached(["worker", "--slots", "4", "--prefetch", "5"])
        #expect(ahead.status == 64)
        #expect(ahead.stderr.contains("--prefetch must be between 0 and --slots"), "\(ahead.stderr)")
    }
}
