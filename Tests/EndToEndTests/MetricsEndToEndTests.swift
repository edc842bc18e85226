import ChappieTestSupport
import ChappieVault
import Foundation
import Testing

@Suite("chappie daemon --http: Prometheus /metrics and the dashboard over HTTP", .tags(.slow))
struct MetricsEndToEndTests {
    /// One parsed sample: its name, labels and value.
    struct Sample {
        var name: String
        var labels: [String: String]
        var value: Double
    }

    /// A scrape parsed by prometheus_client's own parser (Debian's python3-prometheus-client):
    /// every family with its type and help, and its samples.
    struct Scrape {
        var text: String
        var families: [(name: String, type: String, help: String)]
        var samples: [Sample]

        func value(_ name: String, _ labels: [String: String] = [:]) -> Double? {
            samples.first { $0.name == name && $0.labels == labels }?.value
        }
    }

    /// Reads the daemon's /metrics address from its JSON log ("serving /metrics", address=…).
    private func metricsAddress(_ setup: ChappieTestbed, log: String = "daemon.log") async throws -> String? {
        for _ in 0..<600 {
            let text = (try? String(contentsOf: setup.home.appendingPathComponent(log), encoding: .utf8)) ?? ""
            for line in text.split(separator: "\n") where line.contains("serving /metrics") {
                if let address = JSONDocument(Data(line.utf8)).string("address") { return address }
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        return nil
    }

    /// `curl` GET (or another method) of a path; the status and the body.
    private func fetch(
        _ address: String, _ path: String, method: String = "GET", headers: [String] = [], body: String? = nil
    ) async throws -> (status: Int, body: String) {
        let result = try await runProcess(
            URL(fileURLWithPath: "/usr/bin/curl"),
            ["-s", "-X", method, "-w", "\n%{http_code}", "--max-time", "20"] + headers.flatMap { ["-H", $0] }
                + (body.map { ["--data-binary", $0] } ?? []) + ["http://\(address)\(path)"])
        var lines = result.stdout.components(separatedBy: "\n")
        let status = Int(lines.popLast() ?? "") ?? 0
        return (status, lines.joined(separator: "\n"))
    }

    /// Scrapes /metrics and parses it with prometheus_client; fails on anything it refuses.
    private func scrape(_ address: String, headers: [String] = []) async throws -> Scrape {
        let (status, text) = try await fetch(address, "/metrics", headers: headers)
        try #require(status == 200, "GET /metrics answered \(status)")
        let parser = """
            import json, sys
            from prometheus_client.parser import text_string_to_metric_families
            out = {"families": [], "samples": []}
            for family in text_string_to_metric_families(sys.stdin.read()):
                out["families"].append([family.name, family.type, family.documentation])
                for sample in family.samples:
                    out["samples"].append([sample.name, sample.labels, sample.value])
            print(json.dumps(out))
            """
        let parsed = try await runProcess(URL(fileURLWithPath: "/usr/bin/python3"), ["-c", parser], input: text)
        try #require(parsed.status == 0, "prometheus_client refused the exposition: \(parsed.stderr)")
        let document = JSONDocument(Data(parsed.stdout.utf8))
        let families = (document.value(["families"]) as? [[Any]] ?? []).map {
            ($0[0] as? String ?? "", $0[1] as? String ?? "", $0[2] as? String ?? "")
        }
        let samples = (document.value(["samples"]) as? [[Any]] ?? []).map {
            Sample(name: $0[0] as? String ?? "", labels: $0[1] as? [String: String] ?? [:], value: ($0[2] as? NSNumber)?.doubleValue ?? .nan)
        }
        return Scrape(text: text, families: families, samples: samples)
    }

    /// Scrapes until `condition` holds (at most 30 s); the last scrape.
    private func scrape(_ address: String, until condition: (Scrape) -> Bool) async throws -> Scrape {
        var last = try await scrape(address)
        for _ in 0..<120 where !condition(last) {
            try await Task.sleep(for: .milliseconds(250))
            last = try await scrape(address)
        }
        return last
    }

    @Test(
        "/metrics parses as Prometheus text; usage, resets, expiry and counters by outcome match what happened; reuse counted; a removed account's series go"
    )
    func metricsOverHTTP() async throws {
        let setup = try await ChappieTestbed.start(
            emulatorArguments: ["--auto-approve", "--auto-approve-delay", "0", "--device-code-interval", "1", "--access-token-ttl", "4"])
        try await whileRunning(setup) {
            for name in ["a", "b"] { #expect(try await setup.chappie(["accounts", "add", name]).status == 0) }
            let accounts = try await setup.control("/_emulator/accounts")
            let a = try #require(accounts.string(0, "account_id"))
            _ = try await setup.control("/_emulator/accounts/\(a)/usage", method: "POST", body: #"{"five_hour_used_percent":42}"#)
            let daemon = try setup.startDaemon(["--poll-interval", "1s", "--metrics-listen", "127.0.0.1:0"])
            let address = try #require(try await metricsAddress(setup), "the daemon did not log its /metrics address within 30 s")
            #expect(address.hasPrefix("127.0.0.1:"))

            let first = try await scrape(address) {
                ($0.value("chappie_refreshes_total", ["outcome": "refreshed"]) ?? 0) >= 1
                    && $0.value("chappie_account_used_percent", ["account": "a", "window": "5h"]) == 42
                    && $0.value("chappie_account_used_percent", ["account": "b", "window": "5h"]) != nil
                    && ($0.value("chappie_polls_total") ?? 0) >= 2
            }
            #expect((first.value("chappie_refreshes_total", ["outcome": "refreshed"]) ?? 0) >= 1)
            #expect(first.value("chappie_account_used_percent", ["account": "a", "window": "5h"]) == 42)
            #expect(first.value("chappie_account_used_percent", ["account": "b", "window": "5h"]) == 0)
            #expect((first.value("chappie_account_seconds_to_reset", ["account": "a", "window": "5h"]) ?? 0) > 0)
            #expect((first.value("chappie_account_seconds_to_reset", ["account": "a", "window": "weekly"]) ?? 0) > 5 * 3600)
            #expect(first.value("chappie_account_token_seconds_to_expiry", ["account": "b"]) != nil)
            #expect(first.value("chappie_account_ok", ["account": "a"]) == 1)
            #expect((first.value("chappie_polls_total") ?? 0) >= 2)
            #expect(first.value("chappie_reuse_detections_total") == 0)
            #expect(first.value("chappie_switches_total") == 0)
            #expect(first.value("chappie_refresh_failures_total", ["reason": "sign_in_required"]) == 0)
            // Every family has a type and a help text, and today's names are all there.
            let names = Set(first.families.map(\.name))
            for name in [
                "chappie_refreshes", "chappie_refresh_failures", "chappie_polls", "chappie_poll_failures", "chappie_switches",
                "chappie_reuse_detections", "chappie_uptime_seconds", "chappie_account_used_percent",
                "chappie_account_seconds_to_reset", "chappie_account_token_seconds_to_expiry", "chappie_account_ok",
            ] {
                #expect(names.contains(name), "no \(name)")
            }
            for family in first.families {
                #expect(!family.help.isEmpty && family.type != "unknown", "\(family.name) has no help or type")
            }

            // The usage endpoint fails with 503: a transient poll failure.
            _ = try await setup.control(
                "/_emulator/faults", method: "POST", body: #"{"kind":"status","status":503,"path":"/backend-api/wham/usage"}"#)
            let unavailable = try await scrape(address) { ($0.value("chappie_poll_failures_total", ["reason": "transient"]) ?? 0) >= 1 }
            #expect(unavailable.value("chappie_poll_failures_total", ["reason": "transient"]) == 1)

            // The issuer answers the next refresh with refresh_token_reused: counted once, and the account signed out.
            _ = try await setup.control(
                "/_emulator/faults", method: "POST",
                body:
                    #"{"kind":"status","status":401,"path":"/oauth/token","body":"{\"error\":\"refresh_token_reused\",\"error_description\":\"reused\"}"}"#
            )
            func signedOut(_ scrape: Scrape) -> Double {
                // A poll refreshes an expiring token too: the failure is the refresh loop's or a poll's.
                ["chappie_refresh_failures_total", "chappie_poll_failures_total"].compactMap { scrape.value($0, ["reason": "sign_in_required"]) }
                    .reduce(
                        0, +)
            }
            let reused = try await scrape(address) {
                ($0.value("chappie_reuse_detections_total") ?? 0) >= 1 && signedOut($0) >= 1
                    && $0.samples.contains { $0.name == "chappie_account_ok" && $0.value == 0 }
            }
            // One answer of the issuer, one detection, however many parts of the daemon then meet the signed-out account.
            #expect(reused.value("chappie_reuse_detections_total") == 1)
            #expect(signedOut(reused) >= 1)
            #expect(reused.samples.contains { $0.name == "chappie_account_ok" && $0.value == 0 })

            // An account removed loses its series at the next scrape.
            #expect(try await setup.chappie(["accounts", "remove", "b", "--yes"]).status == 0)
            let removed = try await scrape(address)
            #expect(!removed.samples.contains { $0.labels["account"] == "b" })
            #expect(removed.samples.contains { $0.labels["account"] == "a" })

            // Nothing secret or personal in a scrape.
            for text in [first.text, reused.text, removed.text] {
                #expect(!text.contains("eyJ") && !text.contains("@example.com") && !text.contains("rt_"))
            }
            // The dashboard: one chart per account and window, a point per reading of the last 7 days.
            // The daemon polls every second: the readings are counted on both sides of the page.
            func readings() async throws -> Int {
                let history = JSONDocument(Data(try await setup.chappie(["usage", "history", "a", "--since", "7d", "--format", "json"]).stdout.utf8))
                return (0..<(history.array()?.count ?? 0)).filter {
                    history.string($0, "limitID") == "codex" && history.number($0, "fiveHour", "usedPercent") != nil
                }.count
            }
            let before = try await readings()
            let page = try await fetch(address, "/")
            let after = try await readings()
            #expect(page.status == 200)
            let listed = JSONDocument(Data(try await fetch(address, "/api/accounts").body.utf8))
            let listedNames = (0..<(listed.array()?.count ?? 0)).compactMap { listed.string($0, "name") }
            #expect(listedNames == ["a"])
            #expect(page.body.components(separatedBy: "<svg class=\"chart\"").count - 1 == 2 * listedNames.count)
            #expect(before > 0)
            let drawn = page.body.components(separatedBy: "data-account=\"a\" data-window=\"5h\" data-points=\"").dropFirst().first
                .flatMap { Int($0.prefix { $0.isNumber }) }
            #expect(
                drawn.map { (before...max(before, after)).contains($0) } == true,
                "\(drawn ?? -1) points drawn; \(before)…\(after) readings around the page")
            for text in [page.body, try await fetch(address, "/api/accounts").body] {
                #expect(!text.contains("eyJ") && !text.contains("rt_") && !text.contains("href="))
            }
            #expect(try await fetch(address, "/nothing").status == 404)
            #expect(try await fetch(address, "/", method: "POST").status == 405)
            #expect(try await fetch(address, "/metrics", method: "POST").status == 405)
            #expect(try await fetch(address, "/metrics", method: "POST", headers: ["Content-Type: text/plain"], body: "x").status == 413)
            // Without a secret, only a loopback Host is answered (no DNS rebinding from a browser).
            #expect(try await fetch(address, "/metrics", headers: ["Host: rebound.example:9464"]).status == 403)
            #expect(try await fetch(address, "/metrics", headers: ["Host: localhost:9464"]).status == 200)
            // Strict: a name under .localhost is a name like any other (issue 26).
            #expect(try await fetch(address, "/metrics", headers: ["Host: evil.localhost:9464"]).status == 403)
            #expect(try await fetch(address, "/metrics", headers: ["Host: [::1]:9464"]).status == 200)
            #expect(await setup.stop(daemon) == 0)
        }
    }

    @Test("A bearer secret from --http-token-file is required when given; another address without one, or a file others can read, is refused")
    func bearerSecret() async throws {
        let setup = try await ChappieTestbed.start(emulatorArguments: ["--auto-approve", "--auto-approve-delay", "0", "--device-code-interval", "1"])
        try await whileRunning(setup) {
            #expect(try await setup.chappie(["accounts", "add", "a"]).status == 0)

            let open = try await setup.chappie(["daemon", "--metrics-listen", "0.0.0.0:0"])
            #expect(open.status == 2)
            #expect(open.stderr.contains("--http-token-file"))
            #expect(try await setup.chappie(["daemon", "--http-token-file", "/nonexistent"]).status == 2)
            #expect(try await setup.chappie(["daemon", "--metrics-listen", "127.0.0.1:notaport"]).status == 2)

            let directory = try await setup.chappie(
                [
                    "daemon", "--metrics-listen", "127.0.0.1:0", "--http-token-file", setup.home.path, "--socket",
                    setup.home.appendingPathComponent("dir.sock").path,
                ])
            #expect(directory.status != 0)
            #expect(directory.stderr.contains("not a regular file"))

            let secret = "s3cret-" + UUID().uuidString
            let tokenFile = setup.home.appendingPathComponent("metrics-token")
            // Spaces and a CRLF around the secret are not part of it (Prometheus' credentials_file trims them too).
            try Data(("  " + secret + " \r\n").utf8).write(to: tokenFile)
            chmod(tokenFile.path, 0o644)
            let loose = try await setup.chappie(
                [
                    "daemon", "--metrics-listen", "127.0.0.1:0", "--http-token-file", tokenFile.path, "--socket",
                    setup.home.appendingPathComponent("loose.sock").path,
                ])
            #expect(loose.status != 0)
            #expect(loose.stderr.contains("chmod 600"))
            #expect(!loose.stderr.contains(secret))
            // A secret shorter than 16 bytes is refused, and not printed either.
            let short = setup.home.appendingPathComponent("short-token")
            try Data("tiny-secret\n".utf8).write(to: short)
            chmod(short.path, 0o600)
            let tooShort = try await setup.chappie(
                [
                    "daemon", "--metrics-listen", "127.0.0.1:0", "--http-token-file", short.path, "--socket",
                    setup.home.appendingPathComponent("short.sock").path,
                ])
            #expect(tooShort.status == 78, "\(tooShort.stderr)")
            #expect(tooShort.stderr.contains("at least 16 bytes"))
            #expect(!tooShort.stderr.contains("tiny-secret"))

            chmod(tokenFile.path, 0o600)
            let daemon = try setup.startDaemon(["--poll-interval", "1h", "--metrics-listen", "127.0.0.1:0", "--http-token-file", tokenFile.path])
            let address = try #require(try await metricsAddress(setup), "the daemon did not log its /metrics address within 30 s")
            #expect(try await fetch(address, "/metrics").status == 401)
            #expect(try await fetch(address, "/metrics", headers: ["Authorization: Bearer wrong"]).status == 401)
            #expect(try await fetch(address, "/metrics", headers: ["Authorization: Bearer \(secret)x"]).status == 401)
            #expect(try await fetch(address, "/", headers: ["Authorization: Bearer wrong"]).status == 401)
            // A browser sends the secret as a Basic password, after the 401 offered Basic.
            let challenge = try await runProcess(URL(fileURLWithPath: "/usr/bin/curl"), ["-s", "-D", "-", "-o", "/dev/null", "http://\(address)/"])
            #expect(challenge.stdout.contains("WWW-Authenticate: Basic realm=\"chappie\""), "\(challenge.stdout)")
            let basic = Data("anyone:\(secret)".utf8).base64EncodedString()
            #expect(try await fetch(address, "/", headers: ["Authorization: Basic \(basic)"]).status == 200)
            #expect(try await fetch(address, "/api/accounts", headers: ["Authorization: Basic \(basic)"]).status == 200)
            let wrongBasic = Data("anyone:\(secret)x".utf8).base64EncodedString()
            #expect(try await fetch(address, "/", headers: ["Authorization: Basic \(wrongBasic)"]).status == 401)
            #expect(try await fetch(address, "/", headers: ["Authorization: Basic \(Data(secret.utf8).base64EncodedString())"]).status == 401)
            #expect(try await fetch(address, "/", headers: ["Authorization: Basic %%%"]).status == 401)
            let scraped = try await scrape(address, headers: ["Authorization: bearer \(secret)"])
            #expect(scraped.value("chappie_account_ok", ["account": "a"]) == 1)
            #expect(await setup.stop(daemon) == 0)
            let log = try String(contentsOf: setup.home.appendingPathComponent("daemon.log"), encoding: .utf8)
            #expect(!log.contains(secret))
            #expect(log.contains("metrics request refused"))
        }
    }

    @Test(
        "--http serves the dashboard with times in --tz; each account's newest reading is on the page for the script to compare; bad --http or --tz refused"
    )
    func dashboardOnHTTP() async throws {
        let setup = try await ChappieTestbed.start(emulatorArguments: ["--auto-approve", "--auto-approve-delay", "0", "--device-code-interval", "1"])
        try await whileRunning(setup) {
            for name in ["a", "b"] { #expect(try await setup.chappie(["accounts", "add", name]).status == 0) }
            let a = try #require(try await setup.control("/_emulator/accounts").string(0, "account_id"))
            _ = try await setup.control(
                "/_emulator/accounts/\(a)/usage", method: "POST", body: #"{"five_hour_used_percent":42,"weekly_used_percent":7}"#)

            let open = try await setup.chappie(["daemon", "--http", "0.0.0.0:0"])
            #expect(open.status == 2)
            #expect(open.stderr.contains("--http 0.0.0.0:0 is not a loopback address"), "\(open.stderr)")
            let both = try await setup.chappie(["daemon", "--http", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:9"])
            #expect(both.status == 2)
            #expect(both.stderr.contains("two names for one listener"))
            let zone = try await setup.chappie(["daemon", "--http", "127.0.0.1:0", "--tz", "Mars/Olympus_Mons"])
            #expect(zone.status == 2)
            #expect(zone.stderr.contains("is not a time zone"))
            #expect(try await setup.chappie(["daemon", "--tz", "UTC"]).stderr.contains("--tz is for the dashboard"))
            // A port out of range, no port, and a name that only looks like loopback without the secret.
            for bad in ["127.0.0.1:99999", "127.0.0.1", "localhost:-1", "dash.localhost:0", "[::2]:0"] {
                let refused = try await setup.chappie(["daemon", "--http", bad])
                #expect(refused.status == 2, "\(bad): \(refused.stderr)")
                #expect(refused.stderr.contains("--http"), "\(bad): \(refused.stderr)")
            }

            let daemon = try setup.startDaemon(["--poll-interval", "1h", "--http", "127.0.0.1:0", "--tz", "Asia/Kolkata"])
            let address = try #require(try await metricsAddress(setup), "the daemon did not log its address within 30 s")
            // `chappie status` says where the dashboard is.
            #expect(
                JSONDocument(Data(try await setup.chappie(["status", "--json"]).stdout.utf8)).string("daemon", "dashboard") == "http://\(address)/")
            #expect(try await setup.chappie(["status"]).stdout.contains("Dashboard: http://\(address)/"))
            // The daemon polls both accounts when it starts; wait for both readings.
            var rows = JSONDocument(Data())
            for _ in 0..<300 {
                rows = JSONDocument(Data(try await fetch(address, "/api/accounts").body.utf8))
                if rows.string(0, "readAt") != nil && rows.string(1, "readAt") != nil { break }
                try await Task.sleep(for: .milliseconds(100))
            }
            let readAt = try #require(rows.string(0, "readAt"), "no reading of a within 30 s")
            let resetsAt = try #require(
                rows.string(0, "fiveHour", "resetsAt").flatMap { try? Date($0, strategy: Date.ISO8601FormatStyle(includingFractionalSeconds: true)) })
            #expect((rows.value([0, "fiveHour", "usedPercent"]) as? NSNumber)?.doubleValue == 42)

            let page = try await fetch(address, "/")
            #expect(page.status == 200)
            #expect(page.body.contains("(Asia/Kolkata)"))
            #expect(page.body.components(separatedBy: "<section class=\"account\"").count - 1 == 2)
            #expect(page.body.contains("<main id=\"accounts\">"))
            // The page's revision of an account is /api/accounts' (read just before or just after it,
            // as the hour, part of the revision, may turn in between).
            func pageAgrees(_ index: Int, _ name: String) async throws -> String? {
                let before = JSONDocument(Data(try await fetch(address, "/api/accounts").body.utf8)).string(index, "revision")
                let body = try await fetch(address, "/").body
                let after = JSONDocument(Data(try await fetch(address, "/api/accounts").body.utf8)).string(index, "revision")
                return [before, after].compactMap { $0 }.first { body.contains("data-account=\"\(name)\" data-revision=\"\($0)\"") }
            }
            let revision = try #require(try await pageAgrees(0, "a"), "the page and /api/accounts agree on a's revision")
            // The page's policy allows its own script by hash, and nothing from elsewhere.
            let headers = try await runProcess(URL(fileURLWithPath: "/usr/bin/curl"), ["-s", "-D", "-", "-o", "/dev/null", "http://\(address)/"])
                .stdout
            let policy = try #require(headers.split(separator: "\r\n").first { $0.lowercased().hasPrefix("content-security-policy:") })
            let script = try #require(page.body.components(separatedBy: "<script>").last?.components(separatedBy: "</script>").first)
            #expect(policy.contains("'sha256-\(Data(Sodium.sha256(Array(script.utf8))).base64EncodedString())'"), "\(policy)")
            #expect(policy.contains("default-src 'none'") && policy.contains("frame-ancestors 'none'"))
            #expect(headers.contains("X-Content-Type-Options: nosniff"))
            // Well-formed; a chart per account and window; nothing that could change state.
            let charts = try ChartPage(page.body)
            #expect(charts.charts.map(\.key) == ["a/5h", "a/weekly", "b/5h", "b/weekly"])
            #expect(charts.charts.allSatisfy { $0.points == 1 })
            #expect(charts.elements.isDisjoint(with: ["form", "input", "button", "a", "img", "link", "iframe"]))
            let kolkata = DateFormatter()
            kolkata.locale = Locale(identifier: "en_US_POSIX")
            kolkata.timeZone = TimeZone(identifier: "Asia/Kolkata")
            kolkata.dateFormat = "yyyy-MM-dd HH:mm"
            #expect(page.body.contains(">42</span> %, resets \(kolkata.string(from: resetsAt))"), "the 5-hour reset in Kolkata's time")

            // A reading taken elsewhere (here, by the CLI) moves readAt and the revision, which tells the
            // page's script to fetch the charts again; the page then carries the new revision.
            _ = try await setup.control("/_emulator/accounts/\(a)/usage", method: "POST", body: #"{"five_hour_used_percent":55}"#)
            #expect(try await setup.chappie(["usage", "poll", "a"]).status == 0)
            let after = JSONDocument(Data(try await fetch(address, "/api/accounts").body.utf8))
            let newer = try #require(after.string(0, "readAt"))
            #expect(newer != readAt)
            #expect((after.value([0, "fiveHour", "usedPercent"]) as? NSNumber)?.doubleValue == 55)
            #expect(after.string(1, "readAt") == rows.string(1, "readAt"), "b was not polled")
            let newRevision = try #require(try await pageAgrees(0, "a"))
            #expect(newRevision != revision)
            // Switching the active account makes no reading, but changes what the page shows, and b's revision.
            let unswitched = try #require(try await pageAgrees(1, "b"))
            #expect(try await setup.chappie(["accounts", "switch", "b"]).status == 0)
            #expect(try await pageAgrees(1, "b") != unswitched)
            #expect(try await fetch(address, "/").body.contains("<h2>b <span class=\"active\">active</span></h2>"))

            #expect(await setup.stop(daemon) == 0)
            let log = try String(contentsOf: setup.home.appendingPathComponent("daemon.log"), encoding: .utf8)
            #expect(log.contains("\"dashboard\":\"http://\(address)/\"") || log.contains("http://\(address)/"))
            #expect(!log.contains("@example.com") && !log.contains("eyJ"))
        }
    }

    @Test("Under a flood of dashboard requests another client's scrapes still succeed (at least 99 %), and idle connections lock nobody out")
    func floodAndIdle() async throws {
        let setup = try await ChappieTestbed.start()
        try await whileRunning(setup) {
            for name in ["a", "b", "c"] { #expect(try await setup.chappie(["accounts", "add", name]).status == 0) }
            #expect(try await setup.chappie(["usage"]).status == 0)
            let daemon = try setup.startDaemon(["--http", "127.0.0.1:0"])
            let address = try #require(try await metricsAddress(setup), "the daemon did not log its address within 30 s")
            // 24 clients send complete GET / requests as fast as they are answered, while one scrapes 200 times.
            let stop = setup.home.appendingPathComponent("flood.stop")
            let script = """
                for i in $(seq 24); do (while [ ! -f '\(stop.path)' ]; do curl -s -o /dev/null http://\(address)/; done) & done
                sleep 1
                ok=0
                for i in $(seq 200); do [ "$(curl -s -m 20 -o /dev/null -w '%{http_code}' http://\(address)/metrics)" = 200 ] && ok=$((ok+1)); done
                touch '\(stop.path)'; wait
                echo "$ok"
                """
            let flood = try await runProcess(URL(fileURLWithPath: "/bin/bash"), ["-c", script], timeout: .seconds(600))
            let succeeded = try #require(Int(flood.stdout.trimmingCharacters(in: .whitespacesAndNewlines)), "\(flood.stdout) \(flood.stderr)")
            #expect(succeeded >= 198, "\(succeeded) of 200 scrapes succeeded under the flood")
            // 20 connections that never send a request: a scrape still gets its turn once they have idled a second.
            let idle = """
                import socket, subprocess
                held = [socket.create_connection(("127.0.0.1", \(address.split(separator: ":").last ?? "0"))) for _ in range(20)]
                print(subprocess.run(["curl", "-s", "-m", "20", "-o", "/dev/null", "-w", "%{http_code}", "http://\(address)/metrics"], capture_output=True, text=True).stdout)
                """
            let behindIdle = try await runProcess(URL(fileURLWithPath: "/usr/bin/python3"), ["-c", idle], timeout: .seconds(60))
            #expect(behindIdle.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "200", "\(behindIdle.stdout) \(behindIdle.stderr)")
            #expect(await setup.stop(daemon) == 0)
        }
    }
}
