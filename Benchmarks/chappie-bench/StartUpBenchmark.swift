import ChappieStore
import Foundation

/// Start-up in one interleaved run (docs/benchmarks.md, "Start-up"): with 50 accounts stored, the
/// front binary's commands beside a bare `sqlite3` read of the same file (`sqlite3 -version` for
/// `--version`), and the full binary's same commands, which were chappie before the front binary
/// (the "before" of the same run). Every command is measured in turn, round after round, so that
/// the machine's drift falls on all of them alike.
///
/// Targets: `token` ≤ 3×, `accounts list` ≤ 4×, `--version` ≤ 2× the `sqlite3` floor; `prompt`
/// through the daemon under 10 ms.
func runStartUp(chappie: URL) async throws -> [String] {
    let full = chappie.deletingLastPathComponent().appendingPathComponent("chappie-full")
    guard FileManager.default.isExecutableFile(atPath: chappie.path), FileManager.default.isExecutableFile(atPath: full.path) else {
        return ["| (chappie and chappie-full not built next to the harness: run `make bench`) | | | |"]
    }
    let sqlite = URL(fileURLWithPath: "/usr/bin/sqlite3")
    guard FileManager.default.isExecutableFile(atPath: sqlite.path) else {
        return ["| (sqlite3 not installed: `make bench` installs it) | | | |"]
    }
    // Two stores: one without a daemon, one with a daemon running (its socket answers token, usage and prompt).
    let home = try await makeStore(accounts: 50)
    let served = try await makeStore(accounts: 50)
    defer {
        try? FileManager.default.removeItem(at: home)
        try? FileManager.default.removeItem(at: served)
    }
    // Nothing leaves the machine: the daemon's endpoints are a closed loopback port, and it polls hourly.
    let offline = ["--issuer", "http://127.0.0.1:9", "--backend", "http://127.0.0.1:9/backend-api"]
    let daemon = try startDaemon(full, home: served, ["--home", served.path] + offline)
    defer {
        daemon.terminate()
        daemon.waitUntilExit()
    }
    // A first full open sets up what a store opened only by the harness lacks (the key lock).
    _ = try timeProcess(full, ["accounts", "list", "--home", home.path], runs: 1)
    _ = try timeProcess(
        full, ["accounts", "switch", "user25", "--home", served.path, "--codex-home", served.appendingPathComponent("codex").path], runs: 1)

    let database = home.appendingPathComponent(StoreDatabase.fileName).path
    struct Row {
        var label: String
        var executable: URL
        var arguments: [String]
        /// The `sqlite3` row it is compared with (0: a read of the file, 1: `-version`), and its target.
        var floor: Int?
        var target: Double?
    }
    let rows = [
        Row(label: "`sqlite3 DB 'select count(*) from accounts'`", executable: sqlite, arguments: [database, "select count(*) from accounts"]),
        Row(label: "`sqlite3 -version`", executable: sqlite, arguments: ["-version"]),
        Row(label: "`chappie --version`", executable: chappie, arguments: ["--version"], floor: 1, target: 2),
        Row(
            label: "`chappie token user25` (valid stored token, no daemon)", executable: chappie,
            arguments: ["token", "user25", "--home", home.path], floor: 0, target: 3),
        Row(
            label: "`chappie token user25` through the daemon", executable: chappie, arguments: ["token", "user25", "--home", served.path], floor: 0),
        Row(label: "`chappie accounts list`", executable: chappie, arguments: ["accounts", "list", "--home", home.path], floor: 0, target: 4),
        Row(label: "`chappie accounts current`", executable: chappie, arguments: ["accounts", "current", "--home", home.path], floor: 0),
        Row(
            label: "`chappie usage --cached` through the daemon", executable: chappie, arguments: ["usage", "--cached", "--home", served.path],
            floor: 0),
        Row(
            label: "`chappie prompt` through the daemon (target < 10 ms)", executable: chappie, arguments: ["prompt", "--home", served.path], floor: 0
        ),
        Row(label: "before: `chappie-full --version`", executable: full, arguments: ["--version"], floor: 1),
        Row(
            label: "before: `chappie-full token user25` (no daemon)", executable: full, arguments: ["token", "user25", "--home", home.path], floor: 0),
        Row(label: "before: `chappie-full accounts list`", executable: full, arguments: ["accounts", "list", "--home", home.path], floor: 0),
        Row(label: "before: `chappie-full accounts current`", executable: full, arguments: ["accounts", "current", "--home", home.path], floor: 0),
        Row(
            label: "before: `chappie-full prompt` through the daemon", executable: full, arguments: ["prompt", "--home", served.path], floor: 0),
    ]
    for row in rows { _ = try timeProcess(row.executable, row.arguments, runs: 3) }
    var times = Array(repeating: [Double](), count: rows.count)
    for _ in 0..<30 {
        for (index, row) in rows.enumerated() { times[index] += try timeProcess(row.executable, row.arguments, runs: 1) }
    }
    let medians = times.map { quantile($0.sorted(), 0.5) }
    return rows.indices.map { index in
        let row = rows[index]
        let ratio = row.floor.map { String(format: "%.2f × sqlite3", medians[index] / medians[$0]) } ?? "(the floor)"
        let target = row.target.map { String(format: " (target ≤ %.0f ×)", $0) } ?? ""
        return String(
            format: "| %@, 50 accounts, whole process, 30 runs | median %.1f ms | %@%@ | min %.1f ms |", row.label, medians[index], ratio, target,
            times[index].min() ?? 0)
    }
}
