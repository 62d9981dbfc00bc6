import ArgumentParser
import Foundation
import LedgerDispatch
import LedgerDomain
import LedgerPostgres
import LedgerPrivateCluster
import LedgerStore

/// `ledger erase --device D`: crypto-shreds one device's personal data.
struct EraseCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "erase",
        abstract: "Erase a device's personal data: destroy its key, record ErasureCompleted, cancel its sends.",
        discussion: helpText("""
            The device's events stay in the log (their hashes cover the ciphertext, so `ledger verify`
            still passes), but their personal fields can never be decrypted again: every read,
            replay, projection rebuild and export shows them erased ("ledger_erased" lists them).
            Its pending and running sends are cancelled (SendCancelled, reason "erasure").
            Erasing again is harmless and writes nothing.

            Exit codes: 0 erased (or already erased), 8 no such device, 1 the work failed,
            3 the database is unreachable.

            Examples:
              ledger erase --device device-com.example.game/4f1c2a --requested-by dsar-portal
              ledger erase --app com.example.game --device 4f1c2a --json
            """)
    )

    @OptionGroup var database: DatabaseOptions

    @Option(help: ArgumentHelp("The device: its stream id (device-<app>/<device>), or its device id with --app.",
                               valueName: "device"))
    var device: String

    @Option(help: ArgumentHelp("The app, when --device is a bare device id.", valueName: "app-id"))
    var app: String?

    @Option(name: .customLong("requested-by"),
            help: ArgumentHelp("Who asked: a role or system (dsar-portal, support), never a person.", valueName: "who"))
    var requestedBy = "cli"

    @Option(name: .customLong("requested-at"),
            help: ArgumentHelp("When the data subject asked (ISO 8601); default now.", valueName: "time"))
    var requestedAt: String?

    @Flag(help: "Print the outcome as JSON.")
    var json = false

    func validate() throws {
        if requestedAt != nil, parsedRequestedAt == nil {
            throw ValidationError("--requested-at must be an ISO 8601 time, e.g. 2026-05-01T12:00:00Z")
        }
    }

    var parsedRequestedAt: Date? {
        requestedAt.flatMap { text in
            let formatter = ISO8601DateFormatter()
            if let date = formatter.date(from: text) { return date }
            formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
            return formatter.date(from: text)
        }
    }

    func deviceStream() throws -> StreamID {
        do {
            if let app {
                return try StreamID.device(app: try AppID(app), device: try DeviceID(device))
            }
            let stream = try StreamID(device)
            guard stream.category == StreamCategory.device.rawValue else { throw PrivacyError.notADeviceStream(device) }
            return stream
        } catch let error as PrivacyError {
            throw CLIFailure(exitCode: .noSuchDevice, message: error.description)
        } catch {
            throw CLIFailure(exitCode: .failure, message: "--device: \(error)")
        }
    }

    func run() async throws {
        try await reportingFailures {
            let logger = makeLogger("ledger.erase")
            let stream = try deviceStream()
            let target = try database.resolve(logger: logger)
            let pool = PostgresPool(conninfo: target.conninfo, maxConnections: 1, logger: logger)
            defer { pool.close() }
            let store = EventStore(pool: pool, logger: logger)
            let outcome: DeviceEraser.Outcome
            do {
                outcome = try await DeviceEraser(store: store).erase(
                    device: stream, requestedBy: requestedBy, requestedAt: parsedRequestedAt ?? Date())
            } catch let error as PrivacyError {
                if case .unknownDevice = error { throw CLIFailure(exitCode: .noSuchDevice, message: error.description) }
                throw CLIFailure(exitCode: .failure, message: error.description)
            } catch let error as EventStoreError {
                throw CLIFailure(exitCode: .failure, message: error.description)
            }
            let erasedAt = ISO8601DateFormatter().string(from: outcome.erasedAt)
            if json {
                print(jsonText([
                    "device_stream_id": stream.rawValue, "erasure_event_id": outcome.erasureEventID.uuidString.lowercased(),
                    "erased_at": erasedAt, "already_erased": "\(outcome.alreadyErased)",
                    "keys_destroyed": "\(outcome.keysDestroyed)", "sends_cancelled": "\(outcome.sendsCancelled.count)",
                ]))
            } else if outcome.alreadyErased {
                print("already erased at \(erasedAt): \(stream.rawValue) (ErasureCompleted "
                    + "\(outcome.erasureEventID.uuidString.lowercased()))")
            } else {
                print("erased \(stream.rawValue): \(outcome.keysDestroyed) key(s) destroyed, "
                    + "\(outcome.sendsCancelled.count) send(s) cancelled, ErasureCompleted "
                    + "\(outcome.erasureEventID.uuidString.lowercased())")
            }
        }
    }
}

/// `ledger keys`: the master key's housekeeping.
struct KeysCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "keys",
        abstract: "Key housekeeping: generate a master key, re-wrap every data key, or make a seal signing key.",
        subcommands: [Generate.self, Rotate.self, SealKey.self]
    )

    /// `ledger keys seal-key`: prints a new seal signing key and its public key.
    struct SealKey: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "seal-key",
            abstract: "Print a new Ed25519 seal signing key (for LEDGER_SEAL_SIGNING_KEY) and its public key.",
            discussion: helpText("""
                Keep the signing key outside the database, in the sealing processes' secrets; give
                the public key to auditors (`ledger verify --public-key`). Output: two lines,
                `LEDGER_SEAL_SIGNING_KEY=<base64>` and `LEDGER_SEAL_PUBLIC_KEY=<base64>`.
                """))

        func run() {
            let key = SealSigningKey.generate()
            print("LEDGER_SEAL_SIGNING_KEY=\(key.base64)")
            print("LEDGER_SEAL_PUBLIC_KEY=\(key.publicKey.base64)")
        }
    }

    /// `ledger keys generate`: prints a new master key (base64 of 32 random bytes).
    struct Generate: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "generate", abstract: "Print a new random master key (base64 of 32 bytes) for LEDGER_MASTER_KEY.")

        func run() {
            print(MasterKeys.generateText())
        }
    }

    /// `ledger keys rotate`: re-wraps data keys wrapped by a previous master key.
    struct Rotate: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "rotate",
            abstract: "Re-wrap every data key with the current master key (LEDGER_MASTER_KEY).",
            discussion: helpText("""
                Procedure (docs/privacy.md): set LEDGER_MASTER_KEY to the new key and
                LEDGER_MASTER_KEY_PREVIOUS to the old one everywhere, run `ledger keys rotate`, then
                remove LEDGER_MASTER_KEY_PREVIOUS. One transaction; keys never leave the process.
                """))

        @OptionGroup var database: DatabaseOptions

        func run() async throws {
            try await reportingFailures {
                let logger = makeLogger("ledger.keys")
                let target = try database.resolve(logger: logger)
                let pool = PostgresPool(conninfo: target.conninfo, maxConnections: 1, logger: logger)
                defer { pool.close() }
                let store = EventStore(pool: pool, logger: logger)
                do {
                    let count = try await store.privacy.rewrapDataKeys(pool: pool)
                    let current = try store.privacy.masterKeys().currentID
                    print("re-wrapped \(count) data key(s) with master key \(current)")
                } catch let error as PrivacyError {
                    throw CLIFailure(exitCode: .failure, message: error.description)
                }
            }
        }
    }
}

extension ExitCode {
    /// No device by that id (also `ledger explain`'s).
    static let noSuchDevice = ExitCode(8)
}
