import Metrics

/// The facade's swift-metrics instruments. Labels hold catalog type names and rule ids only
/// (bounded sets), never ids or values.
///
/// - `ledger_facts_recorded_total{type, outcome}`: outcome `appended` or `duplicate`;
/// - `ledger_facts_refused_total{type, rule}`: refused by a rule or an id conflict;
/// - `ledger_facts_failed_total{type}`: the database failed;
/// - `ledger_fact_record_duration_seconds{type}`: how long a recording took (a timer).
struct LedgerFacadeMetrics: Sendable {
    func recorded(type: String, duplicate: Bool, duration: Duration) {
        Counter(label: "ledger_facts_recorded_total", dimensions: [("type", type), ("outcome", duplicate ? "duplicate" : "appended")])
            .increment()
        Timer(label: "ledger_fact_record_duration_seconds", dimensions: [("type", type)]).record(duration: duration)
    }

    func refused(type: String, rule: String) {
        Counter(label: "ledger_facts_refused_total", dimensions: [("type", type), ("rule", rule)]).increment()
    }

    func failed(type: String) {
        Counter(label: "ledger_facts_failed_total", dimensions: [("type", type)]).increment()
    }
}
