import Chappie
import ChappieCore
import ChappieNet
import ChappieStore
import ChappieTestSupport
import ChappieVault
import Foundation

/// Issue 15's team-pool rows: a PostgreSQL 15 of Debian's packages on a Unix socket (the tests'
/// server), beside the local SQLite store.
///
/// 1. `chappie token` (a valid stored token) and `chappie accounts list` with 50 accounts, whole
///    process, on SQLite and on the pool, measured in turn, round after round.
/// 2. 200 accounts signed in at the emulator into one pool, refreshed by 4 simulated machines at
///    once (`chappie refresh` of 50 accounts each, separate data directories) with 50 ms of latency
///    at the token endpoint; then the same 200 redeemed by one machine's `refresh --all`.
func runPool(port: Int) async throws -> [String] {
    let chappie = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("chappie")
    guard FileManager.default.isExecutableFile(atPath: chappie.path) else {
        return ["| (chappie not built next to the harness: run `make bench`) | | | |"]
    }
    let server: PostgresServer
    do {
        server = try await PostgresServer.start()
    } catch {
        return ["| (PostgreSQL not available: \(error)) | | | |"]
    }
    // Stopped before returning, whatever happened: a server left running outlives the harness.
    do {
        let lines = try await poolRows(chappie: chappie, server: server, port: port)
        await server.stop()
        return lines
    } catch {
        await server.stop()
        throw error
    }
}

/// The rows, on a running server.
private func poolRows(chappie: URL, server: PostgresServer, port: Int) async throws -> [String] {
    var lines: [String] = []

    // 1. Start-up on each backend, with the same 50 accounts.
    let local = try await makeStore(accounts: 50)
    defer { try? FileManager.default.removeItem(at: local) }
    let poolURL = try await server.createDatabase()
    let poolHome = FileManager.default.temporaryDirectory.appendingPathComponent("chappie-bench-pool-\(UUID().uuidString)")
    defer { try? FileManager.default.removeItem(at: poolHome) }
    try FileManager.default.createDirectory(at: poolHome, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
    try FileManager.default.copyItem(at: local.appendingPathComponent("chappie.key"), to: poolHome.appendingPathComponent("chappie.key"))
    _ = try timeProcess(chappie, ["pool", "migrate", "--from-sqlite", local.path, "--home", poolHome.path, "--store", poolURL], runs: 1)
    // The migration moved them: make the local store again for the SQLite rows.
    try FileManager.default.removeItem(at: local)
    let sqliteHome = try await makeStore(accounts: 50)
    defer { try? FileManager.default.removeItem(at: sqliteHome) }
    let runs: [(label: String, arguments: [String])] = [
        ("`chappie token user25`, SQLite", ["token", "user25", "--home", sqliteHome.path, "--store", ""]),
        ("`chappie token user25`, pool", ["token", "user25", "--home", poolHome.path, "--store", poolURL]),
        ("`chappie accounts list`, SQLite", ["accounts", "list", "--home", sqliteHome.path, "--store", ""]),
        ("`chappie accounts list`, pool", ["accounts", "list", "--home", poolHome.path, "--store", poolURL]),
    ]
    for run in runs { _ = try timeProcess(chappie, run.arguments, runs: 3) }
    var times = Array(repeating: [Double](), count: runs.count)
    for _ in 0..<30 {
        for (index, run) in runs.enumerated() { times[index] += try timeProcess(chappie, run.arguments, runs: 1) }
    }
    for (index, run) in runs.enumerated() {
        let sorted = times[index].sorted()
        let base = index % 2 == 1 ? String(format: "%.2f × SQLite", quantile(sorted, 0.5) / quantile(times[index - 1].sorted(), 0.5)) : "-"
        lines.append(
            String(
                format: "| %@, 50 accounts, whole process, 30 runs | median %.1f ms | %@ | min %.1f ms |",
                run.label, quantile(sorted, 0.5), base, sorted[0]))
    }

    // 2. 200 accounts refreshed by 4 machines at once, 50 ms at the token endpoint.
    let fleetURL = try await server.createDatabase()
    let homes = (1...4).map { FileManager.default.temporaryDirectory.appendingPathComponent("chappie-bench-m\($0)-\(UUID().uuidString)") }
    defer { for home in homes { try? FileManager.default.removeItem(at: home) } }
    for home in homes { try FileManager.default.createDirectory(at: home, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700]) }
    let key = SecretKey.generate()
    for home in homes { try KeyFile.write(key, to: home.appendingPathComponent("chappie.key")) }
    let opened = try await StoreOpener.open(StoreOptions(home: homes[0].path, environment: [:], storeURL: fleetURL, machine: "m1"))
    let endpoints = try ChappieEndpoints(issuer: "http://127.0.0.1:\(port)", backend: "http://127.0.0.1:\(port)/backend-api")
    let signIn = DeviceCodeSignIn(oauth: OAuthClient(endpoints: endpoints, http: ChappieHTTPClient()))
    var names: [String] = []
    for _ in 0..<200 {
        let result = try await signIn.run()
        names.append(
            try await opened.store.save(
                info: result.account, credentials: result.credentials, accessTokenExpiresAt: result.accessTokenExpiresAt,
                refreshedAt: Date(), name: nil, event: .signedIn
            ).account.name.rawValue)
    }
    let statsURL = URL(string: "http://127.0.0.1:\(port)/_emulator/stats")!
    func redemptions() async throws -> (Int, Int) {
        let body = try await ChappieHTTPClient().execute(ChappieHTTPRequest(url: statsURL)).body
        let refresh = (try JSONSerialization.jsonObject(with: body) as? [String: Any])?["refresh"] as? [String: Any]
        return ((refresh?["redemptions"] as? Int) ?? 0, (refresh?["reuse_detected"] as? Int) ?? 0)
    }
    var fault = ChappieHTTPRequest(
        url: URL(string: "http://127.0.0.1:\(port)/_emulator/faults")!, method: .post, headers: ["Content-Type": "application/json"])
    fault.body = Data(#"{"kind":"latency","ms":50,"count":100000,"path":"/oauth/token"}"#.utf8)
    _ = try await ChappieHTTPClient().execute(fault)
    let service = ["--issuer", "http://127.0.0.1:\(port)", "--backend", "http://127.0.0.1:\(port)/backend-api", "--store", fleetURL]
    let (before, reuseBefore) = try await redemptions()
    let clock = ContinuousClock()
    let start = clock.now
    // Started together and waited for without blocking a thread: the emulator answers in this process.
    var machines: [(Process, URL)] = []
    for (index, home) in homes.enumerated() {
        let share = Array(names[(index * 50)..<((index + 1) * 50)])
        let log = home.appendingPathComponent("refresh.log")
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        let process = Process()
        process.executableURL = chappie
        process.arguments = ["refresh", "--quiet"] + share + ["--home", home.path, "--machine", "m\(index + 1)"] + service
        process.standardOutput = FileHandle.nullDevice
        process.standardError = try FileHandle(forWritingTo: log)
        try process.run()
        machines.append((process, log))
    }
    while machines.contains(where: { $0.0.isRunning }) { try await Task.sleep(for: .milliseconds(20)) }
    for (index, (process, log)) in machines.enumerated() where process.terminationStatus != 0 {
        fatalError(
            "machine \(index + 1): refresh exited \(process.terminationStatus): \((try? String(contentsOf: log, encoding: .utf8))?.prefix(2000) ?? "")"
        )
    }
    let fleet = milliseconds(clock.now - start)
    let (after, reuseAfter) = try await redemptions()
    lines.append(
        String(
            format:
                "| `chappie refresh` of 200 pool accounts by 4 machines at once (50 each), 50 ms server latency | total %.0f ms | %d redeemed | %d reused |",
            fleet, after - before, reuseAfter - reuseBefore))
    let single = Process()
    single.executableURL = chappie
    single.arguments = ["refresh", "--all", "--quiet", "--home", homes[0].path, "--machine", "m1"] + service
    single.standardOutput = FileHandle.nullDevice
    single.standardError = FileHandle.nullDevice
    let singleStart = clock.now
    try single.run()
    while single.isRunning { try await Task.sleep(for: .milliseconds(20)) }
    precondition(single.terminationStatus == 0, "refresh --all exited \(single.terminationStatus)")
    let one = [milliseconds(clock.now - singleStart)]
    let (last, reuseLast) = try await redemptions()
    lines.append(
        String(
            format:
                "| `chappie refresh --all` of the same 200 pool accounts by one machine, 50 ms server latency | total %.0f ms | %d redeemed | %d reused |",
            one[0], last - after, reuseLast - reuseAfter))
    fault.body = Data(#"{"kind":"latency","ms":0,"count":100000,"path":"/oauth/token"}"#.utf8)
    _ = try? await ChappieHTTPClient().execute(fault)
    return lines
}
