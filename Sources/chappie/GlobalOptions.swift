import ChappieSystem
import ChappieText
import ArgumentParser
import Chappie
import ChappieCore
import ChappieService
import Foundation
import Logging

/// Options every command takes.
struct GlobalOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("The data directory (default: $CHAPPIE_HOME, else $XDG_DATA_HOME/chappie).", valueName: "dir"))
    var home: String?

    @Option(name: .long, help: ArgumentHelp("The OAuth issuer (default: $CHAPPIE_ISSUER, else https://auth.openai.com).", valueName: "url"))
    var issuer: String?

    @Option(
        name: .long, help: ArgumentHelp("The ChatGPT backend (default: $CHAPPIE_BACKEND, else https://chatgpt.com/backend-api).", valueName: "url"))
    var backend: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "The key file (default: $CHAPPIE_KEY_FILE, systemd credentials, $CHAPPIE_PASSPHRASE, else a key file beside the data).", valueName: "file"
        ))
    var keyFile: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "A team pool's PostgreSQL database, postgres://USER@HOST/DB (default: $CHAPPIE_STORE_URL, else the data directory's store-url file, else the local store).",
            valueName: "url"))
    var store: String?

    @Option(name: .long, help: ArgumentHelp("This machine's name in a team pool (default: $CHAPPIE_MACHINE, else the host name).", valueName: "name"))
    var machine: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Also trust the certificate authorities in this PEM file, for HTTPS and wss (default: $CHAPPIE_CA_FILE; SSL_CERT_FILE replaces the system's).",
            valueName: "file"))
    var caFile: String?

    @Flag(name: .customLong("json"), help: "Print JSON instead of a table.")
    var jsonFlag = false

    /// `-o json` or `-o table`, as kubectl and gh write `--json` and the table.
    @Option(name: .customShort("o"), help: ArgumentHelp("json (as --json) or table.", valueName: "format"))
    var output: OutputChoice?

    /// What `-o` takes.
    enum OutputChoice: String, ExpressibleByArgument, CaseIterable {
        case json, table
    }

    /// Whether to print JSON: `--json` or `-o json`.
    var json: Bool { jsonFlag || output == .json }

    @Flag(name: .long, help: "Log what chappie does to standard error.")
    var verbose = false

    func validate() throws {
        if jsonFlag, output == .table { throw ValidationError("--json and -o table ask for two outputs; give one") }
        _ = try endpoints()
    }

    /// The services, from --issuer and --backend, else `$CHAPPIE_ISSUER` and `$CHAPPIE_BACKEND`.
    func endpoints() throws -> ChappieEndpoints {
        let environment = ProcessInfo.processInfo.environment
        do {
            var endpoints = try ChappieEndpoints(
                issuer: issuer ?? environment["CHAPPIE_ISSUER"].flatMap { $0.isEmpty ? nil : $0 },
                backend: backend ?? environment["CHAPPIE_BACKEND"].flatMap { $0.isEmpty ? nil : $0 })
            if let caFile { endpoints.trust.additionalFiles = [URL(fileURLWithPath: (caFile as NSString).expandingTildeInPath).path] }
            return endpoints
        } catch {
            throw ValidationError(error.description)
        }
    }

    /// Where the store is, where its key comes from, and the services.
    func serviceOptions() throws -> ServiceOptions {
        ServiceOptions(home: home, keyFile: keyFile, storeURL: store, machine: machine, endpoints: try endpoints())
    }

    /// Opens and unlocks the store, with the services over it.
    func services() async throws -> ChappieServices {
        try await ChappieServices.open(try serviceOptions())
    }

    /// The services for a command that only reads, or `nil` when there is no store yet: reading
    /// creates nothing (``ServiceOptions/storeExists``).
    func existingServices() async throws -> ChappieServices? {
        let options = try serviceOptions()
        guard try options.storeExists() else { return nil }
        return try await ChappieServices.open(options)
    }

    /// The account a command uses when it names none and does not ask for the best one:
    /// `$CHAPPIE_ACCOUNT` (which `exec` and `lease run` set for their command), else the nearest
    /// `.chappie-account` from the working directory up (``AccountBinding``), else `nil`, for the
    /// command's own default. A bound name must be an account: else the error names the file.
    func account(_ named: AccountName?, best: Bool = false) async throws -> AccountName? {
        guard let choice = try accountChoice(named, best: best) else { return nil }
        // Checked without the key (names are not sealed): no second passphrase, no second
        // derivation, and the daemon-only paths (`token`) open nothing. A store whose names cannot
        // be read here (a team pool) leaves the check to the lookup that follows.
        if case .binding = choice.source, case let names = AccountsService.namesWithoutUnlocking(home: home), !names.isEmpty,
            !names.contains(choice.name.rawValue)
        {
            throw CommandFailure(message: choice.missingMessage, exitCode: .failure)
        }
        return choice.name
    }

    /// Where a command's account comes from, without opening the store: the name given, else
    /// `$CHAPPIE_ACCOUNT`, else the directory's binding (its warnings on standard error); `nil`
    /// for the command's default (or `--best`).
    func accountChoice(_ named: AccountName?, best: Bool = false, printingWarnings: Bool = true) throws -> AccountChoice? {
        if let named { return AccountChoice(name: named, source: .named) }
        guard !best else { return nil }
        if let value = ProcessInfo.processInfo.environment["CHAPPIE_ACCOUNT"], !value.isEmpty {
            do {
                return AccountChoice(name: try AccountName(value), source: .environment)
            } catch {
                throw CommandFailure(
                    message: "$CHAPPIE_ACCOUNT is not an account name (\(error)); unset it or name an account",
                    exitCode: ExitCode(ChappieExitCode.usage))
            }
        }
        guard let directory = AccountBinding.workingDirectory else { return nil }
        let search = AccountBinding.nearest(from: directory)
        if printingWarnings {
            for warning in search.warnings { StandardStream.error.write("warning: \(TerminalText.sanitized(warning))\n") }
        }
        switch search.binding {
        case .none: return nil
        case .success(let binding): return AccountChoice(name: binding.name, source: .binding(binding.file))
        case .failure(let error): throw CommandFailure(message: error.description, exitCode: ExitCode(ChappieExitCode.usage))
        }
    }

    /// A logger on standard error: debug with --verbose, warnings otherwise (see ``ProcessLogging``).
    func makeLogger() -> Logger {
        Logger(label: "chappie")
    }
}

/// The account a command uses and where that came from (``GlobalOptions/accountChoice(_:best:)``).
struct AccountChoice {
    /// Where the name came from.
    enum Source {
        /// The command line.
        case named
        /// `$CHAPPIE_ACCOUNT`.
        case environment
        /// A `.chappie-account` file.
        case binding(URL)
    }

    let name: AccountName
    let source: Source

    /// What to say when the chosen name is no account, naming where it came from.
    var missingMessage: String {
        switch source {
        case .binding(let file):
            "\(file.path) binds this directory to \(name), and there is no such account: bind another with chappie bind NAME there, or remove it with chappie unbind"
        case .environment, .named: "$CHAPPIE_ACCOUNT names \(name), and there is no such account"
        }
    }
}
