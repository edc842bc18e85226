public import Foundation

/// An emulator process and a fresh data directory, with the built `chappie` pointed at both: the
/// set-up of every end-to-end test that signs accounts in.
public struct ChappieTestbed: Sendable {
    /// The emulator.
    public let emulator: EmulatorProcess
    /// The data directory (`--home`).
    public let home: URL

    /// The emulator's arguments by default: device codes approve themselves at once.
    public static let autoApproving = ["--auto-approve", "--auto-approve-delay", "0", "--device-code-interval", "1"]

    /// Starts an emulator (auto-approving device codes unless other arguments are given) and makes a home.
    public static func start(emulatorArguments: [String] = autoApproving) async throws -> ChappieTestbed {
        ChappieTestbed(emulator: try await EmulatorProcess(arguments: emulatorArguments), home: try TestTokens.temporaryDirectory("chappie-e2e"))
    }

    /// The `HOME` commands run with: `user-home` in the data directory (absent until a test makes it).
    public var userHome: URL { home.appendingPathComponent("user-home") }

    /// `--issuer`, `--backend` and `--home` for this testbed.
    public var service: [String] { ["--issuer", emulator.issuer, "--backend", emulator.backend, "--home", home.path] }

    /// Runs `chappie` with the arguments and the testbed's service options (before a `--`, after
    /// which a command's own arguments follow), without key variables inherited from the environment,
    /// and with `HOME` in the testbed (``userHome``) and no `CODEX_HOME` unless given: a switch must
    /// never write the `~/.codex` of whoever runs the tests.
    public func chappie(
        _ arguments: [String], environment: [String: String?] = [:], timeout: Duration = .seconds(60), directory: URL? = nil
    ) async throws -> ProcessResult {
        try await runner(arguments, environment: environment, timeout: timeout, directory: directory)
    }

    /// The runner for this testbed's data directory and emulator.
    public var runner: ChappieRunner { ChappieRunner(home: home, emulator: emulator, userHome: userHome) }

    /// Calls the emulator (its control API or any path) with curl and parses the JSON reply.
    public func control(_ path: String, method: String = "GET", body: String? = nil) async throws -> JSONDocument {
        let result = try await runProcess(
            URL(fileURLWithPath: "/usr/bin/curl"),
            ["-s", "-X", method, "-H", "Content-Type: application/json"] + (emulator.authorityFile.map { ["--cacert", $0.path] } ?? [])
                + (body.map { ["-d", $0] } ?? []) + [emulator.issuer + path])
        return JSONDocument(Data(result.stdout.utf8))
    }

    /// Stops the emulator and removes the home.
    public func stop() async {
        await emulator.stop()
        try? FileManager.default.removeItem(at: home)
    }
}
