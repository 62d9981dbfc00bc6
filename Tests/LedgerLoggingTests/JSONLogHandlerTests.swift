import Foundation
import LedgerLogging
import Logging
import Synchronization
import Testing

/// The JSON log handler: one parseable object per record, with the members operators' log
/// shippers index.
@Suite struct JSONLogHandlerTests {
    /// Lines a handler wrote, kept for the test.
    final class Lines: Sendable {
        private let lines = Mutex<[String]>([])
        var all: [String] { lines.withLock { $0 } }
        func append(_ line: String) { lines.withLock { $0.append(line) } }
    }

    /// A logger whose records land in `lines`, stamped at a fixed time.
    static func logger(_ lines: Lines, label: String = "ledger.test", level: Logger.Level = .trace,
                       time: Date = Date(timeIntervalSince1970: 1_796_555_228.123456)) -> Logger {
        Logger(label: label) { label in
            JSONLogHandler(label: label, logLevel: level, now: { time }, output: { lines.append($0) })
        }
    }

    static func first(_ lines: Lines) throws -> [String: Any] {
        let line = try #require(lines.all.first)
        return try object(line)
    }

    static func object(_ line: String) throws -> [String: Any] {
        #expect(line.hasSuffix("\n"))
        #expect(line.dropLast().firstIndex(of: "\n") == nil, "one record, one line: \(line)")
        let value = try JSONSerialization.jsonObject(with: Data(line.utf8))
        return try #require(value as? [String: Any], "\(line)")
    }

    @Test func aRecordIsOneObjectWithTimeLevelLoggerMessageAndMetadata() throws {
        let lines = Lines()
        Self.logger(lines, label: "ledger.worker").warning("worker step failed", metadata: ["ledger.send": "42"])
        #expect(lines.all.count == 1)
        let object = try Self.first(lines)
        #expect(object["time"] as? String == "2026-12-06T11:07:08.123456Z")
        #expect(object["level"] as? String == "warning")
        #expect(object["logger"] as? String == "ledger.worker")
        #expect(object["message"] as? String == "worker step failed")
        #expect(object["source"] as? String == "LedgerLoggingTests")
        #expect((object["metadata"] as? [String: Any])?["ledger.send"] as? String == "42")
    }

    @Test func nestedMetadataIsWrittenAsObjectsAndArrays() throws {
        let lines = Lines()
        Self.logger(lines).info("nested", metadata: [
            "providers": ["google", "branch"],
            "counts": ["pending": "3", "parked": .stringConvertible(1)],
            "empty": [:],
        ])
        let metadata = try #require(try Self.first(lines)["metadata"] as? [String: Any])
        #expect(metadata["providers"] as? [String] == ["google", "branch"])
        #expect(metadata["counts"] as? [String: String] == ["pending": "3", "parked": "1"])
        #expect((metadata["empty"] as? [String: Any])?.isEmpty == true)
    }

    @Test func everyStringIsEscaped() throws {
        let awkward = "quote \" backslash \\ newline \n return \r tab \t bell \u{07} nul \u{00} del \u{7F} "
            + "separators \u{2028}\u{2029} and ünïcødé 🚀"
        let lines = Lines()
        Self.logger(lines, label: "label \"\n").error("\(awkward)", metadata: [awkward: .string(awkward), "list": [.string(awkward)]])
        let object = try Self.first(lines)
        #expect(object["message"] as? String == awkward)
        #expect(object["logger"] as? String == "label \"\n")
        let metadata = try #require(object["metadata"] as? [String: Any])
        #expect(metadata[awkward] as? String == awkward)
        #expect(metadata["list"] as? [String] == [awkward])
        #expect(!lines.all[0].contains("\u{2028}"))
    }

    @Test func callMetadataOverridesProvidedAndHandlerMetadata() throws {
        let lines = Lines()
        let provider = Logger.MetadataProvider { ["from": "provider", "provider.only": "yes"] }
        var logger = Logger(label: "ledger.test") { label in
            JSONLogHandler(label: label, logLevel: .trace, metadataProvider: provider, output: { lines.append($0) })
        }
        logger[metadataKey: "from"] = "handler"
        logger[metadataKey: "handler.only"] = "yes"
        logger.info("merged")
        logger.info("overridden", metadata: ["from": "call"])
        let first = try #require(try Self.object(lines.all[0])["metadata"] as? [String: String])
        #expect(first == ["from": "provider", "provider.only": "yes", "handler.only": "yes"])
        let second = try #require(try Self.object(lines.all[1])["metadata"] as? [String: String])
        #expect(second["from"] == "call")
    }

    @Test func recordsBelowTheLevelAreNotWritten() {
        let lines = Lines()
        let logger = Self.logger(lines, level: .warning)
        logger.info("quiet")
        logger.debug("quieter")
        logger.warning("loud")
        #expect(lines.all.count == 1)
    }

    @Test func noMetadataMeansNoMetadataMember() throws {
        let lines = Lines()
        Self.logger(lines).notice("plain")
        let object = try Self.first(lines)
        #expect(object["metadata"] == nil)
        #expect(Set(object.keys) == ["time", "level", "logger", "message", "source"])
    }

    @Test(arguments: [
        (0.0, "1970-01-01T00:00:00.000000Z"),
        (-0.5, "1969-12-31T23:59:59.500000Z"),
        (951_782_400.000001, "2000-02-29T00:00:00.000001Z"),
        (4_107_542_399.999999, "2100-02-28T23:59:59.999999Z"),
    ])
    func timeIsRFC3339InUTCWithMicroseconds(seconds: Double, expected: String) {
        #expect(JSONLogLine.rfc3339(Date(timeIntervalSince1970: seconds)) == expected)
    }

    @Test func timeAgreesWithFoundationsFormatter() {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        formatter.timeZone = TimeZone(identifier: "UTC")
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<1000 {
            let date = Date(timeIntervalSince1970: TimeInterval(Int64.random(in: -5_000_000_000...10_000_000_000, using: &generator)))
            #expect(JSONLogLine.rfc3339(date) == formatter.string(from: date).dropLast() + ".000000Z")
        }
    }
}
