import ChappieStore
import Foundation

/// Issue 14's start-up targets, side by side in one run: with 50 accounts stored, `chappie token`
/// (a valid stored token, no daemon) at most 3× and `chappie accounts list` at most 4× a bare
/// `sqlite3 DB 'select count(*) from accounts'` on the same file; `--version` for the floor of
/// chappie's own process. The four are measured in turn, round after round, so that the machine's
/// drift falls on all of them alike.
func runStartUp(chappie: URL) async throws -> [String] {
    let home = try await makeStore(accounts: 50)
    defer { try? FileManager.default.removeItem(at: home) }
    guard FileManager.default.isExecutableFile(atPath: chappie.path) else {
        return ["| (chappie not built next to the harness: run `make bench`) | | | |"]
    }
    let sqlite = URL(fileURLWithPath: "/usr/bin/sqlite3")
    guard FileManager.default.isExecutableFile(atPath: sqlite.path) else {
        return ["| (sqlite3 not installed: `make bench` installs it) | | | |"]
    }
    let database = home.appendingPathComponent(StoreDatabase.fileName).path
    let runs: [(label: String, executable: URL, arguments: [String])] = [
        ("`sqlite3 DB 'select count(*) from accounts'`", sqlite, [database, "select count(*) from accounts"]),
        ("`chappie --version`", chappie, ["--version"]),
        ("`chappie token user25` (valid stored token, no daemon)", chappie, ["token", "user25", "--home", home.path]),
        ("`chappie accounts list`", chappie, ["accounts", "list", "--home", home.path]),
    ]
    for run in runs { _ = try timeProcess(run.executable, run.arguments, runs: 3) }
    var times = Array(repeating: [Double](), count: runs.count)
    for _ in 0..<30 {
        for (index, run) in runs.enumerated() { times[index] += try timeProcess(run.executable, run.arguments, runs: 1) }
    }
    let sorted = times.map { $0.sorted() }
    let floor = quantile(sorted[0], 0.5)
    let targets: [Double?] = [nil, nil, 3, 4]
    return runs.indices.map { index in
        let median = quantile(sorted[index], 0.5)
        let ratio = index == 0 ? "1.00 × (the floor)" : String(format: "%.2f × sqlite3", median / floor)
        let target = targets[index].map { String(format: " (target ≤ %.0f ×)", $0) } ?? ""
        return String(
            format: "| %@, 50 accounts, whole process, 30 runs | median %.1f ms | %@%@ | min %.1f ms |",
            runs[index].label, median, ratio, target, sorted[index][0])
    }
}
