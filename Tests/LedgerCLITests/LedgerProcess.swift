import Foundation
import Testing

/// Runs the built `ledger` executable, as a person or a script would.
struct LedgerProcess {
    struct Result {
        var status: Int32
        var stdout: String
        var stderr: String
    }

    /// `ledger` sits beside the test bundle in the build folder (`swift build` makes it; the
    /// test target depends on it so `swift test` does too).
    static let binary: String = {
        let testBinary = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        return testBinary.deletingLastPathComponent().appendingPathComponent("ledger").path
    }()

    /// Runs `ledger` on a thread of its own, so that waiting for it holds no cooperative thread.
    static func runDetached(_ arguments: [String], environment extra: [String: String] = [:], stdin: URL? = nil) async throws
        -> Result
    {
        try await withCheckedThrowingContinuation { continuation in
            Thread { continuation.resume(with: Swift.Result { try run(arguments, environment: extra, stdin: stdin) }) }.start()
        }
    }

    /// The environment every run starts from: this process's, with the text log format (the tests
    /// read stderr as a person would; a test of the JSON format sets `LEDGER_LOG_FORMAT` itself).
    static var baseEnvironment: [String: String] {
        ProcessInfo.processInfo.environment.merging(["LEDGER_LOG_FORMAT": "text"]) { $1 }
    }

    /// Starts `ledger` in the background with its output discarded (a worker, say): the caller
    /// stops it (SIGTERM, SIGKILL) and waits for it. `environment` is added to this process's.
    static func start(_ arguments: [String], environment extra: [String: String]) throws -> Process {
        try #require(FileManager.default.isExecutableFile(atPath: binary), "build the ledger product first: swift build")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = arguments
        process.environment = baseEnvironment.merging(extra) { $1 }
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        return process
    }

    static func run(_ arguments: [String], environment extra: [String: String] = [:], stdin: URL? = nil) throws -> Result {
        try #require(FileManager.default.isExecutableFile(atPath: binary), "build the ledger product first: swift build")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = arguments
        var environment = baseEnvironment
        environment.removeValue(forKey: "LEDGER_DATABASE_URL")
        for (key, value) in extra { environment[key] = value }
        process.environment = environment
        let out = Pipe()
        let err = Pipe()
        if let stdin { process.standardInput = try FileHandle(forReadingFrom: stdin) }
        process.standardOutput = out
        process.standardError = err
        try process.run()
        let stdout = out.fileHandleForReading.readDataToEndOfFile()
        let stderr = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Result(status: process.terminationStatus, stdout: String(decoding: stdout, as: UTF8.self),
                      stderr: String(decoding: stderr, as: UTF8.self))
    }
}
