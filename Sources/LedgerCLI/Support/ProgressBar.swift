import Foundation
import LedgerLogging
import Synchronization

/// Whether a command shows a progress bar: only to a person (stderr is a terminal), never with
/// `--json` (a script reads the output), and only for work of more than `threshold` items (a bar
/// that flashes by helps no one). Elsewhere, stderr holds only the command's own lines and log
/// records, so a JSON log stays JSON.
enum ProgressDisplay {
    /// The lines `ledger append` reads before it shows progress: below it, the work is quick.
    static let appendThreshold = 5000

    /// Whether to show progress for `items` items (done so far, or all when known).
    static func shows(stderrIsTerminal: Bool, json: Bool, items: Int, threshold: Int = 0) -> Bool {
        stderrIsTerminal && !json && items > threshold
    }

    /// A bar for this process when ``shows(stderrIsTerminal:json:items:threshold:)`` says so, else nil.
    static func bar(label: String, unit: String, json: Bool = false, items: Int = 1, threshold: Int = 0) -> ProgressBar? {
        shows(stderrIsTerminal: ProcessLogging.stderrIsTerminal, json: json, items: items, threshold: threshold)
            ? ProgressBar(label: label, unit: unit) : nil
    }
}

/// A progress bar on stderr for long work: done/total, rate, and time left (or, with no total
/// known, done and rate).
///
/// Redraws in place on a terminal; elsewhere (CI logs) prints a line at most every few seconds.
/// Safe to call from any thread.
final class ProgressBar: Sendable {
    private struct State {
        var started = Date()
        var lastDraw = Date.distantPast
        /// The first `done` reported: the rate counts what was done since the bar appeared
        /// (`append` shows one only after its first few thousand lines).
        var firstDone: Int?
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
            guard now.timeIntervalSince(state.lastDraw) >= interval || (total > 0 && done >= total) else { return nil }
            state.lastDraw = now
            let elapsed = max(now.timeIntervalSince(state.started), 0.001)
            let firstDone = state.firstDone ?? done
            state.firstDone = firstDone
            let rate = Double(done - firstDone) / elapsed
            guard total > 0 else {
                return "\(label) \(done) \(unit)  \(Int(rate))/s" + (detail.map { "  (\($0))" } ?? "")
            }
            let fraction = total > 0 ? min(1, Double(done) / Double(total)) : 1
            let width = 30
            let filled = Int(fraction * Double(width))
            let bar = String(repeating: "#", count: filled) + String(repeating: ".", count: width - filled)
            let left = rate > 0 && total > done ? Int(Double(total - done) / rate) : 0
            return "\(label) [\(bar)] \(done)/\(total) \(unit)  \(Int(rate))/s  \(left)s left"
                + (detail.map { "  (\($0))" } ?? "")
        }
        guard let line else { return }
        StandardErrorLines.shared.write(isTerminal ? "\r\u{1B}[K" + line : line + "\n")
    }

    /// Ends the bar's line.
    func finish() {
        if isTerminal { StandardErrorLines.shared.write("\n") }
    }
}
