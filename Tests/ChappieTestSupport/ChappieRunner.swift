public import Foundation

/// How every test runs the built `chappie`: the service options it is given (the emulator's
/// endpoints, the data directory, the machine's name) go before a `--`, after which a command's own
/// arguments follow; nothing of whoever runs the tests leaks in (no key variables, no
/// `CHAPPIE_ACCOUNT`, no check-only mode), and `HOME` is the test's, with no `CODEX_HOME` unless
/// given: a switch must never write the tester's `~/.codex`.
public struct ChappieRunner: Sendable {
    /// `--issuer`, `--backend`, `--home` and `--machine`, as given.
    public var serviceArguments: [String]
    /// Variables every run gets (a team pool's `CHAPPIE_STORE_URL`), under those of a call.
    public var environment: [String: String?]
    /// How long a run may take before it is ended.
    public var timeout: Duration
    /// Where runs happen unless a call says (the data directory).
    public var workingDirectory: URL?

    /// A runner for a data directory (`home`), with an emulator's endpoints when one is given.
    ///
    /// - Parameters:
    ///   - userHome: `HOME` for the runs (default: `user-home` in the data directory).
    ///   - machine: `--machine`, for one of several machines sharing a team pool.
    ///   - storeURL: The team pool, as `CHAPPIE_STORE_URL`.
    public init(
        home: URL?, emulator: EmulatorProcess? = nil, userHome: URL? = nil, machine: String? = nil, storeURL: String? = nil,
        timeout: Duration = .seconds(60)
    ) {
        var arguments: [String] = []
        if let emulator { arguments += ["--issuer", emulator.issuer, "--backend", emulator.backend] }
        if let home { arguments += ["--home", home.path] }
        if let machine { arguments += ["--machine", machine] }
        serviceArguments = arguments
        // Runs happen in the data directory: a `.chappie-account` above the checkout (a developer's
        // ~/src) must not choose the accounts of the tests.
        workingDirectory = home
        var environment: [String: String?] = [:]
        if let home { environment["HOME"] = (userHome ?? home.appendingPathComponent("user-home")).path }
        if let storeURL { environment["CHAPPIE_STORE_URL"] = storeURL }
        self.environment = environment
        self.timeout = timeout
    }

    /// Runs `chappie` with `arguments`; `environment` adds to (or, with `nil`, removes from) the
    /// runner's own.
    public func callAsFunction(
        _ arguments: [String], environment: [String: String?] = [:], timeout: Duration? = nil, directory: URL? = nil
    ) async throws -> ProcessResult {
        var merged = self.environment
        for (key, value) in environment { merged.updateValue(value, forKey: key) }
        merged.unsetting(
            "CHAPPIE_PASSPHRASE", "CHAPPIE_KEY_FILE", "CHAPPIE_ACCOUNT", "CHAPPIE_CHECK_ONLY", "CODEX_HOME", "CHAPPIE_STORE_URL", "SSL_CERT_FILE",
            "CHAPPIE_CA_FILE")
        var arguments = arguments
        arguments.insert(contentsOf: serviceArguments, at: arguments.firstIndex(of: "--") ?? arguments.endIndex)
        return try await runProcess(
            try BuiltProducts.executable("chappie"), arguments, environment: merged, timeout: timeout ?? self.timeout,
            directory: directory ?? workingDirectory)
    }
}
