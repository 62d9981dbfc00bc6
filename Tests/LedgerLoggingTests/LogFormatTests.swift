import LedgerLogging
import Logging
import Testing

/// `LEDGER_LOG_FORMAT` and `LEDGER_LOG_LEVEL`: what each value chooses, and a typed refusal of a
/// format the ledger does not know.
@Suite struct LogFormatTests {
    @Test func unsetMeansTextOnATerminalAndJSONElsewhere() throws {
        #expect(try LogFormat.resolve(environmentValue: nil, stderrIsTerminal: true) == .text)
        #expect(try LogFormat.resolve(environmentValue: nil, stderrIsTerminal: false) == .json)
        #expect(try LogFormat.resolve(environmentValue: "", stderrIsTerminal: false) == .json)
    }

    @Test func aNamedFormatWinsWhereverStderrGoes() throws {
        for terminal in [true, false] {
            #expect(try LogFormat.resolve(environmentValue: "json", stderrIsTerminal: terminal) == .json)
            #expect(try LogFormat.resolve(environmentValue: "TEXT", stderrIsTerminal: terminal) == .text)
        }
    }

    @Test func anUnknownFormatIsRefusedNamingTheVariableAndTheRule() {
        #expect(throws: LogFormatError(field: "LEDGER_LOG_FORMAT", rule: "json_or_text", value: "logfmt")) {
            try LogFormat.resolve(environmentValue: "logfmt", stderrIsTerminal: true)
        }
    }

    @Test func theLevelIsLEDGER_LOG_LEVELOrWarning() {
        #expect(LoggingBootstrap.level(environmentValue: nil) == .warning)
        #expect(LoggingBootstrap.level(environmentValue: "debug") == .debug)
        #expect(LoggingBootstrap.level(environmentValue: "Info") == .info)
        #expect(LoggingBootstrap.level(environmentValue: "loud") == .warning)
    }
}
