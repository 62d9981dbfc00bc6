import Foundation

/// The metrics table of docs/operations.md ("Metrics") and the Grafana dashboard of
/// ops/deploy/grafana, read from the repository, so that what the tests look for in a scrape is
/// what operators are told to watch and what the dashboard queries.
enum MetricsDocument {
    /// One row of the table.
    struct Series: Equatable {
        var name: String
        var type: String
        /// `serve` or `worker`.
        var exportedBy: String
    }

    static let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// The rows of the table whose header is `| series | type | labels | exported by | alert on |`.
    static func table() throws -> [Series] {
        let text = try String(contentsOf: repositoryRoot.appendingPathComponent("docs/operations.md"), encoding: .utf8)
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        guard let header = lines.firstIndex(where: { $0.hasPrefix("| series | type | labels | exported by | alert on |") }) else {
            return []
        }
        var rows: [Series] = []
        for line in lines[(header + 2)...] {
            guard line.hasPrefix("|") else { break }
            let cells = line.split(separator: "|", omittingEmptySubsequences: false).dropFirst()
                .map { $0.trimmingCharacters(in: .whitespaces) }
            guard cells.count >= 5 else { continue }
            rows.append(Series(name: cells[0].trimmingCharacters(in: CharacterSet(charactersIn: "`")), type: cells[1],
                               exportedBy: cells[3]))
        }
        return rows
    }

    /// The dashboard's JSON object.
    static func dashboard() throws -> [String: Any] {
        let data = try Data(contentsOf: repositoryRoot.appendingPathComponent("ops/deploy/grafana/ledger-dashboard.json"))
        return try JSONSerialization.jsonObject(with: data) as? [String: Any] ?? [:]
    }

    /// Every panel of the dashboard, those inside collapsed rows included.
    static func panels(of dashboard: [String: Any]) -> [[String: Any]] {
        let top = dashboard["panels"] as? [[String: Any]] ?? []
        return top.flatMap { [$0] + ($0["panels"] as? [[String: Any]] ?? []) }
    }

    /// Every `ledger_…` metric name in the `expr` of every target of every panel, with the panel's
    /// title.
    static func dashboardSeries() throws -> [(panel: String, name: String)] {
        var found: [(panel: String, name: String)] = []
        let pattern = try NSRegularExpression(pattern: "ledger_[a-z0-9_]+")
        for panel in panels(of: try dashboard()) {
            for target in panel["targets"] as? [[String: Any]] ?? [] {
                let expr = target["expr"] as? String ?? ""
                for match in pattern.matches(in: expr, range: NSRange(expr.startIndex..., in: expr)) {
                    found.append((panel["title"] as? String ?? "?", String(expr[Range(match.range, in: expr)!])))
                }
            }
        }
        return found
    }

    /// The table's row for a name a query uses: the name itself, or a histogram's `_bucket`,
    /// `_sum` or `_count`.
    static func row(for name: String, in table: [Series]) -> Series? {
        if let row = table.first(where: { $0.name == name }) { return row }
        for suffix in ["_bucket", "_sum", "_count"] where name.hasSuffix(suffix) {
            let base = String(name.dropLast(suffix.count))
            if let row = table.first(where: { $0.name == base && $0.type == "histogram" }) { return row }
        }
        return nil
    }

    /// The names of the samples in a Prometheus text scrape (`name{labels} value` or `name value`).
    static func sampleNames(in scrape: String) -> Set<String> {
        var names: Set<String> = []
        for line in scrape.split(separator: "\n") where !line.hasPrefix("#") {
            let name = line.prefix { $0 != "{" && $0 != " " }
            if !name.isEmpty { names.insert(String(name)) }
        }
        return names
    }

    /// The names a series of the table shows as in a scrape: a histogram's three, or its own.
    static func exportedNames(of series: Series) -> [String] {
        series.type == "histogram" ? ["_bucket", "_sum", "_count"].map { series.name + $0 } : [series.name]
    }

    /// The table's series of `process` that `scrape` lacks.
    static func missing(from scrape: String, process: String, table: [Series]) -> [String] {
        let names = sampleNames(in: scrape)
        return table.filter { $0.exportedBy == process }.flatMap(exportedNames(of:)).filter { !names.contains($0) }
    }

    /// The dashboard's queried names exported by `process` (by the table) that `scrape` lacks.
    static func dashboardMissing(from scrape: String, process: String, table: [Series]) throws -> [String] {
        let names = sampleNames(in: scrape)
        return try dashboardSeries().filter { row(for: $0.name, in: table)?.exportedBy == process }
            .filter { !names.contains($0.name) }.map { "\($0.panel): \($0.name)" }
    }
}
