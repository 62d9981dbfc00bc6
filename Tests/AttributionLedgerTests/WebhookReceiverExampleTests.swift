import Foundation
#if canImport(Glibc)
import Glibc
#endif
import LedgerDecisions
import LedgerDispatch
import LedgerDomain
import LedgerStore
import LedgerTestKit
import Testing

/// The receiver example of docs/webhooks.md ("Verifying a delivery") is the page's `python` block,
/// run with python3 against real deliveries from the worker: the page cannot show a receiver
/// that does not verify what the ledger signs.
@Suite(.database, .serialized) struct WebhookReceiverExampleTests {
    /// The page's one `python` block.
    static func example() throws -> String {
        let page = try String(contentsOf: URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("docs/webhooks.md"), encoding: .utf8)
        let begin = try #require(page.range(of: "```python\n"))
        let end = try #require(page.range(of: "```\n", range: begin.upperBound..<page.endIndex))
        return String(page[begin.upperBound..<end.lowerBound])
    }

    /// The example running with `secrets`, on a free loopback port.
    final class RunningReceiver: @unchecked Sendable {
        // `@unchecked`: the process and pipe are used by the test's task alone.
        let process = Process()
        let output = Pipe()
        private(set) var port = 0
        private var read = Data()

        init(secrets: [String]) throws {
            let script = FileManager.default.temporaryDirectory.appendingPathComponent("ledger-receiver-\(UUID().uuidString).py")
            try Data(try WebhookReceiverExampleTests.example().utf8).write(to: script)
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = ["python3", script.path]
            var environment = ProcessInfo.processInfo.environment
            environment["PORT"] = "0"
            environment["LEDGER_WEBHOOK_SECRETS"] = secrets.joined(separator: ",")
            process.environment = environment
            process.standardOutput = output
            process.standardError = FileHandle.nullDevice
            try process.run()
            // The first line says where it listens.
            while !read.contains(UInt8(ascii: "\n")) {
                let chunk = output.fileHandleForReading.availableData
                guard !chunk.isEmpty else { break }
                read.append(chunk)
            }
            let first = String(decoding: read, as: UTF8.self).split(separator: "\n").first ?? ""
            port = Int(first.split(separator: " ").last ?? "") ?? 0
        }

        /// Stops it (SIGKILL: a child of this process starts with SIGTERM blocked, the signal
        /// mask of the thread that spawned it); every line it printed.
        func stop() -> [String] {
            if process.isRunning {
                kill(process.processIdentifier, SIGKILL)
                process.waitUntilExit()
                read.append(output.fileHandleForReading.readDataToEndOfFile())
            }
            return String(decoding: read, as: UTF8.self).split(separator: "\n").map(String.init)
        }
    }

    @Test func theDocumentsReceiverVerifiesRealDeliveriesAndRefusesAWrongSecret() async throws {
        let receiver = try RunningReceiver(secrets: [WebhookDeliveryTests.secrets["app1"]!])
        #expect(receiver.port > 0)
        var lines: [String] = []
        do {
            let url = "http://127.0.0.1:\(receiver.port)/ledger-webhooks"
            try await WebhookDeliveryTests.withRig(urls: ["app1": url, "app2": url]) { rig in
                try await rig.install(app: "app1")
                try await rig.install(app: "app2")
                try await rig.drainAll()
                let made = try await rig.decide(expected: 2)
                try await rig.drainAll()
                lines = receiver.stop()
                // app1's delivery is signed with the receiver's secret, app2's with another.
                let app1 = try #require(made.first { $0.deviceStreamID == "device-app1/dev1" })
                let app2 = try #require(made.first { $0.deviceStreamID == "device-app2/dev1" })
                let delivery = Outbox.sendID(forKey: "webhook:backend:\(app1.decisionID.uuidString.lowercased())")
                #expect(lines.contains("accepted \(delivery.uuidString.lowercased()) app1 dev1 \(app1.decisionID.uuidString.lowercased())"),
                        "\(lines)")
                #expect(lines.contains("refused bad signature"), "\(lines)")
                #expect(try await rig.deliveryStream(decision: app1.decisionID).last?.type == SendSucceeded.eventType)
                #expect(try await rig.deliveryStream(decision: app2.decisionID).last?.type == SendFailed.eventType)
            }
        } catch {
            _ = receiver.stop()
            throw error
        }
        #expect(lines.filter { $0.hasPrefix("accepted") }.count == 1)
    }
}
