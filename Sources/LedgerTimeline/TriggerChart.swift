import Foundation
import LedgerDecisions
import LedgerDomain
import LedgerFolds

/// The SVG drawing of one trigger (an install or a session): a row per candidate touch with its
/// lookback window as a band ending at the trigger, the touch as a marker (a circle for a click,
/// a diamond for a view; filled for the winner, hollow for a loser), and beside every marker the
/// words of its outcome, so a printout in black and white says as much as the colours.
///
/// Elements carry stable attributes for tools and tests: `data-kind` (`candidate`, `window`,
/// `trigger-time`), `data-winner`, `data-outcome` (a `CandidateOutcome`, or `pending` before a
/// decision), `data-source` and `data-interaction`.
struct TriggerChart {
    /// One touch as drawn: the touch, what became of it (nil: not decided yet) and its window.
    struct Row {
        var touch: AttributionTouch
        var outcome: CandidateOutcome?
        var window: TimeInterval
    }

    let trigger: AttributionProcessReducer.Trigger
    let rows: [Row]

    static let width = 1100.0, margin = 16.0, top = 46.0, rowHeight = 48.0, bottom = 34.0

    /// The rows of `story`: its current decision's candidates with their outcomes or, before any
    /// decision, the touches offered so far.
    init(story: AttributionExplanation.TriggerStory, windows: AttributionWindows) {
        trigger = story.trigger
        let offered = story.trigger.candidates
        func window(of touch: AttributionTouch) -> TimeInterval {
            // The recorded touch of an undated candidate carries the time the rule placed it at.
            let match = offered.first { $0.touch == touch }
                ?? offered.first { $0.touch.source == touch.source && $0.touch.interaction == touch.interaction
                    && $0.touch.campaignID == touch.campaignID && $0.touch.adEventID == touch.adEventID }
            return windows.window(for: match ?? TouchCandidate(touch: touch, position: 0))
        }
        if let current = story.decisions.last?.decision {
            rows = current.candidates.map { Row(touch: $0.touch, outcome: $0.outcome, window: window(of: $0.touch)) }
        } else {
            rows = offered.map { Row(touch: $0.touch, outcome: nil, window: windows.window(for: $0)) }
        }
    }

    /// The longest time before the trigger drawn: the longest window or the earliest touch (at least an hour).
    var reach: TimeInterval {
        rows.map { max($0.window, trigger.occurredAt.timeIntervalSince($0.touch.time)) }.reduce(3600, max)
    }

    /// The longest time after the trigger a touch is stamped with (0 when none is: the usual case).
    var overshoot: TimeInterval {
        rows.map { $0.touch.time.timeIntervalSince(trigger.occurredAt) }.reduce(0, max)
    }

    /// Where the trigger's line is: near the right edge, with room after it only for touches
    /// stamped after the trigger.
    var triggerX: Double {
        let right = Self.width - Self.margin
        return overshoot > 0 ? right - 0.16 * (right - Self.margin) : right - 0.03 * (right - Self.margin)
    }

    /// The time axis counts back from the trigger on a logarithmic scale (in minutes), so that a
    /// touch an hour before the install and one 20 days before both stand apart from the trigger
    /// and from each other; a touch stamped after the trigger sits right of its line.
    func x(_ date: Date) -> Double {
        let offset = date.timeIntervalSince(trigger.occurredAt)
        func scaled(_ seconds: TimeInterval, _ limit: TimeInterval) -> Double { log1p(seconds / 60) / log1p(max(limit, 60) / 60) }
        if offset <= 0 { return triggerX - (triggerX - Self.margin) * min(scaled(-offset, reach), 1) }
        let room = Self.width - Self.margin - triggerX
        return triggerX + room * 0.85 * min(scaled(offset, overshoot), 1)
    }

    func render() -> String {
        // A trigger no touch was offered for needs one line, not a row.
        let rowsHeight = rows.isEmpty ? 30 : Double(rows.count) * Self.rowHeight
        let height = Self.top + rowsHeight + Self.bottom
        let what = trigger.kind == .install ? "install" : "session"
        var svg = ["<svg class=\"chart\" viewBox=\"0 0 \(Self.width) \(height)\" width=\"\(Int(Self.width))\" height=\"\(Int(height))\" "
            + "role=\"img\" aria-label=\"\(HTMLText.escape("The \(what)'s candidate touches and their lookback windows"))\">"]
        let triggerX = self.triggerX
        let axisY = Self.top + rowsHeight
        // The trigger: a dashed line across every row, named at the top.
        svg.append("<line data-kind=\"trigger-time\" class=\"trigger-line\" x1=\"\(f(triggerX))\" y1=\"\(f(Self.top - 14))\" "
            + "x2=\"\(f(triggerX))\" y2=\"\(f(axisY))\"/>")
        svg.append(text("\(what) \(AttributionExplanation.time(trigger.occurredAt))", x: triggerX, y: Self.top - 20,
                         anchor: triggerX > Self.width * 0.7 ? "end" : "start", cssClass: "trigger-label"))
        svg.append(text("← earlier · time before the \(what), logarithmic", x: Self.margin, y: Self.top - 20, cssClass: "tick"))
        if rows.isEmpty {
            svg.append(text("No touch offered: nothing to draw but the \(what).", x: Self.margin, y: Self.top + 18, cssClass: "note"))
        }
        for (index, row) in rows.enumerated() {
            svg.append(contentsOf: draw(row, top: Self.top + Double(index) * Self.rowHeight))
        }
        // The axis: time before the trigger, ticks where people count (an hour, a day, a week, a month).
        svg.append("<line class=\"axis\" x1=\"\(f(Self.margin))\" y1=\"\(f(axisY + 4))\" x2=\"\(f(Self.width - Self.margin))\" y2=\"\(f(axisY + 4))\"/>")
        let ticks: [(TimeInterval, String)] = [(3600, "1 h"), (86_400, "1 d"), (7 * 86_400, "7 d"), (30 * 86_400, "30 d"),
                                               (90 * 86_400, "90 d")]
        for (seconds, name) in ticks where seconds <= reach * 1.0001 {
            let tickX = x(trigger.occurredAt.addingTimeInterval(-seconds))
            svg.append("<line class=\"axis\" x1=\"\(f(tickX))\" y1=\"\(f(axisY))\" x2=\"\(f(tickX))\" y2=\"\(f(axisY + 8))\"/>")
            svg.append(text("\(name) before", x: tickX, y: axisY + 22, anchor: tickX < Self.margin + 40 ? "start" : "middle",
                            cssClass: "tick"))
        }
        svg.append("</svg>")
        return svg.joined(separator: "\n")
    }

    func draw(_ row: Row, top: Double) -> [String] {
        let touch = row.touch
        let start = trigger.occurredAt.addingTimeInterval(-row.window)
        let bandX = x(start), bandEnd = x(trigger.occurredAt)
        let won = row.outcome == .won
        let source = touch.source.rawValue
        var parts: [String] = []
        parts.append("<rect data-kind=\"window\" \(HTMLText.attribute("data-source", source)) class=\"window\" x=\"\(f(bandX))\" "
            + "y=\"\(f(top + 4))\" width=\"\(f(max(bandEnd - bandX, 1)))\" height=\"14\"><title>"
            + HTMLText.escape("\(source) \(touch.interaction.rawValue) lookback window: \(Self.duration(row.window)) before the trigger")
            + "</title></rect>")
        if bandEnd - bandX > 150 {
            parts.append(text("\(Self.duration(row.window)) \(touch.interaction.rawValue) window", x: bandX + 4, y: top + 15,
                              cssClass: "window-label"))
        }
        let markerX = x(touch.time), markerY = top + 11
        let size = won ? 8.0 : 6.0
        let attributes = "data-kind=\"candidate\" data-winner=\"\(won)\" "
            + HTMLText.attribute("data-outcome", row.outcome?.rawValue ?? "pending") + " "
            + HTMLText.attribute("data-source", source) + " " + HTMLText.attribute("data-interaction", touch.interaction.rawValue)
            + " class=\"candidate source-\(HTMLText.escape(source))\(won ? " winner" : row.outcome == nil ? " pending" : " loser")\""
        let tooltip = "<title>" + HTMLText.escape(AttributionExplanation.describe(touch)) + "</title>"
        if touch.interaction == .view {
            let points = [(markerX, markerY - size), (markerX + size, markerY), (markerX, markerY + size), (markerX - size, markerY)]
                .map { "\(f($0.0)),\(f($0.1))" }.joined(separator: " ")
            parts.append("<polygon \(attributes) points=\"\(points)\">\(tooltip)</polygon>")
        } else {
            parts.append("<circle \(attributes) cx=\"\(f(markerX))\" cy=\"\(f(markerY))\" r=\"\(f(size))\">\(tooltip)</circle>")
        }
        let verdict: String
        switch row.outcome {
        case .won?: verdict = "★ WINNER"
        case let outcome?: verdict = "✗ " + AttributionExplanation.reason(outcome)
        case nil: verdict = "• offered; not decided yet"
        }
        parts.append(text("\(verdict) — \(AttributionExplanation.describe(touch))", x: Self.margin, y: top + 36,
                          cssClass: won ? "label winner-label" : "label"))
        return parts
    }

    func text(_ content: String, x: Double, y: Double, anchor: String = "start", cssClass: String) -> String {
        "<text class=\"\(cssClass)\" x=\"\(f(x))\" y=\"\(f(y))\" text-anchor=\"\(anchor)\">\(HTMLText.escape(content))</text>"
    }

    func f(_ value: Double) -> String { String(format: "%.1f", value) }

    /// `30 d`, `24 h`, `90 min`: a window's length as people say it.
    static func duration(_ seconds: TimeInterval) -> String {
        if seconds == 0 { return "0" }
        if seconds >= 2 * 86_400, seconds.truncatingRemainder(dividingBy: 86_400) == 0 { return "\(Int(seconds / 86_400)) d" }
        if seconds >= 3600, seconds.truncatingRemainder(dividingBy: 3600) == 0 { return "\(Int(seconds / 3600)) h" }
        return "\(Int(seconds / 60)) min"
    }
}
