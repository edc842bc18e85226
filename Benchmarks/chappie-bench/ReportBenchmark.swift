import ChappieCore
import ChappieStore
import ChappieVault
import Foundation
import GRDB

/// Writes 20,000 readings per account, one every 3 minutes, in one transaction.
func fillSamples(_ queue: DatabaseQueue, ids: [Int64], start: Double) throws {
    try queue.write { db in
        let insert = try db.makeStatement(
            sql: """
                INSERT INTO usage_samples (account_id, observed_at, source, limit_id, plan, five_hour_used_percent, five_hour_window_minutes,
                    five_hour_resets_at, weekly_used_percent, weekly_window_minutes, weekly_resets_at, limit_reached)
                VALUES (?, ?, 'poll', 'codex', 'plus', ?, 300, ?, ?, 10080, ?, ?)
                """)
        for step in 0..<20_000 {
            let time = start + Double(step) * 180
            let five = Double(step % 100), week = Double(step % 3360) / 33.6
            for id in ids {
                try insert.execute(arguments: [
                    id, time, five, Int64(time / 18000 + 1) * 18000, week, Int64(time / 604_800 + 1) * 604_800, five >= 99 ? 1 : 0,
                ])
            }
        }
    }
}

/// Three runs of `chappie` with `arguments`: the wall times in ms, sorted, and the peak RSS so far.
private func threeRuns(_ chappie: URL, _ arguments: [String]) throws -> (sorted: [Double], peak: Double) {
    var times: [Double] = []
    var peak = 0.0
    for _ in 0..<3 {
        let run = try timeOnce(chappie, arguments)
        times.append(run.milliseconds)
        peak = max(peak, run.peakMiB)
    }
    return (times.sorted(), peak)
}

func runReport() async throws -> [String] {
    let home = FileManager.default.temporaryDirectory.appendingPathComponent("chappie-bench-report-\(UUID().uuidString)")
    defer { try? FileManager.default.removeItem(at: home) }
    let key = SecretKey.generate()
    try KeyFile.write(key, to: home.appendingPathComponent("chappie.key"))
    let store = try StoreDatabase.open(at: StoreLocation(directory: home)).unlock(with: key)
    var ids: [Int64] = []
    for index in 0..<50 {
        ids.append(
            try await store.save(
                info: ChappieAccountInfo(email: "user\(index)@example.com", userID: "user-\(index)", accountID: "acct-\(index)", plan: .plus),
                credentials: Credentials(idToken: "i", accessToken: "a", refreshToken: "r"), accessTokenExpiresAt: nil, refreshedAt: nil,
                name: nil, event: .imported
            ).account.id)
    }
    // 1,000,000 samples: 20,000 per account, one every 3 minutes (about 42 days).
    let database = StoreDatabase.fileURL(in: StoreLocation(directory: home))
    let queue = try DatabaseQueue(path: database.path)
    let start = 1_790_000_000.0
    try fillSamples(queue, ids: ids, start: start)
    let chappie = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("chappie")
    let output = home.appendingPathComponent("report.csv")
    _ = FileManager.default.createFile(atPath: output.path, contents: nil)
    let (chappieTimes, peak) = try threeRuns(chappie, ["usage", "report", "--by", "day", "--tz", "UTC", "-o", output.path, "--home", home.path])
    var lines = [
        String(
            format:
                "| `chappie usage report --by day`, 1,000,000 samples, 50 accounts, whole process, 3 runs | median %.0f ms | peak RSS %.0f MiB | min %.0f ms |",
            quantile(chappieTimes, 0.5), peak, chappieTimes[0])
    ]
    // The HTML report: the last 7 days (what the dashboard draws, at one reading every 3 minutes per
    // account), then the whole 42 days; in that order, as the peak RSS is the largest child's so far.
    let page = home.appendingPathComponent("report.html")
    let lastWeek = ISO8601DateFormatter().string(from: Date(timeIntervalSince1970: start + 20_000 * 180 - 7 * 86400))
    for (label, period) in [("the last 7 days (168,000 samples)", ["--since", lastWeek]), ("1,000,000 samples (42 days)", [String]())] {
        _ = FileManager.default.createFile(atPath: page.path, contents: nil)
        let (times, peakHTML) = try threeRuns(
            chappie, ["usage", "report", "--format", "html", "--tz", "UTC", "-o", page.path, "--home", home.path] + period)
        let size = (try FileManager.default.attributesOfItem(atPath: page.path)[.size] as? Int) ?? 0
        lines.append(
            "| `chappie usage report --format html`, \(label), 50 accounts, whole process, 3 runs | "
                + String(
                    format: "median %.0f ms | peak RSS %.0f MiB, page %.1f MB | min %.0f ms |", quantile(times, 0.5), peakHTML,
                    Double(size) / 1_000_000, times[0]))
    }
    let sqlite = URL(fileURLWithPath: "/usr/bin/sqlite3")
    if FileManager.default.isExecutableFile(atPath: sqlite.path) {
        let query = """
            SELECT a.name, date(s.observed_at, 'unixepoch') AS day, count(*), max(five_hour_used_percent), avg(five_hour_used_percent),
                   max(weekly_used_percent), avg(weekly_used_percent), sum(limit_reached)
            FROM usage_samples s JOIN accounts a ON a.id = s.account_id WHERE s.limit_id = 'codex' GROUP BY s.account_id, day ORDER BY day, a.name;
            """
        let sqliteOutput = home.appendingPathComponent("sqlite.csv")
        _ = FileManager.default.createFile(atPath: sqliteOutput.path, contents: nil)
        var sqliteTimes: [Double] = []
        for _ in 0..<3 { sqliteTimes.append(try timeOnce(sqlite, ["-csv", database.path, query], output: sqliteOutput).milliseconds) }
        sqliteTimes.sort()
        lines.append(
            String(
                format:
                    "| `sqlite3 -csv` with an equivalent GROUP BY (day in UTC), same file, 3 runs | median %.0f ms | ratio chappie/sqlite3 %.2f | min %.0f ms |",
                quantile(sqliteTimes, 0.5), quantile(chappieTimes, 0.5) / quantile(sqliteTimes, 0.5), sqliteTimes[0]))
    } else {
        lines.append("| (sqlite3 not installed: `make bench` installs it) | | | |")
    }
    return lines
}
