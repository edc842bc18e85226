public import Foundation
import Synchronization

/// A PostgreSQL server of Debian's packages (`postgresql`), started for a test in a temporary
/// directory of its own and stopped by ``stop()``, or at the latest when the test process exits,
/// however its tests ended. It listens on a Unix socket in that directory only (no TCP port to
/// collide with another test's); the user `chappie` may connect without a password.
///
/// `initdb` refuses to run as root, and CI runs as root: there the server runs as the `postgres`
/// user (through `runuser`), and the directory is made theirs.
public final class PostgresServer: Sendable {
    /// The temporary directory: the cluster in `data/`, the socket and the log beside it.
    public let directory: URL
    /// The directory of the socket, for a client's `host` (libpq) or `unixSocketPath`.
    public var socketDirectory: String { directory.path }
    /// The socket's file, `.s.PGSQL.5432` in ``socketDirectory``.
    public var socketPath: String { directory.appendingPathComponent(".s.PGSQL.\(Self.port)").path }
    /// The database superuser the tests connect as.
    public static let user = "chappie"
    /// The port number that names the socket (no TCP port is opened).
    static let port = 5432

    private let binaries: URL

    /// Starts a new server and waits until it accepts connections.
    ///
    /// - Throws: ``EmulatorHarnessError`` saying what failed (with the server's log) or what to install.
    public static func start() async throws -> PostgresServer {
        let binaries = try Self.binaries()
        let directory = try TestTokens.temporaryDirectory("chappie-pg")
        if geteuid() == 0 {
            guard let account = getpwnam("postgres") else {
                throw EmulatorHarnessError(message: "running as root needs the postgres user (Debian's postgresql package makes it)")
            }
            chown(directory.path, account.pointee.pw_uid, account.pointee.pw_gid)
        }
        let server = PostgresServer(directory: directory, binaries: binaries)
        let data = directory.appendingPathComponent("data").path
        let initialised = try await server.run("initdb", ["-D", data, "-U", user, "-A", "trust", "-E", "UTF8", "--no-sync", "--no-instructions"])
        guard initialised.status == 0 else {
            await server.stop()
            throw EmulatorHarnessError(message: "initdb failed: \(initialised.stderr)")
        }
        let options = serverOptions(directory)
        let started = try await server.run(
            "pg_ctl", ["-D", data, "-o", options, "-l", directory.appendingPathComponent("server.log").path, "-w", "-t", "120", "start"])
        guard started.status == 0 else {
            let log = (try? String(contentsOf: directory.appendingPathComponent("server.log"), encoding: .utf8)) ?? ""
            await server.stop()
            throw EmulatorHarnessError(message: "the PostgreSQL server did not start: \(started.stderr)\n\(log.suffix(2000))")
        }
        _ = liveServers.withLock { $0.insert(data) }
        return server
    }

    /// The server's settings: a socket in `directory` only, and no waiting for the disk.
    private static func serverOptions(_ directory: URL) -> String {
        "-c listen_addresses='' -k \(directory.path) -p \(port) -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
    }

    private init(directory: URL, binaries: URL) {
        self.directory = directory
        self.binaries = binaries
    }

    /// Runs `psql` as ``user`` on the database `postgres` with one SQL command; its output unaligned, without headers.
    public func psql(_ sql: String) async throws -> ProcessResult {
        try await run("psql", ["-h", socketDirectory, "-p", String(Self.port), "-U", Self.user, "-d", "postgres", "-X", "-A", "-t", "-c", sql])
    }

    /// The address of one of the server's databases, for chappie's `--store`.
    public func url(database: String) -> String {
        "postgres://\(Self.user)@/\(database)?host=\(socketDirectory)"
    }

    /// Creates a new, empty database and returns its address.
    public func createDatabase() async throws -> String {
        let name = "pool_" + UUID().uuidString.prefix(8).lowercased()
        let created = try await psql("CREATE DATABASE \(name)")
        guard created.status == 0 else { throw EmulatorHarnessError(message: "CREATE DATABASE failed: \(created.stderr)") }
        return url(database: name)
    }

    /// Runs `psql` with one SQL command on one of the server's databases, given by its address.
    public func psql(_ sql: String, in url: String) async throws -> ProcessResult {
        let database = String(url.split(separator: "?")[0].split(separator: "/").last ?? "postgres")
        return try await run("psql", ["-h", socketDirectory, "-p", String(Self.port), "-U", Self.user, "-d", database, "-X", "-A", "-t", "-c", sql])
    }

    /// The rows of every table of the database at `url`, as `pg_dump --data-only` writes them.
    public func dump(_ url: String) async throws -> ProcessResult {
        let database = String(url.split(separator: "?")[0].split(separator: "/").last ?? "postgres")
        return try await run("pg_dump", ["-h", socketDirectory, "-p", String(Self.port), "-U", Self.user, "--data-only", database])
    }

    /// Holds `table` of the database at `url` locked (ACCESS EXCLUSIVE) from a session of its own
    /// until ``release(_:in:)``; returns once the lock is held.
    public func lock(_ table: String, in url: String) async throws -> ChildProcess {
        let database = String(url.split(separator: "?")[0].split(separator: "/").last ?? "postgres")
        let arguments = [
            "-h", socketDirectory, "-p", String(Self.port), "-U", Self.user, "-d", database, "-X", "-q", "-c",
            "BEGIN; LOCK TABLE \(table) IN ACCESS EXCLUSIVE MODE; SELECT pg_sleep(600);",
        ]
        let executable = binaries.appendingPathComponent("psql")
        let holder =
            geteuid() == 0
            ? try ChildProcess(URL(fileURLWithPath: "/usr/sbin/runuser"), ["-u", "postgres", "--", executable.path] + arguments)
            : try ChildProcess(executable, arguments)
        for _ in 0..<600 {
            let held = try await psql(
                "SELECT count(*) FROM pg_locks WHERE mode = 'AccessExclusiveLock' AND granted AND relation = '\(table)'::regclass", in: url)
            if held.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "1" { return holder }
            try await Task.sleep(for: .milliseconds(50))
        }
        holder.terminate()
        throw EmulatorHarnessError(message: "the lock on \(table) was not taken")
    }

    /// Ends the session ``lock(_:in:)`` started, which releases its lock.
    public func release(_ holder: ChildProcess, in url: String) async throws {
        // Only this database's holder: other tests share the server, and may hold locks of their own.
        _ = try await psql(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE '%pg_sleep(600)%' AND pid <> pg_backend_pid() AND datname = current_database()",
            in: url)
        await holder.waitUntilExit()
    }

    /// Stops the server (fast: sessions are ended) and starts it again on the same socket, as an
    /// upgrade or a failover would.
    public func restart(downFor pause: Duration = .zero) async throws {
        try await restart { try? await Task.sleep(for: pause) }
    }

    /// Stops the server, waits for `down` to return (while it is down), and starts it again.
    public func restart(whileDown down: () async -> Void) async throws {
        let data = directory.appendingPathComponent("data").path
        _ = try await run("pg_ctl", ["-D", data, "-m", "fast", "-w", "-t", "60", "stop"])
        await down()
        let options = Self.serverOptions(directory)
        let started = try await run(
            "pg_ctl", ["-D", data, "-o", options, "-l", directory.appendingPathComponent("server.log").path, "-w", "-t", "120", "start"])
        guard started.status == 0 else { throw EmulatorHarnessError(message: "the PostgreSQL server did not start again: \(started.stderr)") }
    }

    /// Stops the server (fast shutdown: sessions are ended) and removes its directory.
    public func stop() async {
        let data = directory.appendingPathComponent("data").path
        if FileManager.default.fileExists(atPath: data + "/postmaster.pid") {
            _ = try? await run("pg_ctl", ["-D", data, "-m", "fast", "-w", "-t", "60", "stop"])
        }
        _ = liveServers.withLock { $0.remove(data) }
        try? FileManager.default.removeItem(at: directory)
    }

    /// One of the server's programs, as the postgres user when this process is root.
    private func run(_ program: String, _ arguments: [String]) async throws -> ProcessResult {
        let executable = binaries.appendingPathComponent(program)
        if geteuid() == 0 {
            return try await runProcess(
                URL(fileURLWithPath: "/usr/sbin/runuser"), ["-u", "postgres", "--", executable.path] + arguments, timeout: .seconds(180))
        }
        return try await runProcess(executable, arguments, timeout: .seconds(180))
    }

    /// The newest `/usr/lib/postgresql/N/bin`.
    private static func binaries() throws -> URL {
        let root = URL(fileURLWithPath: "/usr/lib/postgresql")
        let versions = ((try? FileManager.default.contentsOfDirectory(atPath: root.path)) ?? []).compactMap(Int.init).sorted()
        guard let newest = versions.last else {
            throw EmulatorHarnessError(message: "PostgreSQL is not installed: `make test` installs Debian's postgresql package")
        }
        return root.appendingPathComponent("\(newest)/bin")
    }
}

/// One server for a whole test process, started on first use: each test takes a database of its
/// own on it (``PostgresServer/createDatabase()``). Stopped when the test process exits. A test
/// that restarts or stops its server starts one of its own instead.
public enum SharedPostgres {
    private static let server = Task { try await PostgresServer.start() }

    /// A new, empty database on the shared server, and the server.
    public static func database() async throws -> (server: PostgresServer, url: String) {
        let server = try await server.value
        return (server, try await server.createDatabase())
    }
}

/// The data directories of servers still running, stopped when the test process exits (a server
/// is a daemon of its own: nothing else would stop it).
private let liveServers: Mutex<Set<String>> = {
    atexit {
        for data in liveServers.withLock({ $0 }) {
            // Immediate shutdown by signal: atexit cannot wait for pg_ctl. SIGQUIT ends the postmaster and its children.
            if let pid = (try? String(contentsOfFile: data + "/postmaster.pid", encoding: .utf8))?.split(separator: "\n").first.flatMap({ pid_t($0) })
            {
                kill(pid, SIGQUIT)
            }
        }
    }
    return Mutex([])
}()
