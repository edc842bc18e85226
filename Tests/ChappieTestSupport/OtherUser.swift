public import Foundation

/// Another user on this machine (`nobody` by default), to run chappie or any program as, through
/// `setpriv`; only root can. What it runs is copied where it can reach it: a checkout in a private
/// directory (a 0700 home, a `mktemp -d`) must pass as well as one anyone can read.
public struct OtherUser: Sendable {
    /// The user's uid (and gid).
    public let uid: UInt32

    /// `nobody`.
    public static let nobody = OtherUser(uid: 65534)

    /// Whether this test process can run programs as another user.
    public static var isPossible: Bool { geteuid() == 0 }

    /// Runs `executable` as this user, with its groups cleared.
    public func run(
        _ executable: URL, _ arguments: [String], environment: [String: String?] = [:], input: String? = nil, timeout: Duration = .seconds(60),
        directory: URL? = nil
    ) async throws -> ProcessResult {
        try await runProcess(
            URL(fileURLWithPath: "/usr/bin/setpriv"), ["--reuid=\(uid)", "--regid=\(uid)", "--clear-groups", executable.path] + arguments,
            environment: environment, input: input, timeout: timeout, directory: directory)
    }

    /// Starts `executable` as this user, with its groups cleared.
    public func start(
        _ executable: URL, _ arguments: [String], environment: [String: String?] = [:], stdout: ChildProcess.Stream = .null,
        stderr: ChildProcess.Stream = .null
    ) throws -> ChildProcess {
        try ChildProcess(
            URL(fileURLWithPath: "/usr/bin/setpriv"), ["--reuid=\(uid)", "--regid=\(uid)", "--clear-groups", executable.path] + arguments,
            environment: environment, stdout: stdout, stderr: stderr)
    }

    /// The front binary, in an installed layout any user can reach (its full binary copied beside,
    /// not linked into the build directory): made once per test process.
    public static func chappie() throws -> URL {
        try reachableLayout.get().appendingPathComponent("bin/chappie")
    }

    private static let reachableLayout: Result<URL, any Error> = Result {
        let manager = FileManager.default
        let root = URL(fileURLWithPath: "/tmp/chappie-tests-reachable")
        let prefix = root.appendingPathComponent("\(getpid())")
        try? manager.removeItem(at: prefix)
        for directory in [
            root, prefix, prefix.appendingPathComponent("bin"), prefix.appendingPathComponent("libexec"),
            prefix.appendingPathComponent("libexec/chappie"),
        ] {
            try? manager.createDirectory(at: directory, withIntermediateDirectories: false)
            // Not taken from the umask, and not a link someone else put there (chmod follows none).
            let attributes = try manager.attributesOfItem(atPath: directory.path)
            guard attributes[.type] as? FileAttributeType == .typeDirectory, (attributes[.ownerAccountID] as? NSNumber)?.uint32Value == geteuid()
            else {
                throw EmulatorHarnessError(message: "\(directory.path) is not a directory of this user's")
            }
            chmod(directory.path, 0o755)
        }
        try manager.copyItem(at: BuiltProducts.directory.appendingPathComponent("chappie"), to: prefix.appendingPathComponent("bin/chappie"))
        try manager.copyItem(
            at: BuiltProducts.directory.appendingPathComponent("chappie-full"), to: prefix.appendingPathComponent("libexec/chappie/chappie-full"))
        // Layouts of test processes that have ended.
        for old in (try? manager.contentsOfDirectory(atPath: root.path)) ?? [] {
            if let pid = Int32(old), pid != getpid(), kill(pid, 0) != 0, errno == ESRCH {
                try? manager.removeItem(at: root.appendingPathComponent(old))
            }
        }
        return prefix
    }
}
