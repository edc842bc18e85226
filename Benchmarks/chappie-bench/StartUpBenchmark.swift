import ChappieCore
import ChappieStore
import ChappieVault
import Foundation

/// Issue 14's start-up targets, side by side in one run: with 50 accounts stored, `chappie token`
/// (a valid stored token, no daemon) at most 3× and `chappie accounts list` at most 4× a bare
/// `sqlite3 DB 'select count(*) from accounts'` on the same file; `--version` for the floor of
/// chappie's own process. The three are measured in turn, round after round, so that the machine's
/// drift falls on all of them alike.
func runStartUp(chappie: URL) async throws -> [String] {
    let home = FileManager.default.temporaryDirectory.appendingPathComponent("chappie-bench-startup-\(UUID().uuidString)")
    defer { try? FileManager.default.removeItem(at: home) }
    let key = SecretKey.generate()
    try KeyFile.write(key, to: home.appendingPathComponent("chappie.key"))
    let store = try StoreDatabase.open(at: StoreLocation(directory: home)).unlock(with: key)
    let idToken = String(repeating: "i", count: 1800), accessToken = String(repeating: "a", count: 1800)
    for index in 0..<50 {
        _ = try await store.save(
            info: ChappieAccountInfo(email: "user\(index)@example.com", userID: "user-\(index)", accountID: "acct-\(index)", plan: .plus),
            credentials: Credentials(idToken: idToken, accessToken: accessToken, refreshToken: "rt_\(index)_" + String(repeating: "r", count: 60)),
            accessTokenExpiresAt: Date().addingTimeInterval(86400), refreshedAt: Date(), name: nil, event: .imported)
    }
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
        return String(format: "| %@, 50 accounts, whole process, 30 runs | median %.1f ms | %@%@ | min %.1f ms |",
                      runs[index].label, median, ratio, target, sorted[index][0])
    }
}
