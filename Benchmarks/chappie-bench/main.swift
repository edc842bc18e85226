// chappie-bench: the numbers in docs/benchmarks.md. Run with `make bench` (release build).
//
// 1. 1,000 small HTTP requests to the emulator on loopback through ChappieNet, one at a time,
//    then with 16 in flight. The emulator runs in this process, so both share the 2 cores.
// 2. Decoding a 10 MB text/event-stream of Responses-shaped events with ServerSentEventDecoder,
//    fed in 16 KiB chunks as the network would deliver it.
// 3. Whole-process time of the release `chappie` (built next to this harness) with 100 accounts
//    stored: `chappie accounts list`, and `chappie accounts show` (opens one sealed credential).
// 4. With 200 accounts signed in at the emulator: `chappie token` with a valid stored token,
//    `chappie refresh --all` with 50 ms of latency injected at the token endpoint, and
//    `chappie usage poll --all` with 50 ms at the usage endpoint.
// 6. A 1 MB streamed reply from the emulator through ChappieClient over WebSocket and over HTTP/SSE:
//    time to first delta and total, beside `curl -N` fetching the same SSE stream.
// 5. `chappie usage report --by day` over 1,000,000 samples of 50 accounts, whole process (time and
//    peak memory), beside `sqlite3 -csv` running an equivalent GROUP BY on the same file.
// 7. Start-up (StartUpBenchmark.swift): the front binary's `--version`, `token` (alone and through
//    the daemon), `accounts list`, `usage --cached` and `prompt` with 50 accounts, beside a bare
//    `sqlite3` read of the same file and the full binary's same commands, in one run.
//    `chappie-bench startup [--chappie PATH]` runs only these rows, against another build if given
//    (its `chappie-full` beside it).
// 8. The team pool (PoolBenchmark.swift): token and accounts list on PostgreSQL beside SQLite, and
//    200 accounts refreshed by 4 machines at once. `chappie-bench pool` runs only these rows.
// 9. Auto-switch on time (SwitchBenchmark.swift): the daemon with default options moving off an
//    account that reaches its limit. `chappie-bench switch` runs only these rows.
import ChappieDaemonClient
import Chappie
import ChappieCore
import ChappieEmulator
import ChappieNet
import ChappieService
import ChappieStore
import ChappieVault
import Foundation
import GRDB

/// Milliseconds of a duration.
func milliseconds(_ duration: Duration) -> Double {
    let (seconds, attoseconds) = duration.components
    return Double(seconds) * 1000 + Double(attoseconds) / 1e15
}

/// The value at a quantile of sorted samples.
func quantile(_ sorted: [Double], _ q: Double) -> Double {
    sorted[min(sorted.count - 1, Int((Double(sorted.count - 1) * q).rounded()))]
}

/// Peak resident memory of this process so far, in MiB (VmHWM).
func peakResidentMiB() -> Double {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
        let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
        let kilobytes = Double(line.split(separator: " ").dropFirst().first ?? "")
    else { return 0 }
    return kilobytes / 1024
}

func runHTTP(port: Int) async throws -> [String] {
    let client = ChappieHTTPClient()
    let url = URL(string: "http://127.0.0.1:\(port)/.well-known/openid-configuration")!
    let clock = ContinuousClock()
    for _ in 0..<100 { _ = try await client.execute(ChappieHTTPRequest(url: url)) }

    var latencies: [Double] = []
    let sequentialStart = clock.now
    for _ in 0..<1000 {
        let start = clock.now
        let response = try await client.execute(ChappieHTTPRequest(url: url))
        precondition(response.status == 200)
        latencies.append(milliseconds(clock.now - start))
    }
    let sequentialTotal = milliseconds(clock.now - sequentialStart)
    latencies.sort()

    let concurrentStart = clock.now
    let concurrentLatencies = try await withThrowingTaskGroup(of: Double.self) { group in
        var issued = 0
        var results: [Double] = []
        func issue() {
            group.addTask {
                let start = clock.now
                let response = try await client.execute(ChappieHTTPRequest(url: url))
                precondition(response.status == 200)
                return milliseconds(clock.now - start)
            }
            issued += 1
        }
        while issued < 16 { issue() }
        while let latency = try await group.next() {
            results.append(latency)
            if issued < 1000 { issue() }
        }
        return results.sorted()
    }
    let concurrentTotal = milliseconds(clock.now - concurrentStart)

    return [
        String(
            format: "| 1,000 requests, sequential | %.0f ms | %.0f req/s | p50 %.2f ms, p99 %.2f ms |",
            sequentialTotal, 1000 / sequentialTotal * 1000, quantile(latencies, 0.5), quantile(latencies, 0.99)),
        String(
            format: "| 1,000 requests, 16 in flight | %.0f ms | %.0f req/s | p50 %.2f ms, p99 %.2f ms |",
            concurrentTotal, 1000 / concurrentTotal * 1000, quantile(concurrentLatencies, 0.5), quantile(concurrentLatencies, 0.99)),
    ]
}

func runSSE() -> [String] {
    var stream = Data()
    var events = 0
    let delta =
        #"event: response.output_text.delta"# + "\n"
        + #"data: {"type":"response.output_text.delta","item_id":"msg_1","output_index":0,"content_index":0,"delta":"Hello, world! "}"# + "\n\n"
    let comment = ": keep-alive\r\n"
    while stream.count < 10_000_000 {
        stream.append(contentsOf: delta.utf8)
        events += 1
        if events % 100 == 0 { stream.append(contentsOf: comment.utf8) }
    }
    let chunkSize = 16 * 1024
    let chunks = stride(from: 0, to: stream.count, by: chunkSize).map { stream.subdata(in: $0..<min(stream.count, $0 + chunkSize)) }
    let clock = ContinuousClock()
    var timings: [Double] = []
    for _ in 0..<5 {
        var decoder = ServerSentEventDecoder()
        var decoded = 0
        let start = clock.now
        for chunk in chunks { decoded += decoder.decode(chunk).count }
        decoder.finish()
        timings.append(milliseconds(clock.now - start))
        precondition(decoded == events, "decoded \(decoded) of \(events) events")
    }
    timings.sort()
    let median = timings[timings.count / 2]
    let megabytes = Double(stream.count) / 1_000_000
    return [
        String(
            format: "| SSE decode, %.1f MB (%d events, 16 KiB chunks), median of 5 | %.0f ms | %.0f MB/s | %.0f events/ms |",
            megabytes, events, median, megabytes / median * 1000, Double(events) / median)
    ]
}

/// Runs `chappie` with `arguments` `runs` times; returns the wall times in milliseconds, sorted.
/// Processes are started with posix_spawn and reaped with waitpid, so that the time is the
/// process's own and not a polling interval of Foundation's Process.
func timeProcess(_ executable: URL, _ arguments: [String], runs: Int) throws -> [Double] {
    let clock = ContinuousClock()
    var times: [Double] = []
    let argv = ([executable.path] + arguments).map { strdup($0) } + [nil]
    defer { argv.forEach { free($0) } }
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
    posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
    defer { posix_spawn_file_actions_destroy(&actions) }
    for _ in 0..<runs {
        var pid: pid_t = 0
        let start = clock.now
        guard posix_spawn(&pid, executable.path, &actions, nil, argv, environ) == 0 else {
            fatalError("cannot start \(executable.path)")
        }
        var status: Int32 = 0
        waitpid(pid, &status, 0)
        times.append(milliseconds(clock.now - start))
        if status != 0 { fatalError("\(arguments.prefix(3)) exited with status \(status)") }
    }
    return times.sorted()
}

/// A new data directory with a key file and `count` accounts (user0, user1, …) whose tokens stay
/// valid for a day; the caller removes it.
func makeStore(accounts count: Int) async throws -> URL {
    let home = FileManager.default.temporaryDirectory.appendingPathComponent("chappie-bench-\(UUID().uuidString)")
    let key = SecretKey.generate()
    try KeyFile.write(key, to: home.appendingPathComponent("chappie.key"))
    let store = try StoreDatabase.open(at: StoreLocation(directory: home)).unlock(with: key)
    // An access token shaped as the issuer's: a JWT whose `exp` is a day away (unsigned; nothing here checks).
    let claims = Data(#"{"exp":\#(Int(Date().timeIntervalSince1970) + 86400)}"#.utf8).base64EncodedString()
        .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    let idToken = String(repeating: "i", count: 1800), accessToken = "e30." + claims + "." + String(repeating: "s", count: 1700)
    for index in 0..<count {
        _ = try await store.save(
            info: ChappieAccountInfo(email: "user\(index)@example.com", userID: "user-\(index)", accountID: "acct-\(index)", plan: .plus),
            credentials: Credentials(idToken: idToken, accessToken: accessToken, refreshToken: "rt_\(index)_" + String(repeating: "r", count: 60)),
            accessTokenExpiresAt: Date().addingTimeInterval(86400), refreshedAt: Date(), name: nil, event: .imported)
    }
    // An active account, as a user's first sign-in leaves one (`accounts current`, `prompt`).
    if count > 0 { _ = try await store.activate(try AccountName("user0")) }
    return home
}

func runStore() async throws -> [String] {
    let home = try await makeStore(accounts: 100)
    defer { try? FileManager.default.removeItem(at: home) }
    let chappie = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("chappie")
    guard FileManager.default.isExecutableFile(atPath: chappie.path) else {
        return ["| (chappie not built next to the harness: run `make bench`) | | | |"]
    }
    var lines: [String] = []
    for (label, arguments) in [
        ("`chappie accounts list`, 100 accounts", ["accounts", "list", "--home", home.path]),
        ("`chappie accounts show user50` (opens one sealed credential)", ["accounts", "show", "user50", "--home", home.path]),
        ("`chappie --version` (process start-up alone)", ["--version"]),
    ] {
        _ = try timeProcess(chappie, arguments, runs: 3)
        let times = try timeProcess(chappie, arguments, runs: 30)
        lines.append(
            String(
                format: "| %@, whole process, 30 runs | median %.1f ms | p90 %.1f ms | min %.1f ms |",
                label, quantile(times, 0.5), quantile(times, 0.9), times[0]))
    }
    return lines
}

/// Signs `count` accounts in at the emulator through the device-code flow and stores them.
func signIn(count: Int, port: Int, home: URL) async throws {
    let key = SecretKey.generate()
    try KeyFile.write(key, to: home.appendingPathComponent("chappie.key"))
    let store = try StoreDatabase.open(at: StoreLocation(directory: home)).unlock(with: key)
    let endpoints = try ChappieEndpoints(issuer: "http://127.0.0.1:\(port)", backend: "http://127.0.0.1:\(port)/backend-api")
    let signIn = DeviceCodeSignIn(oauth: OAuthClient(endpoints: endpoints, http: ChappieHTTPClient()))
    for _ in 0..<count {
        let result = try await signIn.run()
        _ = try await store.save(
            info: result.account, credentials: result.credentials, accessTokenExpiresAt: result.accessTokenExpiresAt,
            refreshedAt: Date(), name: nil, event: .signedIn)
    }
}

/// `chappie daemon` with `arguments`, polling hourly and logging warnings only (discarded), once
/// its socket is in `home`; the caller stops it.
func startDaemon(_ chappie: URL, home: URL, _ arguments: [String]) throws -> Process {
    let daemon = Process()
    daemon.executableURL = chappie
    // Its standard input is a pipe the harness holds: should the harness stop before it stops the
    // daemon (a failed row traps), the daemon stops with it.
    daemon.arguments = ["daemon", "--poll-interval", "1h", "--log-level", "warning", "--stop-when-stdin-closes"] + arguments
    daemon.standardInput = Pipe()
    daemon.standardOutput = FileHandle.nullDevice
    daemon.standardError = FileHandle.nullDevice
    try daemon.run()
    for _ in 0..<200 where !FileManager.default.fileExists(atPath: home.appendingPathComponent("chappie.sock").path) { usleep(50_000) }
    return daemon
}

/// The daemon over the 200 signed-in accounts: `chappie token` through its socket, and its idle
/// memory and CPU over 60 s.
func runDaemon(chappie: URL, home: URL, service: [String]) async throws -> [String] {
    let daemon = try startDaemon(chappie, home: home, service)
    defer {
        daemon.terminate()
        daemon.waitUntilExit()
    }
    let socket = home.appendingPathComponent("chappie.sock")
    // Let the first poll of every account finish before measuring: wait until the daemon reports it.
    for _ in 0..<120 {
        let status = Process()
        status.executableURL = chappie
        status.arguments = ["status", "--json"] + service
        let output = Pipe()
        status.standardOutput = output
        status.standardError = FileHandle.nullDevice
        try status.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        status.waitUntilExit()
        let polls =
            ((try? JSONSerialization.jsonObject(with: data)) as? [String: Any]).flatMap { ($0["daemon"] as? [String: Any])?["polls"] as? Int } ?? 0
        if polls >= 200 { break }
        sleep(1)
    }
    _ = try timeProcess(chappie, ["token", "user50"] + service, runs: 3)
    let clock = ContinuousClock()
    var roundTrips: [Double] = []
    for _ in 0..<30 {
        let start = clock.now
        let reply = try await DaemonClient.send(DaemonRequest(command: "token", account: "user50"), to: socket)
        precondition(reply?.ok == true, "the daemon did not answer")
        roundTrips.append(milliseconds(clock.now - start))
    }
    roundTrips.sort()
    let token = try timeProcess(chappie, ["token", "user50"] + service, runs: 30)
    func cpuSeconds() -> Double {
        guard let stat = try? String(contentsOfFile: "/proc/\(daemon.processIdentifier)/stat", encoding: .utf8) else { return 0 }
        let fields = stat.split(separator: ")").last?.split(separator: " ") ?? []
        // utime and stime are fields 14 and 15 of /proc/PID/stat; after the ")" they are at 11 and 12.
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return 0 }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }
    func residentMiB() -> Double {
        guard let status = try? String(contentsOfFile: "/proc/\(daemon.processIdentifier)/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
            let kilobytes = Double(line.split(separator: " ").dropFirst().first ?? "")
        else { return 0 }
        return kilobytes / 1024
    }
    let before = cpuSeconds()
    sleep(60)
    let used = cpuSeconds() - before
    return [
        String(
            format:
                "| `chappie token user50` through the daemon's socket, 200 accounts, whole process, 30 runs | median %.1f ms | p90 %.1f ms | min %.1f ms |",
            quantile(token, 0.5), quantile(token, 0.9), token[0]),
        String(
            format: "| the same request's round trip on the socket alone, 30 runs | median %.2f ms | p90 %.2f ms | min %.2f ms |",
            quantile(roundTrips, 0.5), quantile(roundTrips, 0.9), roundTrips[0]),
        String(
            format:
                "| `chappie daemon`, 200 accounts, idle for 60 s (polls hourly, refreshes at expiry) | resident %.1f MiB | CPU %.2f s (%.2f %%) | |",
            residentMiB(), used, used / 60 * 100),
    ]
}

func runTokens(port: Int) async throws -> [String] {
    let home = FileManager.default.temporaryDirectory.appendingPathComponent("chappie-bench-\(UUID().uuidString)")
    defer { try? FileManager.default.removeItem(at: home) }
    try await signIn(count: 200, port: port, home: home)
    let chappie = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("chappie")
    let service = ["--home", home.path, "--issuer", "http://127.0.0.1:\(port)", "--backend", "http://127.0.0.1:\(port)/backend-api"]
    var lines: [String] = []
    _ = try timeProcess(chappie, ["token", "user50"] + service, runs: 3)
    let token = try timeProcess(chappie, ["token", "user50"] + service, runs: 30)
    lines.append(
        String(
            format:
                "| `chappie token user50` (valid stored token), 200 accounts, whole process, 30 runs | median %.1f ms | p90 %.1f ms | min %.1f ms |",
            quantile(token, 0.5), quantile(token, 0.9), token[0]))
    var fault = ChappieHTTPRequest(
        url: URL(string: "http://127.0.0.1:\(port)/_emulator/faults")!, method: .post, headers: ["Content-Type": "application/json"])
    fault.body = Data(#"{"kind":"latency","ms":50,"count":100000,"path":"/oauth/token"}"#.utf8)
    _ = try await ChappieHTTPClient().execute(fault)
    let refresh = try timeProcess(chappie, ["refresh", "--all", "--quiet"] + service, runs: 5)
    lines.append(
        String(
            format:
                "| `chappie refresh --all`, 200 accounts, 50 ms server latency, 8 at a time, 5 runs | median %.0f ms | max %.0f ms | min %.0f ms |",
            quantile(refresh, 0.5), refresh[refresh.count - 1], refresh[0]))
    lines += try await runDaemon(chappie: chappie, home: home, service: service)
    fault.body = Data(#"{"kind":"latency","ms":50,"count":100000,"path":"/backend-api/wham/usage"}"#.utf8)
    _ = try await ChappieHTTPClient().execute(fault)
    let poll = try timeProcess(chappie, ["usage", "poll", "--all"] + service, runs: 5)
    lines.append(
        String(
            format:
                "| `chappie usage poll --all`, 200 accounts, 50 ms server latency, 8 at a time, 5 runs | median %.0f ms | max %.0f ms | min %.0f ms |",
            quantile(poll, 0.5), poll[poll.count - 1], poll[0]))
    return lines
}

/// Runs a process once; returns its wall time in ms and the peak resident memory of the largest
/// child so far in MiB (getrusage of the children).
func timeOnce(_ executable: URL, _ arguments: [String], output: URL? = nil) throws -> (milliseconds: Double, peakMiB: Double) {
    let process = Process()
    process.executableURL = executable
    process.arguments = arguments
    process.standardOutput = try output.map { try FileHandle(forWritingTo: $0) } ?? FileHandle.nullDevice
    process.standardError = FileHandle.nullDevice
    let clock = ContinuousClock()
    let start = clock.now
    try process.run()
    process.waitUntilExit()
    let elapsed = milliseconds(clock.now - start)
    precondition(process.terminationStatus == 0, "\(executable.lastPathComponent) \(arguments) exited \(process.terminationStatus)")
    var usage = rusage()
    getrusage(RUSAGE_CHILDREN.rawValue, &usage)
    return (elapsed, Double(usage.ru_maxrss) / 1024)
}

func runStream(port: Int) async throws -> [String] {
    let home = FileManager.default.temporaryDirectory.appendingPathComponent("chappie-bench-stream-\(UUID().uuidString)")
    defer { try? FileManager.default.removeItem(at: home) }
    try await signIn(count: 1, port: port, home: home)
    let endpoints = try ChappieEndpoints(issuer: "http://127.0.0.1:\(port)", backend: "http://127.0.0.1:\(port)/backend-api")
    let options = StoreOptions(home: home.path, environment: [:])
    let store = try await StoreOpener.open(options).local!
    let account = try await store.accounts()[0]
    // 1 MB of text in 10,000 deltas of 100 characters (the emulator echoes the prompt word by word).
    let prompt = (0..<10_000).map { _ in String(repeating: "x", count: 99) }.joined(separator: " ")
    let clock = ContinuousClock()
    var lines: [String] = []
    var sseTotal = 0.0
    for (label, policy) in [("WebSocket", ChappieStreamingTransportPolicy(fallsBackToHTTPSSE: false)), ("HTTP/SSE", .httpSSEOnly)] {
        let client = Chappie.client(
            configuration: ChappieConfiguration(
                account: account.name, store: options, endpoints: endpoints, streamingTransportPolicy: policy))
        var firsts: [Double] = [], totals: [Double] = []
        for _ in 0..<5 {
            let start = clock.now
            var first: Double?
            var characters = 0
            for try await event in client.stream(prompt) {
                if case .textDelta(let delta) = event {
                    if first == nil { first = milliseconds(clock.now - start) }
                    characters += delta.count
                }
            }
            precondition(characters >= 1_000_000, "short reply: \(characters)")
            firsts.append(first ?? 0)
            totals.append(milliseconds(clock.now - start))
        }
        firsts.sort()
        totals.sort()
        if policy == .httpSSEOnly { sseTotal = quantile(totals, 0.5) }
        lines.append(
            String(
                format:
                    "| ChappieClient over \(label), 1 MB reply (10,000 deltas), 5 runs | first delta median %.0f ms | total median %.0f ms | %.1f MB/s |",
                quantile(firsts, 0.5), quantile(totals, 0.5), 1.0 / quantile(totals, 0.5) * 1000))
    }
    // The same request with curl -N: the access token from the store, the body written to a file.
    let credentials = try await store.credentials(for: account)
    let bodyFile = home.appendingPathComponent("body.json")
    let body: [String: Any] = [
        "model": "gpt-5-codex", "stream": true, "store": false,
        "input": [["type": "message", "role": "user", "content": [["type": "input_text", "text": prompt]]]],
    ]
    try JSONSerialization.data(withJSONObject: body).write(to: bodyFile)
    let curl = URL(fileURLWithPath: "/usr/bin/curl")
    var curlFirsts: [Double] = [], curlTotals: [Double] = []
    for _ in 0..<5 {
        let process = Process()
        process.executableURL = curl
        process.arguments = [
            "-N", "-s", "-o", "/dev/null", "-w", "%{time_starttransfer} %{time_total}", "-X", "POST",
            "-H", "Authorization: Bearer \(credentials.accessToken)", "-H", "ChatGPT-Account-Id: \(account.info.accountID ?? "")",
            "-H", "Content-Type: application/json", "-H", "Accept: text/event-stream", "--data-binary", "@\(bodyFile.path)",
            endpoints.responsesURL.absoluteString,
        ]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        let parts = text.split(separator: " ").compactMap { Double($0) }
        if parts.count == 2 {
            curlFirsts.append(parts[0] * 1000)
            curlTotals.append(parts[1] * 1000)
        }
    }
    curlFirsts.sort()
    curlTotals.sort()
    if !curlTotals.isEmpty {
        lines.append(
            String(
                format:
                    "| `curl -N` the same stream, 5 runs | first byte median %.0f ms | total median %.0f ms | ratio ChappieClient (SSE)/curl %.2f |",
                quantile(curlFirsts, 0.5), quantile(curlTotals, 0.5), sseTotal / quantile(curlTotals, 0.5)))
    }
    return lines
}

let harnessArguments = Array(CommandLine.arguments.dropFirst())
if harnessArguments.first == "startup" {
    let chappie =
        harnessArguments.count >= 3 && harnessArguments[1] == "--chappie"
        ? URL(fileURLWithPath: harnessArguments[2])
        : URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("chappie")
    print("| benchmark | median | ratio | min |")
    print("|---|---|---|---|")
    for line in try await runStartUp(chappie: chappie) { print(line) }
    exit(0)
}

if harnessArguments.first == "report" {
    print("| benchmark | median | ratio | min |")
    print("|---|---|---|---|")
    for line in try await runReport() { print(line) }
    exit(0)
}

var emulatorConfiguration = EmulatorConfiguration()
emulatorConfiguration.autoApprove = true
emulatorConfiguration.autoApproveDelay = .zero
let emulator = Emulator(configuration: emulatorConfiguration)
let (ports, portContinuation) = AsyncStream.makeStream(of: Int.self)
let server = Task {
    try await emulator.run { port in
        portContinuation.yield(port)
        portContinuation.finish()
    }
}
guard let port = await ports.first(where: { _ in true }) else { fatalError("the emulator did not start") }
if harnessArguments.first == "switch" {
    print("| benchmark | time | | |")
    print("|---|---|---|---|")
    for line in try await runSwitch(port: port) { print(line) }
    server.cancel()
    exit(0)
}
if harnessArguments.first == "pool" {
    print("| benchmark | total | rate | latency |")
    print("|---|---|---|---|")
    for line in try await runPool(port: port) { print(line) }
    server.cancel()
    exit(0)
}

print("chappie-bench on \(ProcessInfo.processInfo.activeProcessorCount) cores, libcurl \(Curl.version ?? "missing")")
print("")
print("| benchmark | total | rate | latency |")
print("|---|---|---|---|")
for line in try await runHTTP(port: port) { print(line) }
for line in runSSE() { print(line) }
for line in try await runStore() { print(line) }
for line in try await runStartUp(
    chappie: URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("chappie"))
{
    print(line)
}
for line in try await runTokens(port: port) { print(line) }
for line in try await runStream(port: port) { print(line) }
for line in try await runReport() { print(line) }
for line in try await runPool(port: port) { print(line) }
for line in try await runSwitch(port: port) { print(line) }
print("")
print(String(format: "peak resident memory: %.1f MiB", peakResidentMiB()))
server.cancel()
_ = try? await server.value
