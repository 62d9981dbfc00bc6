// `timespec` reaches this module through Dispatch's C module once Hummingbird is linked.
import CDispatch
import Foundation
import LedgerDomain
import LedgerPostgres
import LedgerStore
import LedgerTestSupport

/// Append throughput with personal fields sealed per device (issue 9) against the same appends
/// with sealing off, in the same run: single-event durable appends of `SessionStarted` events
/// with a full device context (IDFA, IDFV, IP, user agent, custom user id), validated against the
/// catalog on both sides, spread over `devices` devices. Within each round the sides take turns
/// every `block` events, so the disk's drift and stalls weigh on both alike; only the appends are
/// timed. Goal: ratio ≥ 0.9.
func benchEncryptedAppends(conninfo: String, perRound: Int = 600, rounds: Int = 5, devices: Int = 50, block: Int = 150) throws
    -> Measurement
{
    let masterKeys = try MasterKeys(base64: MasterKeys.generateText())
    func store(_ privacy: PersonalDataProtection) -> EventStore {
        EventStore(pool: PostgresPool(conninfo: conninfo, logger: TestDatabase.quietLogger),
                   validator: EventStore.catalogValidator(), privacy: privacy, logger: TestDatabase.quietLogger)
    }
    let sealed = store(PersonalDataProtection(masterKeys: masterKeys))
    let clear = store(.disabled)
    let device = DeviceContext(
        platform: .ios, idfa: "EA7583CD-A667-48BC-B806-42ECB2B48606", idfv: "9B1DEB4D-3B7D-4BAD-9BDD-2B0D7B3DCB6D",
        limitAdTracking: false, attStatus: .authorized, ip: "203.0.113.7",
        userAgent: UserAgentParts(appName: "ExampleGame", appVersion: "3.2.0", osName: "iOS", osVersion: "17.4.1",
                                  locale: "en_US", deviceModel: "iPhone15,2", build: "21E236"),
        osVersion: "17.4.1", appVersion: "3.2.0", bundleID: "com.example.game", customUserID: "user-1")
    let data = try EventCatalog.standard.encode(SessionStarted(device: device))
    @Sendable func event(_ n: Int) -> NewEvent {
        NewEvent(type: SessionStarted.eventType, data: data, metadata: metadata,
                 occurredAt: Date(timeIntervalSince1970: 1_763_000_000 + Double(n)))
    }
    // Per side: wall seconds, WAL bytes, this thread's CPU and PostgreSQL's CPU.
    final class Totals: @unchecked Sendable {
        // `@unchecked`: written only by the one benchmark thread, read after it has finished.
        var seconds = 0.0, wal = 0.0, client = 0.0, server = 0.0
    }
    let totals = ["clear": Totals(), "sealed": Totals()]
    let sides = [("clear", clear), ("sealed", sealed)]
    for round in 0..<rounds {
        _ = try timeOnThreads(1) { _ in
            // One connection per side for the round; the sides take turns every `block` events,
            // so a stall of the disk or a checkpoint weighs on both alike.
            let connections = try sides.map { _ in try PostgresConnection(conninfo: conninfo, logger: TestDatabase.quietLogger) }
            let probe = try PostgresConnection(conninfo: conninfo, logger: TestDatabase.quietLogger)
            func walPosition() throws -> Double {
                try probe.query("SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::float8").single().decode(Double.self, at: 0)
            }
            for blockStart in stride(from: 0, to: perRound, by: block) {
                // The sides take the first turn alternately.
                for turn in 0..<2 {
                    let index = (turn + blockStart / block + round) % 2
                    let (side, target) = sides[index]
                    let totals = totals[side]!
                    // Sampled while the connection lives: a backend that has exited is no longer counted.
                    let serverBefore = CPUUsage.now()
                    let walBefore = try walPosition()
                    let cpuBefore = threadCPUSeconds()
                    let started = DispatchTime.now().uptimeNanoseconds
                    for n in blockStart..<min(perRound, blockStart + block) {
                        try target.append([event(n)], to: "device-bench-\(side)-r\(round)-d\(n % devices)",
                                          on: connections[index])
                    }
                    totals.seconds += Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9
                    totals.client += threadCPUSeconds() - cpuBefore
                    totals.wal += try walPosition() - walBefore
                    totals.server += CPUUsage.now().since(serverBefore).server
                }
            }
        }
    }
    let clearSeconds = totals["clear"]!.seconds
    let sealedSeconds = totals["sealed"]!.seconds
    let total = Double(perRound * rounds)
    // Commits wait for their WAL to be flushed: bytes per event tell a costlier flush from more work.
    func perEvent(_ value: (Totals) -> Double, _ scale: Double) -> String {
        "clear \(Int(value(totals["clear"]!) / total * scale)), sealed \(Int(value(totals["sealed"]!) / total * scale))"
    }
    FileHandle.standardError.write(Data(("append_encrypted per event: WAL B \(perEvent(\.wal, 1)); "
        + "client CPU µs \(perEvent(\.client, 1e6)); PostgreSQL CPU µs \(perEvent(\.server, 1e6)); "
        + "wall µs \(perEvent(\.seconds, 1e6))\n").utf8))
    return Measurement(bench: "append_encrypted", rate: total / sealedSeconds, unit: "events/s",
                       baselineRate: total / clearSeconds,
                       baseline: "the same single-event appends (catalog-validated SessionStarted, \(devices) devices) with sealing off")
}

/// CPU seconds the calling thread has used.
func threadCPUSeconds() -> Double {
    var spec = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &spec)
    return Double(spec.tv_sec) + Double(spec.tv_nsec) / 1e9
}

/// CPU seconds added up from benchmark threads.
final class CPUTimeBox: @unchecked Sendable {
    // `@unchecked`: `seconds` is read and written under `lock`.
    private let lock = NSLock()
    private var seconds = 0.0
    func add(_ value: Double) { lock.withLock { seconds += value } }
    var total: Double { lock.withLock { seconds } }
}
