import ChappieBuild
import CProcess
import CSodium
import ChappieSystem
import ChappieText
import Glibc

/// The front binary: answers `--version`, `token`, `accounts list`, `accounts current` and `prompt` when that is only a read, and
/// hands every other command line to the full binary, unchanged, by `exec` (docs/architecture.md,
/// "Two binaries").
///
/// Handing off comes before anything that would change what the full binary starts with: no
/// secret is read from the environment, no signal's disposition is changed, no file is written.
public enum FrontBinary {
    /// The full binary's name, in `PREFIX/libexec/chappie/` when installed, else beside the front
    /// binary (a build directory).
    public static let fullBinaryName = "chappie-full"

    /// Runs the command line `arguments` (with the program's name first) and exits.
    public static func run(_ arguments: [String]) -> Never {
        // As the full binary does first: a closed standard descriptor is /dev/null, so the files
        // opened here (the database, the socket) never take one, and the full binary starts alike.
        _ = chappie_process_open_standard_descriptors()
        // A variable given twice is read as its last value by the full binary and its first by getenv.
        guard !environmentHasDuplicates() else { handOff(arguments) }
        let environment = FrontRequest.processEnvironment
        switch FrontRequest(arguments: Array(arguments.dropFirst()), environment: environment) {
        case .version:
            finish(stdout: ChappieBuild.version + "\n")
        case .token(let request):
            // Which account a directory's `.chappie-account` names is the full binary's to say.
            guard request.name != nil || !DataDirectory.hasAccountBinding(),
                let directory = DataDirectory(home: request.home, environment: environment)
            else { handOff(arguments) }
            // Tokens and the key pass through this process, as through the full binary, which makes
            // itself non-dumpable first thing too (exec makes the full binary dumpable again until it does).
            chappie_process_set_dumpable(0)
            let token: FrontToken
            // The data directory's socket only in a directory of this user's alone: another user who
            // can write it could have put a server of their own there (the full binary says so).
            guard request.socket != nil || directory.isPrivateDirectory(directory.path),
                let socket = request.socket.map(DataDirectory.absolute) ?? directory.socket
            else { handOff(arguments) }
            switch DaemonTokenClient.ask(request, socket: socket) {
            case .token(let answer):
                token = answer
            case .refused(let message, let exitCode):
                finish(stderr: "error: \(TerminalText.sanitized(message, keepingLineBreaks: true))\n", status: exitCode)
            case .full:
                handOff(arguments)
            case .noDaemon:
                guard sodium_init() >= 0, let stored = StoredTokenReader(directory: directory, request: request, now: now()).read() else {
                    handOff(arguments)
                }
                token = stored
            }
            guard let output = TokenOutput.render(token, json: request.json) else { handOff(arguments) }
            finish(stdout: output.stdout, stderr: output.stderr)
        case .accountsList(let home):
            guard let directory = DataDirectory(home: home, environment: environment), let userHome = environment("HOME"), !userHome.isEmpty
            else { handOff(arguments) }
            chappie_process_set_dumpable(0)
            guard sodium_init() >= 0, let table = AccountsTable(directory: directory, now: now(), userHome: userHome).render() else {
                handOff(arguments)
            }
            finish(stdout: table)
        case .accountsCurrent(let home):
            // A directory's `.chappie-account` names the account: the full binary's to read.
            guard !DataDirectory.hasAccountBinding(), let directory = DataDirectory(home: home, environment: environment) else {
                handOff(arguments)
            }
            chappie_process_set_dumpable(0)
            guard sodium_init() >= 0, let name = ActiveAccount(directory: directory).name() else { handOff(arguments) }
            // The full binary's standard output is line-buffered on a terminal (shown before its
            // stderr line) and written at exit otherwise (after it).
            finish(stdout: name + "\n", stderr: name + ", the active account\n", stdoutFirst: isatty(1) == 1)
        case .prompt(let format, let home):
            // A directory's `.chappie-account` chooses the account: the full binary's to read. No
            // daemon answering: the full binary reads the store.
            // A reset time in a zone Foundation may name otherwise than the C library: the full binary's.
            guard !DataDirectory.hasAccountBinding(), !format.contains("{reset}") || PromptText.zoneIsNamedAlike(environment),
                let directory = DataDirectory(home: home, environment: environment), directory.isPrivateDirectory(directory.path),
                case .line(let line) = DaemonPromptReader.ask(format: format, socket: directory.socket, now: now)
            else { handOff(arguments) }
            finish(stdout: line.map { $0 + "\n" } ?? "")
        case .full:
            handOff(arguments)
        }
    }

    /// The full binary for this front binary, if it is there.
    public static func fullBinary() -> String? {
        candidates().first { access($0, X_OK) == 0 }
    }

    /// Where the full binary is looked for: the installed layout first, then the build directory's.
    static func candidates() -> [String] {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let count = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard count > 0 else { return [] }
        let executable = String(decoding: buffer[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let directory = executable.split(separator: "/", omittingEmptySubsequences: false).dropLast().joined(separator: "/")
        let prefix = directory.split(separator: "/", omittingEmptySubsequences: false).dropLast().joined(separator: "/")
        return [prefix + "/libexec/chappie/" + fullBinaryName, directory + "/" + fullBinaryName]
    }

    /// Replaces this process with the full binary, given the same arguments and environment.
    static func handOff(_ arguments: [String]) -> Never {
        if let full = fullBinary() {
            var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
            execv(full, &argv)
            let reason = String(cString: strerror(errno))
            finish(stderr: "error: chappie could not start \(full): \(reason). \(reinstall)\n", status: 78)
        }
        let looked = candidates().joined(separator: " and ")
        // An installation that lacks a part: a configuration problem of this machine (78), not a service down.
        finish(
            stderr: """
                error: chappie's full binary, \(fullBinaryName), is missing (looked for \(looked)); every command but --version, \
                a stored token, accounts list and current, and a prompt from the daemon runs in it. \(reinstall)

                """, status: 78)
    }

    /// How to put both binaries back.
    static let reinstall = """
        Reinstall chappie: sudo dpkg -i chappie_VERSION_ARCH.deb, or ./install.sh PREFIX from the release tarball \
        (both put PREFIX/bin/chappie and PREFIX/libexec/chappie/\(fullBinaryName)), or make install from the source.
        """

    /// Whether a name appears twice in the environment.
    static func environmentHasDuplicates() -> Bool {
        // A few dozen names: compared pairwise, which costs less at start than a Set's set-up.
        var names: [Substring] = []
        var entry = environ
        while let pointer = entry.pointee {
            let name = String(cString: pointer).prefix { $0 != "=" }
            if names.contains(name) { return true }
            names.append(name)
            entry += 1
        }
        return false
    }

    /// Seconds since 1970, to the nanosecond.
    static func now() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_REALTIME, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }

    /// Writes the output and exits with `status`.
    static func finish(stdout: String = "", stderr: String = "", status: Int32 = 0, stdoutFirst: Bool = false) -> Never {
        // As the full binary: a closed output is an error to stop writing at, not a signal. Only
        // now, when nothing is handed on any more (an ignored signal would stay ignored across exec).
        signal(SIGPIPE, SIG_IGN)
        // In the order the full binary writes them, which a terminal showing both keeps.
        if stdoutFirst { StandardStream.output.write(stdout) }
        StandardStream.error.write(stderr)
        if !stdoutFirst { StandardStream.output.write(stdout) }
        exit(status)
    }
}
