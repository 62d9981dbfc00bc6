import Foundation

/// Runs a server program to completion, optionally as another user, capturing its output in a file.
///
/// `posix_spawn` and `waitpid`, not Foundation's `Process`: on Linux, `Process` learns of the
/// child's exit through a socket the child inherits, and `pg_ctl start` leaves a server running
/// that inherits it too, so `waitUntilExit()` would never return. Output goes to a file rather
/// than a pipe for the same reason.
enum ProcessRunner {
    struct Outcome {
        var status: Int32
        var output: String
    }

    /// Runs `executable` with `arguments`; as `user` through `runuser` when one is given (root only).
    static func run(_ executable: String, _ arguments: [String], asUser user: String? = nil) throws -> Outcome {
        let argv = user.map { ["/usr/sbin/runuser", "-u", $0, "--", executable] } ?? [executable]
        let outputPath = FileManager.default.temporaryDirectory
            .appendingPathComponent("ledger-cluster-\(UUID().uuidString).out").path
        defer { unlink(outputPath) }

        markDescriptorsCloseOnExec()
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outputPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)

        let all = argv + arguments
        let cArguments: [UnsafeMutablePointer<CChar>?] = all.map { strdup($0) } + [nil]
        defer { cArguments.forEach { free($0) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, all[0], &actions, nil, cArguments, environ)
        guard spawned == 0 else {
            throw PrivateClusterError.commandFailed(command: all[0], status: -1,
                                                    output: "cannot start (\(String(cString: strerror(spawned))))")
        }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            guard errno == EINTR else { break }
        }
        let output = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
        // WIFEXITED / WEXITSTATUS by hand: Swift does not import the macros.
        let exitStatus: Int32 = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
        return Outcome(status: exitStatus, output: output)
    }

    /// A server started by `pg_ctl` lives on after this process: it must not inherit descriptors
    /// that someone else waits on (the socket through which a parent's `Process` learns of our
    /// exit, a test runner's pipes). Marking them close-on-exec leaves them usable here.
    private static func markDescriptorsCloseOnExec() {
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd") else { return }
        for entry in entries {
            guard let descriptor = Int32(entry), descriptor > 2 else { continue }
            let flags = fcntl(descriptor, F_GETFD)
            if flags >= 0 { _ = fcntl(descriptor, F_SETFD, flags | FD_CLOEXEC) }
        }
    }
}
