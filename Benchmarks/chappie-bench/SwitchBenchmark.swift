import ChappieTestSupport
import Foundation

/// Issue 27's rows: how soon `chappie daemon --auto-switch`, with its default options, moves off an
/// active account that reaches its limit.
///
/// 1. The active account is at 85 % (polled by the daemon), then the emulator reports 100 %: the
///    time from that change to the active account being another one.
/// 2. The new active account reaches 100 % and `chappie usage poll` stores it: the time from the
///    poll's end to the switch.
func runSwitch(port: Int) async throws -> [String] {
    let home = FileManager.default.temporaryDirectory.appendingPathComponent("chappie-bench-switch-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: home, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
    defer { try? FileManager.default.removeItem(at: home) }
    try await signIn(count: 3, port: port, home: home)
    let chappie = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("chappie")
    let issuer = "http://127.0.0.1:\(port)"
    let service = ["--issuer", issuer, "--backend", issuer + "/backend-api", "--home", home.path]
    let environment: [String: String?] = ["HOME": home.path, "CODEX_HOME": nil, "CHAPPIE_PASSPHRASE": nil, "CHAPPIE_KEY_FILE": nil]
    func run(_ arguments: [String]) async throws -> String {
        let result = try await runProcess(chappie, arguments + service, environment: environment, timeout: .seconds(60))
        precondition(result.status == 0, "chappie \(arguments.joined(separator: " ")) failed: \(result.stderr)")
        return result.stdout
    }
    func setUsage(_ accountID: String, fiveHour: Double) async throws {
        _ = try await runProcess(
            URL(fileURLWithPath: "/usr/bin/curl"),
            ["-s", "-X", "POST", "-d", #"{"five_hour_used_percent":\#(fiveHour)}"#, "\(issuer)/_emulator/accounts/\(accountID)/usage"])
    }
    func current() async throws -> String { try await run(["accounts", "current"]).trimmingCharacters(in: .whitespacesAndNewlines) }
    let listed = try JSONSerialization.jsonObject(with: Data(try await run(["accounts", "list", "--json"]).utf8)) as? [[String: Any]] ?? []
    let ids = Dictionary(
        uniqueKeysWithValues: listed.compactMap { account in
            (account["name"] as? String).flatMap { name in (account["chatgptAccountID"] as? String).map { (name, $0) } }
        })
    let names = ids.keys.sorted()
    precondition(names.count == 3, "three accounts were signed in: \(names)")
    _ = try await run(["accounts", "switch", names[0], "--no-codex-home"])
    try await setUsage(ids[names[0]]!, fiveHour: 85)

    let daemon = try ChildProcess(chappie, ["daemon", "--auto-switch", "--log-level", "warning"] + service)
    defer {
        if daemon.isRunning { daemon.terminate() }
        // A defer cannot wait asynchronously; the daemon stops in a moment, and nothing else runs.
        while daemon.isRunning { usleep(5000) }
    }
    // The daemon polls at start: wait until it has the 85 % reading.
    for _ in 0..<600 {
        let usage = try JSONSerialization.jsonObject(with: Data(try await run(["usage", "--cached", "--json", names[0]]).utf8)) as? [[String: Any]]
        if ((usage?.first?["usage"] as? [String: Any])?["fiveHour"] as? [String: Any])?["usedPercent"] as? Double == 85 { break }
        try await Task.sleep(for: .milliseconds(100))
    }
    let clock = ContinuousClock()
    func waitForSwitch(from name: String) async throws -> Duration {
        let start = clock.now
        while try await current() == name {
            precondition(clock.now - start < .seconds(600), "no switch within 10 minutes")
            try await Task.sleep(for: .milliseconds(100))
        }
        return clock.now - start
    }

    try await setUsage(ids[names[0]]!, fiveHour: 100)
    let nearLimit = try await waitForSwitch(from: names[0])
    let second = try await current()
    try await setUsage(ids[second]!, fiveHour: 100)
    _ = try await run(["usage", "poll", second])
    let afterPoll = try await waitForSwitch(from: second)
    func seconds(_ duration: Duration) -> Double { Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18 }
    return [
        String(
            format: "| daemon, default options: the active account at 85 %%, then 100 %% at the service → switched (target 90 s) | %.1f s | | |",
            seconds(nearLimit)),
        String(
            format: "| daemon, default options: `chappie usage poll` stores 100 %% for the active account → switched (target 10 s) | %.1f s | | |",
            seconds(afterPoll)),
    ]
}
