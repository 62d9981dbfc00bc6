import Foundation
import LedgerDomain
import LedgerPostgres
import LedgerStore
import LedgerTestSupport

/// Append throughput with personal fields sealed per device (issue 9) against the same appends
/// with sealing off, in the same run: single-event durable appends of `SessionStarted` events
/// with a full device context (IDFA, IDFV, IP, user agent, custom user id), validated against the
/// catalog on both sides, spread over `devices` devices. Rounds alternate so the disk's drift
/// weighs on both alike. Goal: ratio ≥ 0.9.
func benchEncryptedAppends(conninfo: String, perRound: Int = 600, rounds: Int = 5, devices: Int = 50) throws -> Measurement {
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
    var sealedSeconds = 0.0
    var clearSeconds = 0.0
    var walBytes = ["clear": 0.0, "sealed": 0.0]
    var clientCPU = ["clear": 0.0, "sealed": 0.0]
    let serverCPU = ["clear": CPUTimeBox(), "sealed": CPUTimeBox()]
    let probe = try PostgresConnection(conninfo: conninfo, logger: TestDatabase.quietLogger)
    func walPosition() throws -> Double {
        try probe.query("SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::float8").single().decode(Double.self, at: 0)
    }
    for round in 0..<rounds {
        for (side, target) in [("clear", clear), ("sealed", sealed)] {
            let walBefore = try walPosition()
            defer { walBytes[side, default: 0] += ((try? walPosition()) ?? walBefore) - walBefore }
            let cpu = CPUTimeBox()
            let seconds = try timeOnThreads(1) { _ in
                let connection = try PostgresConnection(conninfo: conninfo, logger: TestDatabase.quietLogger)
                let started = threadCPUSeconds()
                // Sampled while the connection lives: a backend that has exited is no longer counted.
                let serverBefore = CPUUsage.now()
                for n in 0..<perRound {
                    try target.append([event(n)], to: "device-bench-\(side)-r\(round)-d\(n % devices)", on: connection)
                }
                cpu.add(threadCPUSeconds() - started)
                serverCPU[side]!.add(CPUUsage.now().since(serverBefore).server)
            }
            clientCPU[side, default: 0] += cpu.total
            if side == "sealed" { sealedSeconds += seconds } else { clearSeconds += seconds }
        }
    }
    let total = Double(perRound * rounds)
    // Commits wait for their WAL to be flushed: bytes per event tell a costlier flush from more work.
    FileHandle.standardError.write(Data(("append_encrypted: WAL per event, clear \(Int(walBytes["clear"]! / total)) B, "
        + "sealed \(Int(walBytes["sealed"]! / total)) B; client CPU per event, clear \(Int(clientCPU["clear"]! / total * 1e6)) µs, "
        + "sealed \(Int(clientCPU["sealed"]! / total * 1e6)) µs; PostgreSQL CPU per event, clear \(Int(serverCPU["clear"]!.total / total * 1e6)) µs, "
        + "sealed \(Int(serverCPU["sealed"]!.total / total * 1e6)) µs; wall per event, clear \(Int(clearSeconds / total * 1e6)) µs, "
        + "sealed \(Int(sealedSeconds / total * 1e6)) µs\n").utf8))
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
