import ArgumentParser
import Foundation
import LedgerPostgres
import LedgerPrivateCluster
import LedgerStore

/// `ledger verify`: proves the history untouched, or names the first broken link.
struct VerifyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Recompute every stream's hash chain and every seal; name the first broken event.",
        discussion: helpText("""
            Each event's hash covers its stored bytes and the previous event of its stream, so an
            edited event breaks its stream's chain; within a stream recording times never go back,
            so a back-dated insert is named; seals commit to the global order, so removed or
            reordered events break a seal (named with the positions it covers). With a public key
            (--public-key or LEDGER_SEAL_PUBLIC_KEY) every seal must carry a valid signature by
            it, so a log rewritten with recomputed seals fails. With --checkpoint, the log must
            still hold the seal an auditor saved earlier (`ledger checkpoint`). Events after the
            last seal are counted and reported as unsealed. Reads one consistent snapshot;
            appends may go on meanwhile.

            Exit codes: 0 intact, 5 a broken link was found, 3 the database is unreachable,
            64 a malformed key or checkpoint.

            Examples:
              ledger verify
              ledger verify --json
              ledger verify --public-key "$(cat seal-public-key.txt)" --checkpoint checkpoint-2026-11-29.json
              ledger verify --export ledger.jsonl --public-key "$(cat seal-public-key.txt)"   # no database
            """)
    )

    @OptionGroup var database: DatabaseOptions

    @Flag(help: "Print the report as JSON.")
    var json = false

    @Option(help: ArgumentHelp("The seals' public key (base64; default LEDGER_SEAL_PUBLIC_KEY): every seal must be signed by it.",
                               valueName: "base64"))
    var publicKey: String?

    @Option(help: ArgumentHelp("A checkpoint written by `ledger checkpoint`: the log must still extend it.", valueName: "file"))
    var checkpoint: String?

    @Option(help: ArgumentHelp("Verify a stored-form export (`ledger export`) instead of the database: no database is used.",
                               valueName: "file"))
    var export: String?

    func run() async throws {
        try await reportingFailures {
            let logger = makeLogger("ledger.verify")
            let key = try Self.publicKey(publicKey ?? ProcessInfo.processInfo.environment["LEDGER_SEAL_PUBLIC_KEY"])
            let saved = try checkpoint.map(Self.loadCheckpoint)
            if let export {
                try verifyExport(path: export, key: key, checkpoint: saved)
                return
            }
            let (pool, store) = try database.openStore(logger: logger, connections: 1)
            defer { pool.close() }
            let bar: ProgressBar? = json ? nil : ProgressBar(label: "verify", unit: "events")
            let progress: (@Sendable (Int, Int) -> Void)? = bar.map { bar in
                { @Sendable done, total in bar.update(done: done, total: total) }
            }
            let report = try await store.verify(publicKey: key, checkpoint: saved, progress: progress)
            bar?.finish()
            print(json ? Self.renderJSON(report, signed: key != nil) : Self.renderText(report, signed: key != nil))
            if !report.isIntact { throw ExitCode(5) }
        }
    }

    /// Checks an export file offline; exit 5 naming the first line that fails.
    func verifyExport(path: String, key: SealPublicKey?, checkpoint: SealCheckpoint?) throws {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw CLIFailure(exitCode: .validationFailure, message: "--export: \(path) cannot be read")
        }
        let text = String(decoding: data, as: UTF8.self)
        let report = StoredExportVerifier(publicKey: key, checkpoint: try checkpoint?.seal())
            .verify(lines: text.split(separator: "\n", omittingEmptySubsequences: false))
        if json {
            var output: [String: String] = [
                "intact": "\(report.isIntact)", "events_checked": "\(report.eventsChecked)",
                "streams_checked": "\(report.streamsChecked)", "seals_checked": "\(report.sealsChecked)",
                "seal_signatures_checked": "\(report.sealSignaturesChecked)", "unsealed_events": "\(report.unsealedEvents)",
            ]
            output["checkpoint_seal"] = report.checkpointSeal.map(String.init)
            output["line"] = report.failedLine.map(String.init)
            output["message"] = report.problem
            print(jsonText(output))
        } else if let problem = report.problem {
            print("BROKEN: \(problem)")
        } else {
            print("OK: \(report.eventsChecked) events in \(report.streamsChecked) streams and \(report.sealsChecked) seals verified "
                + "from the export" + (key != nil ? ", every seal's signature checked" : " (signatures not checked: give --public-key)")
                + (report.checkpointSeal.map { "\nthe export extends the checkpoint (seal \($0))" } ?? "")
                + (report.unsealedEvents > 0 ? "\nunsealed: \(report.unsealedEvents) events after the export's last seal" : ""))
        }
        if !report.isIntact { throw ExitCode(5) }
    }

    static func publicKey(_ text: String?) throws -> SealPublicKey? {
        guard let text, !text.isEmpty else { return nil }
        do { return try SealPublicKey(base64: text) } catch {
            throw CLIFailure(exitCode: .validationFailure, message: "--public-key: \(error)")
        }
    }

    static func loadCheckpoint(_ path: String) throws -> SealCheckpoint {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw CLIFailure(exitCode: .validationFailure, message: "--checkpoint: \(path) cannot be read")
        }
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        guard let checkpoint = try? decoder.decode(SealCheckpoint.self, from: data), (try? checkpoint.seal()) != nil else {
            throw CLIFailure(exitCode: .validationFailure, message: "--checkpoint: \(path) is not a checkpoint written by `ledger checkpoint`")
        }
        return checkpoint
    }

    static func renderText(_ report: VerificationReport, signed: Bool) -> String {
        if let problem = report.problem { return "BROKEN: \(problem.message)" }
        var lines = ["OK: \(report.eventsChecked) events in \(report.streamsChecked) streams and \(report.sealsChecked) seals verified"
            + (signed ? ", every seal's signature checked" : " (signatures not checked: give --public-key)")]
        if let seal = report.checkpointSeal { lines.append("the log extends the checkpoint (seal \(seal))") }
        lines.append("\(report.eventsCatalogChecked) events checked against the catalog"
            + (report.eventsCatalogChecked < report.eventsChecked ? " (the others erased: checked as far as what is left allows)" : ""))
        if let range = report.unsealedPositions {
            lines.append("unsealed: \(report.unsealedEvents) events (positions \(range.lowerBound)–\(range.upperBound)) "
                + "after the last seal; seal them to have them covered")
        }
        return lines.joined(separator: "\n")
    }

    static func renderJSON(_ report: VerificationReport, signed: Bool) -> String {
        var output: [String: String] = [
            "intact": "\(report.isIntact)", "events_checked": "\(report.eventsChecked)",
            "streams_checked": "\(report.streamsChecked)", "seals_checked": "\(report.sealsChecked)",
            "seal_signatures_checked": "\(report.sealsSignatureChecked)", "unsealed_events": "\(report.unsealedEvents)",
            "events_catalog_checked": "\(report.eventsCatalogChecked)",
        ]
        if let range = report.unsealedPositions { output["unsealed_positions"] = "\(range.lowerBound)-\(range.upperBound)" }
        if let seal = report.checkpointSeal { output["checkpoint_seal"] = "\(seal)" }
        if let problem = report.problem {
            output["problem"] = problem.kind.rawValue
            output["message"] = problem.message
            output["stream_id"] = problem.streamID
            output["event_id"] = problem.eventID?.uuidString.lowercased()
            output["position"] = problem.position.map(String.init)
            output["seal_number"] = problem.sealNumber.map(String.init)
            output["positions"] = problem.positions.map { "\($0.lowerBound)-\($0.upperBound)" }
        }
        return jsonText(output)
    }
}

/// The seal signing key of `LEDGER_SEAL_SIGNING_KEY` / `LEDGER_SEAL_SIGNING_KEY_FILE`, or exit 64.
func loadSealSigningKey() throws -> SealSigningKey? {
    do {
        return try SealSigningKey.fromEnvironment(ProcessInfo.processInfo.environment)
    } catch {
        throw CLIFailure(exitCode: .validationFailure, message: "configuration: \(error)")
    }
}

/// `ledger seal`: commits a digest over every event not yet sealed.
struct SealCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "seal",
        abstract: "Seal the events appended since the last seal (serve and worker do it every minute).",
        discussion: helpText("""
            A seal is sha256(previous seal || the hashes of the new events in global order), kept in
            the append-only seals table and signed with LEDGER_SEAL_SIGNING_KEY (or the file
            LEDGER_SEAL_SIGNING_KEY_FILE names) when set; `ledger verify` recomputes them.

            Example:
              ledger seal
            """)
    )

    @OptionGroup var database: DatabaseOptions

    func run() async throws {
        try await reportingFailures {
            let logger = makeLogger("ledger.seal")
            let key = try loadSealSigningKey()
            let (pool, store) = try database.openStore(logger: logger, connections: 1)
            defer { pool.close() }
            if let seal = try await store.seal(signedBy: key) {
                print("seal \(seal.number): \(seal.eventCount) events through position \(seal.upTo.position)"
                    + (key == nil ? " (unsigned: no LEDGER_SEAL_SIGNING_KEY)" : ", signed by \(key!.publicKey.keyID)"))
            } else {
                print("nothing new to seal")
            }
        }
    }
}

/// `ledger checkpoint`: seals, then writes the newest seal for an auditor to keep.
struct CheckpointCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "checkpoint",
        abstract: "Seal what is readable and write the newest seal as a checkpoint to keep outside the database.",
        discussion: helpText("""
            The checkpoint (JSON: seal number, the last transaction id and position it covers, its
            digest chained over every earlier seal, its signature and the public key) lets an
            auditor prove later, with `ledger verify --checkpoint FILE --public-key K`, that the
            log still holds everything it held then: changing, removing or reordering any event
            the checkpoint covers breaks it, whoever has the database.

            Examples:
              ledger checkpoint --output checkpoint-$(date +%F).json
              ledger checkpoint > checkpoint.json
            """)
    )

    @OptionGroup var database: DatabaseOptions

    @Option(help: ArgumentHelp("Write the checkpoint to this file instead of stdout.", valueName: "file"))
    var output: String?

    func run() async throws {
        try await reportingFailures {
            let logger = makeLogger("ledger.checkpoint")
            let key = try loadSealSigningKey()
            let (pool, store) = try database.openStore(logger: logger, connections: 1)
            defer { pool.close() }
            try await store.seal(signedBy: key)
            guard let seal = try await store.latestSeal() else {
                throw CLIFailure(exitCode: .failure, message: "nothing to checkpoint: the log holds no readable event")
            }
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
            encoder.dateEncodingStrategy = .iso8601
            let data = try encoder.encode(SealCheckpoint(seal: seal, publicKey: key?.publicKey))
            if let output {
                guard FileManager.default.createFile(atPath: output, contents: data) else {
                    throw CLIFailure(exitCode: .failure, message: "cannot write \(output)")
                }
                writeStatusLine("seal \(seal.number) written to \(output)", command: "checkpoint")
            } else {
                print(String(decoding: data, as: UTF8.self))
            }
        }
    }
}
