import Foundation
import LedgerDecisions
import LedgerDispatch
import LedgerDomain
import LedgerFolds

/// The timeline page: one self-contained HTML document (inline CSS and SVG; no script, font,
/// image or request to anywhere, which its Content-Security-Policy forbids outright), readable on
/// screen and on paper: every colour has words beside it, and print CSS drops the backgrounds.
///
/// For each trigger (the install, each re-attributing session), top to bottom: the drawing of its
/// candidates and windows (``TriggerChart``), its decisions (a redo's predecessor marked
/// superseded), the sends it waited for and how they ended, and the answers that came late; then
/// the SKAdNetwork windows (``SKANChart``), what Google was told, and the sends that need people.
struct TimelinePage {
    let timeline: DeviceTimeline

    init(_ timeline: DeviceTimeline) { self.timeline = timeline }

    /// Forbids everything external; only the page's own `<style>` element applies.
    static let contentSecurityPolicy = "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'"

    func render() -> String {
        let explanation = timeline.explanation
        let device = explanation.deviceStreamID
        var html = [
            "<!DOCTYPE html>",
            "<html lang=\"en\">",
            "<head>",
            "<meta charset=\"utf-8\">",
            "<meta http-equiv=\"Content-Security-Policy\" content=\"\(Self.contentSecurityPolicy)\">",
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">",
            "<title>\(HTMLText.escape("Attribution timeline of \(device)"))</title>",
            "<style>\(Self.css)</style>",
            "</head>",
            "<body>",
            "<header>",
            "<h1>Attribution timeline</h1>",
            "<p class=\"device\">\(HTMLText.escape(device))" + (explanation.appID.map { " · app " + HTMLText.escape($0) } ?? "") + "</p>",
            "<p class=\"legend\">● a click · ◆ a view · filled and ★ WINNER: the touch that got the credit · hollow and ✗: a loser, "
                + "with why it lost · band: the touch's lookback window, ending at the dashed line (the install or session)</p>",
            "</header>",
        ]
        if explanation.triggers.isEmpty {
            html.append("<p class=\"note\">No first open or session recorded: nothing to attribute.</p>")
        }
        for story in explanation.triggers { html.append(contentsOf: section(story)) }
        html.append("<section data-kind=\"skan\"><h2>SKAdNetwork conversion windows</h2>")
        html.append(SKANChart(state: timeline.skan).render())
        html.append("</section>")
        html.append(contentsOf: google(explanation.google))
        html.append(contentsOf: needingPeople(explanation.sendsNeedingPeople))
        html.append("<footer>Drawn from the explanation <code>ledger explain</code> prints for this device; "
            + "the decisions are as recorded, not decided again.</footer>")
        html += ["</body>", "</html>", ""]
        return html.joined(separator: "\n")
    }

    func section(_ story: AttributionExplanation.TriggerStory) -> [String] {
        let trigger = story.trigger
        let title = (trigger.kind == .install ? "Install" : "Session (re-attribution)") + " at "
            + AttributionExplanation.time(trigger.occurredAt)
        var html = [
            "<section data-kind=\"trigger\" data-trigger-kind=\"\(trigger.kind.rawValue)\" "
                + HTMLText.attribute("data-state", trigger.state) + ">",
            "<h2>\(HTMLText.escape(title))</h2>",
            "<p class=\"meta\">\(HTMLText.escape("event \(trigger.eventID.uuidString.lowercased()), position \(trigger.position)"))</p>",
            TriggerChart(story: story, windows: timeline.windows).render(),
            "<h3>Decisions</h3>",
        ]
        if story.decisions.isEmpty {
            html.append("<p class=\"note\">" + (trigger.state == "not_needed"
                ? "No decision needed: no deep link and no provider offered a touch."
                : "Not decided yet: waiting for the sends below or the app's deadline.") + "</p>")
        } else {
            html.append("<ol class=\"decisions\">")
            for (index, recorded) in story.decisions.enumerated() {
                let decision = recorded.decision
                let superseded = index < story.decisions.count - 1
                var words = "Decision \(decision.decisionID.uuidString.lowercased()) (\(decision.ruleVersion)), recorded "
                    + "\(AttributionExplanation.time(recorded.recordedAt)) at position \(recorded.position)"
                if let replaced = decision.supersedes { words += ", a redo superseding \(replaced.uuidString.lowercased())" }
                let winner = decision.winner.map { "Winner: " + AttributionExplanation.describe($0) } ?? "Winner: none (organic)"
                html.append("<li data-kind=\"decision\" data-superseded=\"\(superseded)\" class=\"\(superseded ? "superseded" : "current")\">"
                    + (superseded ? "<strong>SUPERSEDED</strong> " : "<strong>CURRENT</strong> ") + HTMLText.escape(words)
                    + "<br>" + HTMLText.escape(winner + " · \(decision.candidates.count) candidate(s) · inputs at positions "
                        + decision.inputPositions.map(String.init).joined(separator: ", ")) + "</li>")
            }
            html.append("</ol>")
        }
        html.append("<h3>Sends awaited</h3>")
        if trigger.sends.isEmpty {
            html.append("<p class=\"note\">None.</p>")
        } else {
            html.append("<ul class=\"sends\">")
            for send in trigger.sends {
                let ending = AttributionExplanation.ending(send.terminal)
                html.append("<li data-kind=\"send\" " + HTMLText.attribute("data-provider", send.provider.rawValue) + " "
                    + HTMLText.attribute("data-outcome", ending) + " class=\"send-\(ending)\">"
                    + HTMLText.escape("\(send.provider.rawValue): \(ending) (\(send.stream))") + "</li>")
            }
            html.append("</ul>")
        }
        if !trigger.lateAnswers.isEmpty {
            html.append("<h3>Late answers</h3><ul class=\"late\">")
            for late in trigger.lateAnswers {
                html.append("<li data-kind=\"late-answer\" data-offered-touch=\"\(late.offeredTouch)\">" + HTMLText.escape(
                    "\(late.provider?.rawValue ?? "apple_iad") \(late.type) at position \(late.position): "
                        + (late.offeredTouch ? "offered a touch the decision did not see" : "offered no touch")) + "</li>")
            }
            html.append("</ul>")
        }
        html.append("</section>")
        return html
    }

    func google(_ reports: [AttributionExplanation.GoogleReport]) -> [String] {
        guard !reports.isEmpty else { return [] }
        return ["<section data-kind=\"google\"><h2>Google cross-network reports</h2><ul>"]
            + reports.map { report in
                "<li data-kind=\"google-report\" " + HTMLText.attribute("data-state", report.state) + ">"
                    + HTMLText.escape("ad event \(report.adEventID): attributed=\(report.attributed ?? "-"), "
                        + AttributionExplanation.googleState(report.state)) + "</li>"
            } + ["</ul></section>"]
    }

    func needingPeople(_ sends: [SendNeedingPeople]) -> [String] {
        guard !sends.isEmpty else { return [] }
        var html = ["<section data-kind=\"sends-needing-people\"><h2>Sends that need people</h2><ul>"]
        for send in sends {
            let words: String = "\(send.provider.rawValue)/\(send.kind.rawValue) send \(send.sendID.uuidString.lowercased()): "
                + "\(send.state) at \(AttributionExplanation.time(send.at)) (\(send.rule))"
            html.append("<li data-kind=\"send-needing-people\" " + HTMLText.attribute("data-state", "\(send.state)") + ">"
                + HTMLText.escape(words) + "</li>")
        }
        return html + ["</ul></section>"]
    }

    /// Inline only (the policy allows nothing else). System fonts; print: black on white, no shadows.
    static let css = """
        body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;color:#1b1b1b;background:#fff;margin:24px;max-width:1140px}
        h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:0 0 4px}h3{font-size:14px;margin:14px 0 4px}
        header{border-bottom:2px solid #1b1b1b;padding-bottom:8px;margin-bottom:16px}
        .device{font-family:ui-monospace,monospace;margin:0}.legend,.meta,.note,footer{color:#555;font-size:12px;margin:4px 0}
        section{border:1px solid #ccc;border-radius:6px;padding:12px 14px;margin:0 0 16px}
        svg.chart{display:block;max-width:100%;height:auto;margin:8px 0}
        .window{fill:#dfe8f7;stroke:#5b7bb5;stroke-width:1}.window-label{font-size:11px;fill:#36507f}
        .trigger-line{stroke:#1b1b1b;stroke-width:2;stroke-dasharray:6 4}.trigger-label{font-size:12px;font-weight:600}
        .axis{stroke:#888}.tick{font-size:11px;fill:#555}.note{fill:#555}
        .candidate{stroke-width:2.5}.loser,.pending{fill:#fff}
        .source-google{stroke:#1a73e8}.source-apple_adservices{stroke:#333}.source-branch{stroke:#0a8f5a}.source-apple_iad{stroke:#a0522d}
        .winner{stroke:#1b1b1b;stroke-width:3}.winner.source-google{fill:#1a73e8}.winner.source-apple_adservices{fill:#333}
        .winner.source-branch{fill:#0a8f5a}.winner.source-apple_iad{fill:#a0522d}
        .label{font-size:12px;fill:#1b1b1b}.winner-label{font-weight:700}
        .skan-window{fill:#eef3e6;stroke:#6b8e23}.skan-window.locked{fill:#d6e4bf;stroke-width:2}.skan-name{font-size:12px;font-weight:600}
        li.superseded{color:#666;text-decoration:line-through;text-decoration-thickness:1px}
        li.superseded strong,li.current strong{text-decoration:none;display:inline-block;margin-right:4px}
        .send-failed,.send-cancelled{color:#a00}
        @media print{body{margin:0;max-width:none;color:#000}section{break-inside:avoid;border-color:#000}
        .window{fill:#eee;stroke:#000}.skan-window{fill:#f4f4f4;stroke:#000}.legend,.meta,.note,footer{color:#000}}
        """
}
