import Foundation

/// CPU time used so far by this process and by every PostgreSQL process on the machine: the
/// drain benchmark prints both per send, so a change can be judged by where it moved the cost
/// (the worker's side or the server's), not only by the rate.
struct CPUUsage {
    /// Seconds of CPU this process has used (user + system).
    var client: Double
    /// Seconds of CPU each PostgreSQL process has used, by pid.
    var server: [Int32: Double]

    /// The current usage.
    static func now() -> CPUUsage {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        let client = Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec)
            + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
        return CPUUsage(client: client, server: postgresProcesses())
    }

    /// CPU seconds used between `earlier` and `self`: the client's, and the server's summed over
    /// the processes alive now (a process started since counts from zero; one that ended since
    /// is missed, so the pools are closed only after the second sample).
    func since(_ earlier: CPUUsage) -> (client: Double, server: Double) {
        let server = self.server.reduce(0.0) { sum, entry in sum + entry.value - (earlier.server[entry.key] ?? 0) }
        return (client - earlier.client, server)
    }

    private static func postgresProcesses() -> [Int32: Double] {
        let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
        var result: [Int32: Double] = [:]
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc") else { return result }
        for entry in entries {
            guard let pid = Int32(entry),
                  let stat = try? String(contentsOfFile: "/proc/\(entry)/stat", encoding: .utf8),
                  stat.contains("(postgres)"),
                  let close = stat.lastIndex(of: ")")
            else { continue }
            // Fields after "(comm)": state is field 3; utime and stime are fields 14 and 15.
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { continue }
            result[pid] = (user + system) / ticks
        }
        return result
    }
}

/// The CPU one side of a benchmark used: its own threads', and (when sampled) every PostgreSQL
/// process's.
final class SideCPU: Sendable {
    let client = CPUTimeBox()
    let server = CPUTimeBox()
    /// The writer's own backend's share of `server` (the rest is other PostgreSQL processes:
    /// the WAL writer, other sessions such as a notifier's, the checkpointer).
    let backend = CPUTimeBox()

    /// Runs `body`, adding the calling thread's CPU and, with `server`, PostgreSQL's. Run it
    /// while the side's connection lives: a backend that has exited is no longer counted. With
    /// several writers sampling at once, PostgreSQL's would be counted once per writer: pass false.
    func measure(server sampleServer: Bool = true, backendPID: Int32? = nil, _ body: () throws -> Void) rethrows {
        let serverBefore = sampleServer ? CPUUsage.now() : nil
        let started = threadCPUSeconds()
        try body()
        client.add(threadCPUSeconds() - started)
        if let serverBefore {
            let serverAfter = CPUUsage.now()
            server.add(serverAfter.since(serverBefore).server)
            if let backendPID, let after = serverAfter.server[backendPID] {
                backend.add(after - (serverBefore.server[backendPID] ?? 0))
            }
        }
    }
}
