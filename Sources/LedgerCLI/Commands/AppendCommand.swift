import ArgumentParser
import AttributionLedger
import Foundation
import LedgerConfiguration
import LedgerDecisions
import LedgerDomain
import LedgerHTTPAPI
import LedgerPostgres
import LedgerPrivateCluster

/// `ledger append`: JSON lines on stdin → device facts, each validated and idempotent.
struct AppendCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "append",
        abstract: "Record device facts from JSON lines on stdin; prints how many were accepted and why others were refused.",
        discussion: helpText("""
            One fact per line, the HTTP API's event shape plus the app:
              {"app": "com.example.game", "device_id": "install-7f3a", "id": "<uuid>", "type": "FirstOpen",
               "occurred_at": "2026-11-23T10:00:00Z", "data": {…}, "schema_version": 1, "actor": "import"}
            (schema_version and actor are optional; the catalog is in docs/events.md). A SKAdNetwork
            postback a network forwarded is a line with the postback's JSON as a string, kept byte
            for byte, and the network:
              {"app": "com.example.game", "network": "example-network", "skan_postback": "{\"version\":\"4.0\",…}"}
            An AdAttributionKit postback's stanza goes under "aak_postback" the same way
            (development-key postbacks only for apps whose apple_postbacks.development_keys is true).
            (verified, deduplicated and decoded as docs/skan-postbacks.md says; an invalid one is
            refused here and still kept as a rejected postback). Each accepted
            line is recorded with the sends it causes, in its own transaction; a line whose id was
            recorded before with the same content is accepted as a duplicate and writes nothing; a
            refused line writes nothing and is reported with its line number, field and rule. The
            providers each app's facts are sent to come from the apps file --apps-file /
            LEDGER_APPS_FILE names, else LEDGER_ATTRIBUTION_SETTINGS (docs/configuration.md).

            Exit codes: 0 every line accepted, 10 some lines refused, 3 the database is unreachable.

            Examples:
              ledger append < facts.jsonl
              ledger append --json < facts.jsonl     # the summary and refusals as JSON
            """)
    )

    @OptionGroup var database: DatabaseOptions

    @OptionGroup var apps: AppsFileOptions

    @Flag(help: "Print the summary as JSON.")
    var json = false

    struct Refusal: Encodable {
        var line: Int
        var field: String
        var rule: String
        var message: String
    }

    func run() async throws {
        var refusals: [Refusal] = []
        try await reportingFailures {
            let logger = makeLogger("ledger.append")
            let target = try database.resolve(logger: logger)
            let pool = PostgresPool(conninfo: target.conninfo, maxConnections: 2, logger: logger)
            defer { pool.close() }
            let configuration = try apps.load(command: "append")
            let ledger = AttributionLedger(
                pool: pool, settings: try configured { () throws(ConfigurationError) in try configuration.attributionSettings() },
                defaultActor: "ledger-append", logger: logger)
            let applePostbacks = try configured { () throws(ConfigurationError) in try configuration.applePostbackSettings() }
            var accepted = 0
            var duplicates = 0
            var number = 0
            // Past a few thousand lines, a bar: of stdin's bytes when it is a file, else a count.
            let inputBytes = Self.standardInputFileSize()
            var bytesRead = 0
            var bar: ProgressBar?
            while let line = readLine(strippingNewline: true) {
                number += 1
                bytesRead += line.utf8.count + 1
                if bar == nil, number == ProgressDisplay.appendThreshold + 1 {
                    bar = ProgressDisplay.bar(label: "append", unit: inputBytes == nil ? "lines" : "bytes", json: json,
                                              items: number, threshold: ProgressDisplay.appendThreshold)
                }
                if let bar {
                    if let inputBytes {
                        bar.update(done: min(bytesRead, inputBytes), total: inputBytes, detail: "\(number) lines")
                    } else {
                        bar.update(done: number, total: 0)
                    }
                }
                if line.trimmingCharacters(in: .whitespaces).isEmpty { continue }
                do {
                    if let postback = try Self.postback(line) {
                        let receipt = postback.key == "aak_postback"
                            ? try await ledger.ingestAAKPostback(
                                raw: postback.raw, app: postback.app, network: postback.network, receivedAt: Date(),
                                allowDevelopmentKeys: applePostbacks.developmentKeyApps.contains(postback.app),
                                eventID: postback.id ?? UUID())
                            : try await ledger.ingestSKANPostback(
                                raw: postback.raw, app: postback.app, network: postback.network, receivedAt: Date(),
                                eventID: postback.id ?? UUID())
                        accepted += 1
                        if receipt.wasAlreadyStored { duplicates += 1 }
                        continue
                    }
                    let recorded = try await ledger.record(try Self.prepare(line, ledger: ledger))
                    accepted += 1
                    if recorded.wasDuplicate { duplicates += 1 }
                } catch let error as AttributionLedgerError {
                    refusals.append(Refusal(line: number, field: error.field ?? "-", rule: error.rule, message: error.message))
                } catch let refusal as LineRefusal {
                    refusals.append(Refusal(line: number, field: refusal.field, rule: refusal.rule, message: refusal.message))
                }
            }
            bar?.finish()
            if json {
                struct Summary: Encodable { var accepted: Int; var duplicates: Int; var refused: [Refusal] }
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.sortedKeys]
                print(String(decoding: try encoder.encode(Summary(accepted: accepted, duplicates: duplicates, refused: refusals)),
                             as: UTF8.self))
            } else {
                print("accepted \(accepted) (\(duplicates) already recorded), refused \(refusals.count)")
                for refusal in refusals {
                    print("  line \(refusal.line): \(refusal.field): \(refusal.rule): \(refusal.message)")
                }
            }
        }
        if !refusals.isEmpty { throw ExitCode(10) }
    }

    /// The size of stdin when it is a regular file (`ledger append < facts.jsonl`), else nil.
    static func standardInputFileSize() -> Int? {
        var status = stat()
        guard fstat(STDIN_FILENO, &status) == 0, (status.st_mode & S_IFMT) == S_IFREG else { return nil }
        return Int(status.st_size)
    }

    /// A line refused before it reached the facade.
    struct LineRefusal: Error {
        var field: String
        var rule: String
        var message: String
    }

    /// A postback line (`skan_postback` or `aak_postback`): the raw postback (exactly the string
    /// given), the app, the network, and which key held it.
    static func postback(_ line: String) throws -> (raw: Data, app: AppID, network: String, id: UUID?, key: String)? {
        guard let object = (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any],
            let key = ["skan_postback", "aak_postback"].first(where: { object[$0] != nil }), let value = object[key]
        else { return nil }
        guard let raw = value as? String else {
            throw LineRefusal(field: key, rule: "json_string",
                              message: "'\(key)' is the postback's JSON as a string, kept exactly as received.")
        }
        guard let network = object["network"] as? String, !network.isEmpty else {
            throw LineRefusal(field: "network", rule: "required", message: "'network' names the network that forwarded it.")
        }
        guard let appText = object["app"] as? String, let app = try? AppID(appText) else {
            throw LineRefusal(field: "app", rule: "required", message: "'app' is the app id the postback is for.")
        }
        var id: UUID?
        if let text = object["id"] as? String {
            guard let parsed = UUID(uuidString: text) else {
                throw LineRefusal(field: "id", rule: "uuid", message: "'id' must be a UUID.")
            }
            id = parsed
        }
        return (Data(raw.utf8), app, network, id, key)
    }

    /// Parses one line into a prepared fact.
    static func prepare(_ line: String, ledger: AttributionLedger) throws -> PreparedFact {
        guard let object = (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any] else {
            throw LineRefusal(field: "line", rule: "json_object", message: "The line is not a JSON object.")
        }
        func text(_ key: String) throws -> String {
            guard let value = object[key] as? String, !value.isEmpty else {
                throw LineRefusal(field: key, rule: "required", message: "'\(key)' is required and must be a string.")
            }
            return value
        }
        let device: DeviceRef
        do {
            device = try DeviceRef(app: try AppID(try text("app")), device: try DeviceID(try text("device_id")))
        } catch let refusal as LineRefusal {
            throw refusal
        } catch {
            throw LineRefusal(field: "app/device_id", rule: "identifier", message: "\(error)")
        }
        guard let id = UUID(uuidString: try text("id")) else {
            throw LineRefusal(field: "id", rule: "uuid", message: "'id' must be a UUID.")
        }
        guard let occurredAt = try? Date(try text("occurred_at"), strategy: .iso8601) else {
            throw LineRefusal(field: "occurred_at", rule: "iso8601", message: "'occurred_at' must be an ISO 8601 time.")
        }
        guard let data = object["data"], data is [String: Any] else {
            throw LineRefusal(field: "data", rule: "json_object", message: "'data' must be the fact's JSON object.")
        }
        let schemaVersion = object["schema_version"] as? Int
        let actor = object["actor"] as? String
        return try ledger.prepare(
            type: try text("type"), schemaVersion: schemaVersion, data: try JSONSerialization.data(withJSONObject: data),
            for: device, id: id, occurredAt: occurredAt, options: RecordingOptions(actor: actor))
    }
}
