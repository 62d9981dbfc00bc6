import Foundation
import Synchronization

/// A progress bar on stderr for long work: done/total, rate, and time left.
///
/// Redraws in place on a terminal; elsewhere (CI logs) prints a line at most every few seconds.
/// Safe to call from any thread.
final class ProgressBar: Sendable {
    private struct State {
        var started = Date()
        var lastDraw = Date.distantPast
    }
    private let label: String
    private let unit: String
    private let state = Mutex(State())
    private let isTerminal = isatty(STDERR_FILENO) == 1

    init(label: String, unit: String) {
        self.label = label
        self.unit = unit
    }

    /// Reports progress; redraws if enough time passed since the last draw. `detail` (a phase,
    /// say) is shown after the time left.
    func update(done: Int, total: Int, detail: String? = nil) {
        let line: String? = state.withLock { state in
            let now = Date()
            let interval = isTerminal ? 0.1 : 5
            guard now.timeIntervalSince(state.lastDraw) >= interval || done >= total else { return nil }
            state.lastDraw = now
            let elapsed = max(now.timeIntervalSince(state.started), 0.001)
            let rate = Double(done) / elapsed
            let fraction = total > 0 ? min(1, Double(done) / Double(total)) : 1
            let width = 30
            let filled = Int(fraction * Double(width))
            let bar = String(repeating: "#", count: filled) + String(repeating: ".", count: width - filled)
            let left = rate > 0 && total > done ? Int(Double(total - done) / rate) : 0
            return "\(label) [\(bar)] \(done)/\(total) \(unit)  \(Int(rate))/s  \(left)s left"
                + (detail.map { "  (\($0))" } ?? "")
        }
        guard let line else { return }
        FileHandle.standardError.write(Data((isTerminal ? "\r\u{1B}[K" + line : line + "\n").utf8))
    }

    /// Ends the bar's line.
    func finish() {
        if isTerminal { FileHandle.standardError.write(Data("\n".utf8)) }
    }
}
