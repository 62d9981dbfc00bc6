import Foundation
import LedgerDecisions
import LedgerProviders

/// The SVG drawing of a device's SKAdNetwork 4 conversion windows, from its first SKAdNetwork
/// call: p0 [0, 48 h), p1 [48 h, 7 d) and p2 [7 d, 35 d) as bands (`data-kind="skan-window"`,
/// `data-window`, `data-coarse`, `data-locked`), each with its values written under it: the fine
/// value (p0 only, as SKAdNetwork 4 keeps it), the coarse value, the lock and the revenue counted.
struct SKANChart {
    let state: SKANDeviceState

    static let width = 1100.0, margin = 16.0, bandTop = 28.0, bandHeight = 22.0, lineHeight = 20.0

    /// The three windows and their bounds in seconds after the first call.
    static let windows: [(window: SKANWindow, start: Int64, end: Int64)] = [
        (.p0, 0, SKANWindow.firstWindowEnd), (.p1, SKANWindow.firstWindowEnd, SKANWindow.secondWindowEnd),
        (.p2, SKANWindow.secondWindowEnd, SKANWindow.thirdWindowEnd),
    ]

    func x(_ seconds: Int64) -> Double {
        Self.margin + Double(seconds) / Double(SKANWindow.thirdWindowEnd) * (Self.width - 2 * Self.margin)
    }

    func render() -> String {
        guard let first = state.firstCallTimestamp, state.isRegistered else {
            return "<p class=\"note\" data-kind=\"skan-unregistered\">The app never registered this device with SKAdNetwork.</p>"
        }
        let height = Self.bandTop + Self.bandHeight + 14 + Double(Self.windows.count) * Self.lineHeight + 8
        var svg = ["<svg class=\"chart\" viewBox=\"0 0 \(Self.width) \(height)\" width=\"\(Int(Self.width))\" height=\"\(Int(height))\" "
            + "role=\"img\" aria-label=\"SKAdNetwork 4 conversion windows and their values\">"]
        let registered = Date(timeIntervalSince1970: TimeInterval(first))
        svg.append("<text class=\"tick\" x=\"\(f(Self.margin))\" y=\"18\">"
            + HTMLText.escape("first SKAdNetwork call \(AttributionExplanation.time(registered))") + "</text>")
        svg.append("<text class=\"tick\" x=\"\(f(Self.width - Self.margin))\" y=\"18\" text-anchor=\"end\">"
            + HTMLText.escape("+35 d \(AttributionExplanation.time(registered.addingTimeInterval(TimeInterval(SKANWindow.thirdWindowEnd))))")
            + "</text>")
        for (index, entry) in Self.windows.enumerated() {
            let coarse = state.coarse(entry.window).map { "\($0)" }  // the case name: low, medium, high
            let lock = state.windowLock(entry.window)
            let startX = x(entry.start), endX = x(entry.end)
            svg.append("<rect data-kind=\"skan-window\" data-window=\"\(entry.window.rawValue)\" "
                + HTMLText.attribute("data-coarse", coarse ?? "none") + " data-locked=\"\(lock != nil)\" "
                + "class=\"skan-window skan-\(entry.window.rawValue)\(lock != nil ? " locked" : "")\" x=\"\(f(startX))\" "
                + "y=\"\(f(Self.bandTop))\" width=\"\(f(endX - startX - 2))\" height=\"\(f(Self.bandHeight))\"/>")
            svg.append("<text class=\"skan-name\" x=\"\(f(startX + 4))\" y=\"\(f(Self.bandTop + 15))\">\(entry.window.rawValue)</text>")
            var words = ["\(entry.window.rawValue) [\(TriggerChart.duration(TimeInterval(entry.start))), "
                + "\(TriggerChart.duration(TimeInterval(entry.end))))"]
            if entry.window == .p0 { words.append("fine value \(state.conversionValue.map(String.init) ?? "none")") }
            words.append("coarse value \(coarse ?? "none")")
            if let lock { words.append("locked \(AttributionExplanation.time(Date(timeIntervalSince1970: TimeInterval(lock))))") }
            let revenue = revenueText(entry.window)
            if !revenue.isEmpty { words.append("revenue \(revenue)") }
            svg.append("<text class=\"label\" x=\"\(f(Self.margin))\" y=\"\(f(Self.bandTop + Self.bandHeight + 18 + Double(index) * Self.lineHeight))\">"
                + HTMLText.escape(words.joined(separator: " · ")) + "</text>")
        }
        svg.append("</svg>")
        return svg.joined(separator: "\n")
    }

    func revenueText(_ window: SKANWindow) -> String {
        let (iap, ads): ([String: Decimal], [String: Decimal]) = switch window {
        case .p0: (state.p0TotalIAPRevenue, state.p0TotalAdMonRevenue)
        case .p1: (state.p1TotalIAPRevenue, state.p1TotalAdMonRevenue)
        case .p2: (state.p2TotalIAPRevenue, state.p2TotalAdMonRevenue)
        case .over: ([:], [:])
        }
        func list(_ amounts: [String: Decimal]) -> [String] { amounts.sorted { $0.key < $1.key }.map { "\($0.value) \($0.key)" } }
        return (list(iap).map { "\($0) in-app" } + list(ads).map { "\($0) ads" }).joined(separator: ", ")
    }

    func f(_ value: Double) -> String { String(format: "%.1f", value) }
}
