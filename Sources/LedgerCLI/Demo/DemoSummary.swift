import Foundation
import LedgerDecisions
import LedgerDomain
import LedgerFolds
import LedgerPostgres
import LedgerProjections
import LedgerProviders
import LedgerStore

/// What the demo wrote, read back from the ledger itself (not from the script's own counters), so
/// the summary is a report on the log.
struct DemoSummary: Codable {
    /// The log positions the demo's events span.
    var firstPosition: Int64
    var lastPosition: Int64
    var devices: [String]
    var events: Int
    var eventsByType: [String: Int]
    var sendsByProvider: [String: Int]
    var sendOutcomes: [String: Int]
    var expiredTokens: Int
    var decisionsByWinner: [String: Int]
    var installDecisions: Int
    var crossNetworkReports: [String: Int]
    var revenueByCurrency: [String: String]
    var skanWindowsUpdated: [String: String]
    /// What the fake providers refused or noted: a provider document's rule the ledger broke
    /// (none on a good day). Filled in from the fakes, not the log.
    var fakeProviderAnomalies: [String] = []

    enum CodingKeys: String, CodingKey {
        case firstPosition = "first_position"
        case lastPosition = "last_position"
        case devices, events
        case eventsByType = "events_by_type"
        case sendsByProvider = "sends_by_provider"
        case sendOutcomes = "send_outcomes"
        case expiredTokens = "expired_tokens"
        case decisionsByWinner = "decisions_by_winner"
        case installDecisions = "install_decisions"
        case crossNetworkReports = "cross_network_reports"
        case revenueByCurrency = "revenue_by_currency"
        case skanWindowsUpdated = "skan_windows_updated"
        case fakeProviderAnomalies = "fake_provider_anomalies"
    }

    /// Reads the events after `afterPosition` (the demo's) and the devices' SKAN states.
    static func read(after afterPosition: Int64, devices: [String], store: EventStore) async throws -> DemoSummary {
        let rows = try await store.pool.withConnection { connection in
            try EventStore.storedEvents(afterPosition: afterPosition, on: connection).map { ($0.position, $0.type, $0.data) }
        }
        let decoder = LedgerJSON.makeDecoder()
        var summary = DemoSummary(
            firstPosition: rows.first?.0 ?? afterPosition, lastPosition: rows.last?.0 ?? afterPosition, devices: devices,
            events: rows.count, eventsByType: [:], sendsByProvider: [:], sendOutcomes: [:], expiredTokens: 0,
            decisionsByWinner: [:], installDecisions: 0, crossNetworkReports: [:], revenueByCurrency: [:], skanWindowsUpdated: [:])
        var revenue: [String: Decimal] = [:]
        for (_, type, data) in rows {
            summary.eventsByType[type, default: 0] += 1
            switch type {
            case SendRequested.eventType:
                let request = try decoder.decode(SendRequested.self, from: data)
                summary.sendsByProvider[request.provider.rawValue, default: 0] += 1
                if request.kind == .crossNetwork {
                    summary.crossNetworkReports["attributed=\(request.parameters?["attributed"] ?? "?")", default: 0] += 1
                }
            case SendSucceeded.eventType, SendCancelled.eventType, SendOutcomeUnknown.eventType, SendParked.eventType:
                summary.sendOutcomes[type, default: 0] += 1
            case SendFailed.eventType:
                summary.sendOutcomes[type, default: 0] += 1
                if try decoder.decode(SendFailed.self, from: data).rule == "adservices_token_expired" { summary.expiredTokens += 1 }
            case AttributionDecided.eventType:
                let decision = try decoder.decode(AttributionDecided.self, from: data)
                summary.decisionsByWinner[decision.winner?.source.rawValue ?? "organic", default: 0] += 1
                if decision.triggerKind == .install { summary.installDecisions += 1 }
            case RevenueRecorded.eventType:
                // Only the money: the device's personal fields may be stored encrypted (docs/privacy.md).
                struct Revenue: Decodable { var revenue: Money }
                let recorded = try decoder.decode(Revenue.self, from: data)
                revenue[recorded.revenue.currency.rawValue, default: 0] += recorded.revenue.amount
            default:
                break
            }
        }
        summary.revenueByCurrency = revenue.mapValues { "\($0)" }
        let skan = SKANDeviceProjection(SKANDeviceReducer())
        for device in devices where device.hasPrefix("device-demo.ios/") {
            let state = try await skan.state(of: device, store: store).skan
            let windows = [("p0", state.p0Coarse), ("p1", state.p1Coarse), ("p2", state.p2Coarse)]
                .compactMap { name, value in value.map { "\(name)=\($0)" } }  // the case name: low, medium, high
            summary.skanWindowsUpdated[device] = "fine=\(state.conversionValue.map(String.init) ?? "-") " + windows.joined(separator: " ")
        }
        return summary
    }

    /// The summary as text, with where to look next.
    func render(database: String) -> String {
        func list(_ counts: [String: Int]) -> String {
            counts.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
        }
        var lines = [
            "The demo day is in the ledger (log positions \(firstPosition)–\(lastPosition), \(events) events).",
            "",
            "  Devices:      \(devices.count) (\(devices.filter { $0.contains("demo.ios") }.count) iOS, "
                + "\(devices.filter { $0.contains("demo.android") }.count) Android)",
            "  Sends:        \(list(sendsByProvider))",
            "  Outcomes:     \(list(sendOutcomes))" + (expiredTokens > 0 ? " (\(expiredTokens) AdServices token expired, never sent)" : ""),
            "  Decisions:    \(installDecisions) installs, \(decisionsByWinner.values.reduce(0, +) - installDecisions) re-attributions; "
                + "winners: \(list(decisionsByWinner))",
            "  Google told:  \(list(crossNetworkReports))",
            "  Revenue:      " + revenueByCurrency.sorted { $0.key < $1.key }.map { "\($0.value) \($0.key)" }.joined(separator: ", "),
        ]
        for (device, windows) in skanWindowsUpdated.sorted(by: { $0.key < $1.key }).prefix(2) {
            lines.append("  SKAN:         \(device): \(windows)")
        }
        if !fakeProviderAnomalies.isEmpty {
            lines.append("  Rules broken: \(fakeProviderAnomalies.count), as the fake providers saw them:")
            lines += fakeProviderAnomalies.prefix(5).map { "                \($0)" }
        }
        let first = devices.first ?? "device-…"
        lines += [
            "",
            "Where to look next (\(database)):",
            "  ledger explain \(first)        # who got credit, every candidate and why",
            "  ledger explain \(devices.dropFirst(2).first ?? first)",
            "  ledger explain --html \(first) --output timeline.html   # the same, drawn: open it in a browser",
            "  ledger projections status                # the per-device states and their lag",
            "  ledger verify                            # prove the log is untouched",
            "  docs/attribution.md, docs/dispatch.md    # the rules behind what you just saw",
        ]
        return lines.joined(separator: "\n")
    }
}
