import ChappieTestSupport
import Foundation
import Testing

/// The attack review's breaks (issue 26), each as the attacker ran it against the real binary.
@Suite("Nothing fed to chappie loses an account", .tags(.slow))
struct HostileInputEndToEndTests {
    /// A testbed with one signed-in account, `work`.
    static func testbedWithAccount() async throws -> ChappieTestbed {
        let testbed = try await ChappieTestbed.start()
        let added = try await testbed.chappie(["accounts", "add", "work"])
        #expect(added.status == 0, "\(added.stderr)")
        return testbed
    }

    @Test(
        "A backup is never written over the database, its WAL, or the key in use, through a link or not; an existing file is replaced, not truncated")
    func backupNeverOverwritesOwnFiles() async throws {
        let testbed = try await Self.testbedWithAccount()
        try await whileRunning(testbed) {
            let elsewhere = try TestTokens.temporaryDirectory("chappie-elsewhere")
            defer { try? FileManager.default.removeItem(at: elsewhere) }
            let secret: [String: String?] = ["CHAPPIE_BACKUP_PASSPHRASE": "correct horse battery staple"]
            let link = elsewhere.appendingPathComponent("L")
            try FileManager.default.createSymbolicLink(at: link, withDestinationURL: testbed.home)
            let database = try Data(contentsOf: testbed.home.appendingPathComponent("chappie.sqlite"))
            let key = try Data(contentsOf: testbed.home.appendingPathComponent("chappie.key"))

            for target in ["L/chappie.sqlite", "L/chappie.sqlite-wal", "L/chappie.key", "L/./chappie.sqlite", "L/recovery-new.backup"] {
                let refused = try await testbed.chappie(["backup", elsewhere.appendingPathComponent(target).path, "--force"], environment: secret)
                #expect(refused.status == 1, "\(target): \(refused.stdout)")
                #expect(refused.stderr.contains("chappie's own"), "\(target): \(refused.stderr)")
                #expect(!refused.stdout.contains("Wrote"))
            }
            // The key in use, named with --key-file, wherever it is.
            let keyFile = elsewhere.appendingPathComponent("my.key")
            try key.write(to: keyFile)
            chmod(keyFile.path, 0o600)
            let viaKeyFile = try await testbed.chappie(["--key-file", keyFile.path, "backup", keyFile.path, "--force"], environment: secret)
            #expect(viaKeyFile.status == 1)
            #expect(viaKeyFile.stderr.contains("chappie's own"), "\(viaKeyFile.stderr)")
            #expect(try Data(contentsOf: keyFile) == key)
            // The directory a user chose for a key file is theirs (their home, say), not chappie's: a
            // backup beside the key is written; the key itself and its staged successor are not.
            let besideKey = try await testbed.chappie(
                ["--key-file", keyFile.path, "backup", elsewhere.appendingPathComponent("beside-the-key").path], environment: secret)
            #expect(besideKey.status == 0, "the key file's directory: \(besideKey.stderr)")
            let overStaged = try await testbed.chappie(
                ["--key-file", keyFile.path, "backup", elsewhere.appendingPathComponent("my.key.new").path], environment: secret)
            #expect(overStaged.status == 1 && overStaged.stderr.contains("chappie's own data or key files"), "\(overStaged.stderr)")
            let viaVariable = try await testbed.chappie(
                ["backup", elsewhere.appendingPathComponent("beside-the-key-2").path],
                environment: secret.merging(["CHAPPIE_KEY_FILE": keyFile.path]) { $1 })
            #expect(viaVariable.status == 0, "CHAPPIE_KEY_FILE's directory: \(viaVariable.stderr)")
            let report = try await testbed.chappie(["usage", "report", "--output", testbed.home.appendingPathComponent("chappie.sqlite").path])
            #expect(report.status == 1 && report.stderr.contains("chappie's own"), "usage report -o: \(report.stderr)")
            let hardLink = elsewhere.appendingPathComponent("hard.key")
            #expect(Glibc.link(keyFile.path, hardLink.path) == 0)
            #expect(try await testbed.chappie(["--key-file", keyFile.path, "backup", hardLink.path, "--force"], environment: secret).status == 1)

            #expect(try Data(contentsOf: testbed.home.appendingPathComponent("chappie.key")) == key)
            #expect(try Data(contentsOf: testbed.home.appendingPathComponent("chappie.sqlite")).count >= database.count / 2)
            let token = try await testbed.chappie(["token", "work"])
            #expect(token.status == 0, "the store still opens: \(token.stderr)")

            // An ordinary file is replaced by a rename: another name for the old file keeps the old bytes.
            let target = elsewhere.appendingPathComponent("old.backup")
            try Data("old contents".utf8).write(to: target)
            let other = elsewhere.appendingPathComponent("other-name")
            #expect(Glibc.link(target.path, other.path) == 0)
            let written = try await testbed.chappie(["backup", target.path, "--force"], environment: secret)
            #expect(written.status == 0, "\(written.stderr)")
            #expect(try Data(contentsOf: other) == Data("old contents".utf8))
            #expect(try Data(contentsOf: target).starts(with: Data("chappie-backup 1\n".utf8)))
            // A bind mount names the data directory by another path: compared by device and inode.
            if canMountPrivately {
                let bind = elsewhere.appendingPathComponent("bind")
                try FileManager.default.createDirectory(at: bind, withIntermediateDirectories: true)
                let command =
                    ([try BuiltProducts.executable("chappie").path] + testbed.service + [
                        "backup", bind.appendingPathComponent("locks/x").path, "--force",
                    ])
                    .map { "'\($0)'" }.joined(separator: " ")
                let bound = try await runProcess(
                    URL(fileURLWithPath: "/usr/bin/unshare"),
                    ["-m", "sh", "-c", "mount --bind '\(testbed.home.path)' '\(bind.path)' && exec \(command)"],
                    environment: secret)
                #expect(bound.status == 1 && bound.stderr.contains("chappie's own directory"), "\(bound.stderr)")
            }
            // A socket (a daemon's, wherever --socket put it) is not a file to write over.
            let socketPath = elsewhere.appendingPathComponent("s.sock").path
            let listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
            var address = sockaddr_un()
            address.sun_family = sa_family_t(AF_UNIX)
            withUnsafeMutableBytes(of: &address.sun_path) { buffer in socketPath.utf8CString.withUnsafeBytes { buffer.copyMemory(from: $0) } }
            #expect(
                withUnsafePointer(to: &address) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
                } == 0)
            defer { close(listener) }
            let overSocket = try await testbed.chappie(["backup", socketPath, "--force"], environment: secret)
            #expect(overSocket.status == 1 && overSocket.stderr.contains("not a regular file"), "\(overSocket.stderr)")
            let missing = try await testbed.chappie(["backup", elsewhere.appendingPathComponent("nowhere/x.backup").path], environment: secret)
            #expect(missing.status == 1)
            #expect(missing.stderr.contains("does not exist"), "\(missing.stderr)")
        }
    }

    /// An auth.json whose tokens claim times no clock reaches, as the attacker wrote them.
    static func authJSON(exp: String, accountID: String) -> Data {
        func encode(_ text: String) -> String {
            Data(text.utf8).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
                .replacingOccurrences(of: "=", with: "")
        }
        let auth =
            #""https://api.openai.com/auth": {"chatgpt_account_id": "\#(accountID)", "chatgpt_user_id": "user-odd", "chatgpt_plan_type": "plus"}"#
        let idToken = encode(#"{"alg":"RS256"}"#) + "." + encode(#"{"email": "odd@example.com", "exp": \#(exp), "iat": \#(exp), \#(auth)}"#) + ".c2ln"
        let access = encode(#"{"alg":"RS256"}"#) + "." + encode(#"{"exp": \#(exp), "iat": \#(exp), \#(auth)}"#) + ".c2ln"
        return Data(
            """
            {"auth_mode": "chatgpt", "OPENAI_API_KEY": null, "last_refresh": "+292277026596-12-04T15:30:07Z",
             "tokens": {"id_token": "\(idToken)", "access_token": "\(access)", "refresh_token": "rt_odd_refresh", "account_id": "\(accountID)"}}
            """.utf8)
    }

    @Test(
        "An imported token whose exp is out of range leaves every command working",
        arguments: [
            "9223372036854775807", "-9223372036854775808", "1e308",
        ])
    func outOfRangeClaims(_ exp: String) async throws {
        let testbed = try await Self.testbedWithAccount()
        try await whileRunning(testbed) {
            let file = testbed.home.appendingPathComponent("odd-auth.json")
            try Self.authJSON(exp: exp, accountID: "acct-odd").write(to: file)
            let imported = try await testbed.chappie(["accounts", "import", file.path, "--name", "odd"])
            #expect(imported.status == 0, "\(imported.stderr)")

            let list = try await testbed.chappie(["accounts", "list", "--json"])
            #expect(list.status == 0, "\(list.stderr)")
            let accounts = try #require(JSONDocument(Data(list.stdout.utf8)).array() as? [[String: Any]])
            #expect(Set(accounts.compactMap { $0["name"] as? String }) == ["odd", "work"])
            for command in [["status"], ["accounts", "show", "odd"], ["usage", "history", "work"]] {
                let result = try await testbed.chappie(command)
                #expect(result.status == 0, "\(command): \(result.stderr)")
                #expect(!result.stderr.contains("decode"), "\(command): \(result.stderr)")
            }
            // work still refreshes; odd's made-up refresh token is refused by the issuer, not by the store.
            let refresh = try await testbed.chappie(["refresh", "--all", "--json"])
            #expect(!refresh.stdout.contains("decode"), "\(refresh.stdout)")
            let lines = try #require(JSONDocument(Data(refresh.stdout.utf8)).array() as? [[String: Any]], "\(refresh.stderr)")
            let work = try #require(lines.first { $0["account"] as? String == "work" })
            #expect(work["error"] == nil, "\(work)")
            let backup = try await testbed.chappie(
                ["backup", testbed.home.deletingLastPathComponent().appendingPathComponent("odd-\(UUID().uuidString).backup").path],
                environment: ["CHAPPIE_BACKUP_PASSPHRASE": "pass phrase"])
            #expect(backup.status == 0, "\(backup.stderr)")
            let removed = try await testbed.chappie(["accounts", "remove", "odd", "--yes"])
            #expect(removed.status == 0, "\(removed.stderr) \(removed.stdout)")
            #expect(try await testbed.chappie(["token", "work"]).status == 0)
        }
    }

    @Test(
        "A usage reply with numbers out of range crashes nothing and stores what it can",
        arguments: [
            "9223372036854775807", "-9223372036854775808", "1e308",
        ])
    func outOfRangeUsage(_ number: String) async throws {
        let testbed = try await Self.testbedWithAccount()
        try await whileRunning(testbed) {
            let body = """
                {"plan_type":"plus","rate_limit":{"allowed":true,"limit_reached":false,\
                "primary_window":{"used_percent":\(number),"limit_window_seconds":\(number),"reset_after_seconds":\(number),"reset_at":\(number)},\
                "secondary_window":{"used_percent":\(number),"limit_window_seconds":604800,"reset_after_seconds":\(number),"reset_at":\(number)}}}
                """
            let fault = try JSONSerialization.data(withJSONObject: [
                "kind": "status", "status": 200, "body": body, "path": "/backend-api/wham/usage", "count": 5,
            ])
            _ = try await testbed.control("/_emulator/faults", method: "POST", body: String(decoding: fault, as: UTF8.self))
            let polled = try await testbed.chappie(["usage", "--json"])
            // A negative percentage is no reading of how full the window is: the poll fails (75).
            let negative = number.hasPrefix("-")
            #expect(polled.status == (negative ? 75 : 0), "\(polled.stderr)")
            for command in [
                ["accounts", "list"], ["usage", "history", "work"], ["usage", "report", "--format", "csv"], ["usage", "report", "--format", "html"],
                ["status"],
            ] {
                let result = try await testbed.chappie(command)
                #expect(result.status == 0, "\(command): \(result.status) \(result.stderr)")
            }
            let history = try await testbed.chappie(["usage", "history", "work", "--json"])
            let readings = try #require(JSONDocument(Data(history.stdout.utf8)).array() as? [[String: Any]])
            #expect(readings.isEmpty == negative)
            #expect(!history.stdout.contains("e+"), "no number out of range is shown: \(history.stdout)")
        }
    }

    @Test("restore keeps newer live tokens that have no last_refresh (imported from an auth.json without one)")
    func restoreOrdersByIssueTime() async throws {
        let testbed = try await Self.testbedWithAccount()
        try await whileRunning(testbed) {
            let elsewhere = try TestTokens.temporaryDirectory("chappie-restore-order")
            defer { try? FileManager.default.removeItem(at: elsewhere) }
            let secret: [String: String?] = ["CHAPPIE_BACKUP_PASSPHRASE": "pass phrase"]
            let backup = elsewhere.appendingPathComponent("old.backup")
            #expect(try await testbed.chappie(["backup", backup.path], environment: secret).status == 0)
            // The live tokens move on (a refresh), then come back through an auth.json without last_refresh.
            try await Task.sleep(for: .seconds(1.1))
            #expect(try await testbed.chappie(["refresh", "work"]).status == 0)
            let codexHome = elsewhere.appendingPathComponent("codex")
            #expect(try await testbed.chappie(["accounts", "switch", "work", "--codex-home", codexHome.path]).status == 0)
            let authFile = codexHome.appendingPathComponent("auth.json")
            var auth = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: authFile)) as? [String: Any])
            auth["last_refresh"] = nil
            let stripped = elsewhere.appendingPathComponent("auth-without-last-refresh.json")
            try JSONSerialization.data(withJSONObject: auth).write(to: stripped)
            #expect(try await testbed.chappie(["accounts", "remove", "work", "--yes"]).status == 0)
            let imported = try await testbed.chappie(["accounts", "import", stripped.path, "--name", "work"])
            #expect(imported.status == 0, "\(imported.stderr)")

            let restored = try await testbed.chappie(["restore", backup.path, "--json"], environment: secret)
            #expect(restored.status == 0, "\(restored.stderr)")
            #expect(JSONDocument(Data(restored.stdout.utf8)).string("accounts", 0, "outcome") == "skipped", "\(restored.stdout)")
            let refreshed = try await testbed.chappie(["refresh", "work"])
            #expect(refreshed.status == 0, "the live refresh token is still the one the issuer knows: \(refreshed.stderr)")
            let stats = try await testbed.control("/_emulator/stats")
            #expect(stats.int("refresh", "reuse_detected") == 0, "\(stats)")
        }
    }

    @Test("Control characters in an e-mail reach no output format: CSV (by day, window, machine), HTML (well-formed XML), the table")
    func controlCharactersInOutput() async throws {
        let testbed = try await ChappieTestbed.start()
        try await whileRunning(testbed) {
            let hostile = "evil\u{1B}]2;pwned\u{07}\u{1B}[31m\u{0C}\u{85}@example.com"
            let next = try JSONSerialization.data(withJSONObject: ["email": hostile, "account_id": "acct-evil", "user_id": "user-evil"])
            _ = try await testbed.control("/_emulator/device/next", method: "POST", body: String(decoding: next, as: UTF8.self))
            #expect(try await testbed.chappie(["accounts", "add", "evil"]).status == 0)
            #expect(try await testbed.chappie(["usage"]).status == 0)
            for arguments in [
                ["usage", "report", "--format", "csv"], ["usage", "report", "--format", "csv", "--by", "window"],
                ["usage", "report", "--format", "csv", "--by", "machine"], ["usage", "report", "--format", "html"],
                ["usage", "report"], ["accounts", "list"], ["usage", "history", "evil", "--format", "csv"],
            ] {
                let result = try await testbed.chappie(arguments)
                #expect(result.status == 0, "\(arguments): \(result.stderr)")
                let controls = result.stdout.unicodeScalars.filter {
                    ($0.value < 0x20 && !"\n\r\t".unicodeScalars.contains($0)) || (0x7F...0x9F).contains($0.value)
                }
                #expect(controls.isEmpty, "\(arguments) printed \(controls.map { String($0.value, radix: 16) })")
                if arguments.contains("html") { _ = try ChartPage(result.stdout) }
            }
        }
    }

    @Test("--socket pointed at a regular file or a link is refused and the file kept")
    func socketNeverDeletesAFile() async throws {
        let testbed = try await ChappieTestbed.start()
        try await whileRunning(testbed) {
            let file = testbed.home.appendingPathComponent("precious.txt")
            try Data("keep me".utf8).write(to: file)
            let link = testbed.home.appendingPathComponent("link.sock")
            try FileManager.default.createSymbolicLink(at: link, withDestinationURL: file)
            for path in [file, link] {
                let result = try await testbed.chappie(["daemon", "--socket", path.path], timeout: .seconds(60))
                #expect(result.status == 78, "\(result.stderr)")
                #expect(result.stderr.contains("is not a socket"), "\(result.stderr)")
                #expect(try Data(contentsOf: file) == Data("keep me".utf8))
            }
            #expect(try FileManager.default.destinationOfSymbolicLink(atPath: link.path) == file.path)
        }
    }

    @Test("restore looks at a file's header before reading it: a huge file is refused unread")
    func restoreBoundsWhatItReads() async throws {
        let testbed = try await ChappieTestbed.start()
        try await whileRunning(testbed) {
            let secret: [String: String?] = ["CHAPPIE_BACKUP_PASSPHRASE": "pass phrase"]
            let huge = testbed.home.appendingPathComponent("huge.backup")
            try Data("chappie-backup 1\n{\"format\":\"chappie-backup\"}\n".utf8).write(to: huge)
            let handle = try FileHandle(forWritingTo: huge)
            try handle.truncate(atOffset: 600 << 20)  // sparse: no disk is used
            try handle.close()
            let refused = try await testbed.chappie(["restore", huge.path], environment: secret)
            #expect(refused.status == 1)
            #expect(refused.stderr.contains("larger than a chappie backup can be"), "\(refused.stderr)")
            try Data(repeating: 0x41, count: 100).write(to: huge)
            let junk = try await testbed.chappie(["restore", huge.path], environment: secret)
            #expect(junk.status == 1)
            #expect(junk.stderr.contains("is not a chappie backup"), "\(junk.stderr)")
            let directory = try await testbed.chappie(["restore", testbed.home.path], environment: secret)
            #expect(directory.status == 1)
            #expect(directory.stderr.contains("not a regular file"), "\(directory.stderr)")
        }
    }

    @Test(
        "A passphrase given in the environment cannot be read from /proc by chappie's children",
        .enabled(if: geteuid() == 0, "reads a non-dumpable process's environ, which only root can"))
    func passphraseLeavesNoTraceInProc() async throws {
        let testbed = try await ChappieTestbed.start()
        try await whileRunning(testbed) {
            let passphrase = "hostile-review-passphrase-\(UUID().uuidString)"
            let environment: [String: String?] = ["CHAPPIE_PASSPHRASE": passphrase, "VISIBLE_MARKER": "marker-is-visible"]
            #expect(try await testbed.chappie(["accounts", "add", "solo"], environment: environment).status == 0)
            // The command reads its parent's (chappie's) environment: as root it can, and must not find the passphrase.
            let script = #"tr '\0' '\n' < /proc/$PPID/environ"#
            let asRoot = try await testbed.chappie(["lease", "run", "--", "sh", "-c", script], environment: environment)
            #expect(asRoot.status == 0, "\(asRoot.stderr)")
            #expect(asRoot.stdout.contains("VISIBLE_MARKER=marker-is-visible"), "the read worked")
            #expect(!asRoot.stdout.contains(passphrase))
            #expect(!asRoot.stderr.contains(passphrase))
        }
    }

    @Test(
        "chappie is not dumpable: a command it runs as the same user cannot read its /proc files",
        .enabled(if: OtherUser.isPossible, "runs chappie as nobody, so that /proc's checks apply"))
    func notDumpable() async throws {
        let testbed = try await ChappieTestbed.start()
        try await whileRunning(testbed) {
            #expect(try await testbed.chappie(["accounts", "add", "solo"]).status == 0)
            #expect(try await runProcess(URL(fileURLWithPath: "/bin/chown"), ["-R", "65534:65534", testbed.home.path]).status == 0)
            let script = #"cat /proc/$PPID/environ >/dev/null && echo READABLE || echo REFUSED"#
            let result = try await OtherUser.nobody.run(
                try OtherUser.chappie(), ["lease", "run"] + testbed.service + ["--", "sh", "-c", script],
                environment: ["CHAPPIE_PASSPHRASE": nil, "CHAPPIE_KEY_FILE": nil, "HOME": testbed.home.path], timeout: .seconds(60))
            #expect(result.status == 0, "\(result.stderr)")
            #expect(result.stdout.contains("REFUSED"), "\(result.stdout) \(result.stderr)")
        }
    }

    @Test(
        "A refresh reply naming another account, with tokens that do not parse, or not signed by the issuer, is quarantined, never stored; an odd one is stored, and so is one whose signature cannot be checked now"
    )
    func refreshRepliesAreChecked() async throws {
        let testbed = try await Self.testbedWithAccount()
        try await whileRunning(testbed) {
            let list = JSONDocument(Data(try await testbed.chappie(["accounts", "list", "--json"]).stdout.utf8))
            let accountID = try #require(list.string(0, "chatgptAccountID"), "\(list)")
            let userID = try #require(list.string(0, "chatgptUserID"))
            func reply(_ body: [String: Any]) async throws {
                let text = String(decoding: try JSONSerialization.data(withJSONObject: body), as: UTF8.self)
                let fault = try JSONSerialization.data(withJSONObject: [
                    "kind": "status", "status": 200, "body": text, "path": "/oauth/token", "count": 1,
                ])
                _ = try await testbed.control("/_emulator/faults", method: "POST", body: String(decoding: fault, as: UTF8.self))
            }
            let other = TestTokens.idToken(email: "mallory@example.com", accountID: "acct-mallory", userID: "user-mallory")
            /// A token the issuer signed whose payload was then changed (one more claim).
            func altered(_ claims: String) async throws -> String {
                let signed = try #require(try await testbed.control("/_emulator/sign", method: "POST", body: claims).string("jwt"))
                let parts = signed.split(separator: ".").map(String.init)
                let payload = Data(String(claims.dropLast() + #", "admin": true}"#).utf8).base64EncodedString()
                    .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
                return [parts[0], payload, parts[2]].joined(separator: ".")
            }
            for body in [
                [
                    "id_token": other, "access_token": TestTokens.accessToken(accountID: "acct-mallory", expiresAt: Date().addingTimeInterval(3600)),
                    "refresh_token": "rt_mallory",
                ],
                [
                    "id_token": TestTokens.idToken(email: "work@example.com", accountID: accountID, userID: "user-mallory"),
                    "refresh_token": "rt_mallory",
                ],
                ["access_token": "not-a-jwt", "refresh_token": "rt_mallory"],
                [:],
                // The account's own ids, signed by the issuer, then altered.
                [
                    "id_token": try await altered(
                        #"{"iss": "\#(testbed.emulator.issuer)", "https://api.openai.com/auth": {"chatgpt_account_id": "\#(accountID)", "chatgpt_user_id": "\#(userID)"}}"#
                    ), "refresh_token": "rt_mallory",
                ],
            ] {
                try await reply(body)
                let refreshed = try await testbed.chappie(["refresh", "work"])
                #expect(refreshed.status != 0)
                #expect(refreshed.stderr.contains("was not stored"), "\(refreshed.stderr)")
                #expect(!refreshed.stderr.contains("rt_mallory") && !refreshed.stderr.contains(other))
                let shown = JSONDocument(Data(try await testbed.chappie(["accounts", "show", "work", "--json"]).stdout.utf8))
                #expect(shown.string("status") == "reauth_required", "\(shown)")
                #expect((shown.string("lastError") ?? "").contains("quarantine"), "\(shown)")
                #expect(try await testbed.chappie(["token", "work"]).status != 0, "a quarantined reply reaches no command")
                // The stored refresh token is spent: naming the account again does not present it again.
                let again = try await testbed.chappie(["refresh", "work"])
                #expect(again.status != 0 && again.stderr.contains("was not stored"), "\(again.stderr)")
                // Sign in again for the next round.
                _ = try await testbed.control(
                    "/_emulator/device/next", method: "POST", body: #"{"account_id": "\#(accountID)", "user_id": "\#(userID)"}"#)
                #expect(try await testbed.chappie(["accounts", "add", "work"]).status == 0)
            }
            let quarantine = testbed.home.appendingPathComponent("quarantine")
            let files = try FileManager.default.contentsOfDirectory(atPath: quarantine.path)
            #expect(files.count == 5)
            for file in files {
                let data = try Data(contentsOf: quarantine.appendingPathComponent(file))
                #expect(data.range(of: Data("rt_mallory".utf8)) == nil, "sealed, not in clear")
                #expect(
                    try FileManager.default.attributesOfItem(atPath: quarantine.appendingPathComponent(file).path)[.posixPermissions] as? Int == 0o600
                )
            }

            // Only odd: the same account, signed by the issuer, a time out of range. Stored, its expiry unknown.
            let claims = try JSONSerialization.data(withJSONObject: [
                "iss": testbed.emulator.issuer, "exp": 1e308, "https://api.openai.com/auth": ["chatgpt_account_id": accountID],
            ])
            let odd = try #require(
                try await testbed.control("/_emulator/sign", method: "POST", body: String(decoding: claims, as: UTF8.self)).string("jwt"))
            try await reply(["access_token": odd, "refresh_token": "rt_odd_but_ours"])
            let stored = try await testbed.chappie(["refresh", "work"])
            #expect(stored.status == 0, "\(stored.stderr)")
            let shown = JSONDocument(Data(try await testbed.chappie(["accounts", "show", "work", "--json"]).stdout.utf8))
            #expect(shown.string("status") == "ok")
            #expect(shown.string("accessTokenExpiresAt") == nil, "unknown, not a year no store can read")
            #expect(try await testbed.chappie(["token", "work"]).stdout.trimmingCharacters(in: .whitespacesAndNewlines) == odd)

            // The issuer's keys unreachable: a reply is stored all the same (the old token is spent),
            // and the audit log says its signature was not checked. (Signed in again first: the odd
            // reply's refresh token is not one the issuer knows.)
            _ = try await testbed.control(
                "/_emulator/device/next", method: "POST", body: #"{"account_id": "\#(accountID)", "user_id": "\#(userID)"}"#)
            #expect(try await testbed.chappie(["accounts", "add", "work"]).status == 0)
            _ = try await testbed.control(
                "/_emulator/faults", method: "POST", body: #"{"kind": "status", "status": 503, "path": "/.well-known/", "count": 10}"#)
            let unchecked = try await testbed.chappie(["refresh", "work"])
            #expect(unchecked.status == 0, "\(unchecked.stderr)")
            #expect(try await testbed.chappie(["log"]).stdout.contains("signature not checked"))
            _ = try await testbed.control("/_emulator/faults", method: "DELETE")
            #expect(try await testbed.chappie(["token", "work"]).status == 0)

            // A 2xx answer that cannot be read: the token was taken, so the account is signed out, and
            // naming it again presents nothing.
            _ = try await testbed.control("/_emulator/faults", method: "POST", body: #"{"kind": "malformed", "path": "/oauth/token", "count": 1}"#)
            let malformed = try await testbed.chappie(["refresh", "work", "--json"])
            #expect(malformed.status != 0 && malformed.stdout.contains("could not be read"), "\(malformed.stdout)")
            #expect(try await testbed.chappie(["refresh", "work"]).status != 0)
            let stats = try await testbed.control("/_emulator/stats")
            #expect(stats.int("refresh", "reuse_detected") == 0, "no spent refresh token was presented again: \(stats)")
        }
    }

    @Test(
        "A dropped or cut answer of the token endpoint is a temporary failure (75), and the account stays usable", arguments: ["drop", "truncated"])
    func droppedTokenAnswer(_ kind: String) async throws {
        let testbed = try await Self.testbedWithAccount()
        try await whileRunning(testbed) {
            _ = try await testbed.control("/_emulator/faults", method: "POST", body: #"{"kind": "\#(kind)", "path": "/oauth/token", "count": 1}"#)
            let refreshed = try await testbed.chappie(["refresh", "work"])
            #expect(refreshed.status == 75, "\(refreshed.stderr)")
            #expect(refreshed.stderr.contains("later") || refreshed.stderr.contains("again"), "\(refreshed.stderr)")
            let shown = JSONDocument(Data(try await testbed.chappie(["accounts", "show", "work", "--json"]).stdout.utf8))
            #expect(shown.string("status") == "ok", "a network failure signs nothing out: \(shown)")
            if kind == "drop" { #expect(try await testbed.chappie(["refresh", "work"]).status == 0, "nothing was redeemed") }
        }
    }

    @Test("A slow issuer (35 s to answer a refresh) loses nothing: the answer is awaited and stored")
    func slowIssuer() async throws {
        let testbed = try await Self.testbedWithAccount()
        try await whileRunning(testbed) {
            _ = try await testbed.control(
                "/_emulator/faults", method: "POST", body: #"{"kind": "latency", "ms": 35000, "path": "/oauth/token", "count": 1}"#)
            let refreshed = try await testbed.chappie(["refresh", "work"], timeout: .seconds(180))
            #expect(refreshed.status == 0, "\(refreshed.stderr)")
            #expect(try await testbed.chappie(["refresh", "work"]).status == 0, "the stored refresh token is the issuer's newest")
            let stats = try await testbed.control("/_emulator/stats")
            #expect(stats.int("refresh", "reuse_detected") == 0, "\(stats)")
        }
    }

    @Test(
        "A disk that fills up while a refresh is at the issuer loses nothing; a full disk redeems nothing",
        .enabled(if: canMountPrivately, "needs root and unshare -m for a small tmpfs of its own"))
    func fullDisk() async throws {
        let testbed = try await Self.testbedWithAccount()
        try await whileRunning(testbed) {
            #expect(try await testbed.chappie(["refresh", "work"]).status == 0)
            let scratch = try TestTokens.temporaryDirectory("chappie-full-disk")
            defer { try? FileManager.default.removeItem(at: scratch) }
            let mount = scratch.appendingPathComponent("mnt"), out = scratch.appendingPathComponent("out")
            try FileManager.default.createDirectory(at: mount, withIntermediateDirectories: true)
            try FileManager.default.createDirectory(at: out, withIntermediateDirectories: true)
            let chappie =
                ([
                    try BuiltProducts.executable("chappie").path, "--home", mount.path, "--issuer", testbed.emulator.issuer,
                    "--backend", testbed.emulator.backend,
                ]).map { "'\($0)'" }.joined(separator: " ")
            let script = """
                set -u
                mount -t tmpfs -o size=4m,mode=0700 tmpfs '\(mount.path)' || exit 90
                cp -a '\(testbed.home.path)/.' '\(mount.path)/'
                fill() { dd if=/dev/zero of='\(mount.path)/filler' bs=4k >/dev/null 2>&1; true; }
                # Full before the refresh starts (no slot reserved yet): nothing may be redeemed.
                rm -f '\(mount.path)'/recovery/*.slot
                fill
                \(chappie) refresh work > '\(out.path)/full.out' 2> '\(out.path)/full.err'; echo $? > '\(out.path)/full.status'
                rm -f '\(mount.path)/filler'
                # Full while the issuer holds the request: the slot was reserved before the request went out.
                curl -s -X POST -H 'Content-Type: application/json' -d '{"kind":"hold","path":"/oauth/token","count":1}' \
                    '\(testbed.emulator.issuer)/_emulator/faults' > /dev/null
                \(chappie) refresh work > '\(out.path)/during.out' 2> '\(out.path)/during.err' & pid=$!
                held() { curl -s '\(testbed.emulator.issuer)/_emulator/stats' | python3 -c 'import json,sys; sys.exit(0 if json.load(sys.stdin)["held"] == 1 else 1)'; }
                tries=0; until held || [ $tries -ge 1200 ]; do sleep 0.05; tries=$((tries + 1)); done
                fill
                curl -s -X POST '\(testbed.emulator.issuer)/_emulator/release' > /dev/null
                wait $pid; echo $? > '\(out.path)/during.status'
                rm -f '\(mount.path)/filler'
                \(chappie) token work > '\(out.path)/token.out' 2> '\(out.path)/token.err'; echo $? > '\(out.path)/token.status'
                \(chappie) refresh work > /dev/null 2> '\(out.path)/again.err'; echo $? > '\(out.path)/again.status'
                """
            let before = try await testbed.control("/_emulator/stats").int("refresh", "redemptions") ?? -1
            let run = try await runProcess(URL(fileURLWithPath: "/usr/bin/unshare"), ["-m", "sh", "-c", script], timeout: .seconds(180))
            #expect(run.status == 0, "\(run.stderr)")
            func read(_ name: String) -> String {
                (try? String(contentsOf: out.appendingPathComponent(name), encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
            }
            #expect(read("full.status") == "75", "\(read("full.err"))")
            #expect(read("full.err").contains("Nothing was redeemed") || read("full.err").contains("is full"), "\(read("full.err"))")
            // The refresh during the fill either committed or kept its tokens in the slot; either way they are not lost.
            let during = read("during.status"), duringError = read("during.err")
            #expect(during == "0" || duringError.contains("kept sealed"), "\(during): \(duringError)")
            #expect(read("token.status") == "0", "\(read("token.err"))")
            #expect(read("again.status") == "0", "\(read("again.err"))")
            let stats = try await testbed.control("/_emulator/stats")
            #expect(stats.int("refresh", "reuse_detected") == 0, "\(stats)")
            #expect(stats.int("refresh", "redemptions") == before + 2, "the full disk's refresh redeemed nothing: \(stats)")
            print("full disk: during the fill the refresh \(during == "0" ? "committed" : "kept its tokens in the recovery slot")")
        }
    }

    @Test(
        "A Codex home that another user can write is neither written, nor adopted from, nor refreshed past; root's sticky /tmp is fine",
        .enabled(if: geteuid() == 0, "hands a directory to another user"))
    func codexHomeOthersCanWrite() async throws {
        let testbed = try await Self.testbedWithAccount()
        try await whileRunning(testbed) {
            // Under /tmp (root's, sticky): allowed.
            let parent = URL(fileURLWithPath: "/tmp").appendingPathComponent("chappie-shared-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: parent, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
            defer { try? FileManager.default.removeItem(at: parent) }
            let home = parent.appendingPathComponent("codex")
            let switched = try await testbed.chappie(["accounts", "switch", "work", "--codex-home", home.path])
            #expect(switched.status == 0, "\(switched.stderr)")
            let written = try Data(contentsOf: home.appendingPathComponent("auth.json"))

            // A home that is itself sticky and open to all (1777) is refused: anyone could add files beside auth.json.
            let stickyHome = parent.appendingPathComponent("sticky")
            try FileManager.default.createDirectory(at: stickyHome, withIntermediateDirectories: true)
            chmod(stickyHome.path, 0o1777)
            let sticky = try await testbed.chappie(["accounts", "switch", "work", "--codex-home", stickyHome.path])
            #expect(sticky.status == 78 && sticky.stderr.contains("every user"), "\(sticky.stderr)")

            // The parent opened to everyone (0777, not sticky), as in the attack: another user could
            // replace auth.json with forged tokens naming the account.
            chmod(parent.path, 0o777)
            let forged = TestTokens.codexAuthJSON(email: "work@example.com", accountID: "acct-x", userID: "user-x", marker: "forged")
            try forged.write(to: home.appendingPathComponent("auth.json"))
            let refresh = try await testbed.chappie(["refresh", "work"])
            #expect(refresh.status == 78, "\(refresh.stderr)")
            #expect(
                refresh.stderr.contains("can be written by every user") && refresh.stderr.contains("chmod go-w \(parent.path)"), "\(refresh.stderr)")
            #expect(try Data(contentsOf: home.appendingPathComponent("auth.json")) == forged, "chappie wrote nothing there")
            let again = try await testbed.chappie(["accounts", "switch", "work", "--codex-home", home.path])
            #expect(again.status == 78, "\(again.stderr)")
            #expect(!(try await testbed.chappie(["token", "work"]).stdout.contains("forged")), "nothing was adopted")
            // Owned by another user: refused too.
            chmod(parent.path, 0o755)
            #expect(chown(home.path, 65534, 65534) == 0)
            let owned = try await testbed.chappie(["refresh", "work"])
            #expect(owned.status == 78 && owned.stderr.contains("belongs to another user"), "\(owned.stderr)")
            // Fixed: the account refreshes again, and writes its home.
            #expect(chown(home.path, 0, 0) == 0)
            try written.write(to: home.appendingPathComponent("auth.json"))
            let fixed = try await testbed.chappie(["refresh", "work"])
            #expect(fixed.status == 0, "\(fixed.stderr)")
            let stats = try await testbed.control("/_emulator/stats")
            #expect(stats.int("refresh", "reuse_detected") == 0, "\(stats)")
        }
    }

    @Test(
        "Newer tokens in the account's Codex home that the issuer did not sign are not adopted, and block chappie's own refresh until the file is replaced"
    )
    func unsignedCodexTokens() async throws {
        let testbed = try await Self.testbedWithAccount()
        try await whileRunning(testbed) {
            let list = JSONDocument(Data(try await testbed.chappie(["accounts", "list", "--json"]).stdout.utf8))
            let accountID = try #require(list.string(0, "chatgptAccountID"))
            let userID = try #require(list.string(0, "chatgptUserID"))
            let home = testbed.home.appendingPathComponent("codex")
            #expect(try await testbed.chappie(["accounts", "switch", "work", "--codex-home", home.path]).status == 0)
            let written = try Data(contentsOf: home.appendingPathComponent("auth.json"))
            let token = try await testbed.chappie(["token", "work"]).stdout
            let redeemed = try await testbed.control("/_emulator/stats").int("refresh", "redemptions") ?? 0

            // The account's own ids, a later expiry, another refresh token: "newer", but unsigned.
            let forged = try JSONSerialization.data(withJSONObject: [
                "auth_mode": "chatgpt", "last_refresh": "2030-01-01T00:00:00Z",
                "tokens": [
                    "id_token": TestTokens.idToken(email: "work@example.com", accountID: accountID, userID: userID),
                    "access_token": TestTokens.accessToken(accountID: accountID, expiresAt: Date().addingTimeInterval(7200), marker: "forged"),
                    "refresh_token": "rt_forged", "account_id": accountID,
                ],
            ])
            try forged.write(to: home.appendingPathComponent("auth.json"))
            let elsewhere = try TestTokens.temporaryDirectory("chappie-elsewhere")
            defer { try? FileManager.default.removeItem(at: elsewhere) }
            for command in [["token", "work"], ["refresh", "work"], ["backup", elsewhere.appendingPathComponent("b.chappie").path]] {
                let result = try await testbed.chappie(command, environment: ["CHAPPIE_BACKUP_PASSPHRASE": "correct horse battery staple"])
                #expect(result.status == 78, "\(command): \(result.stderr)")
                #expect(
                    result.stderr.contains("not the issuer's") && result.stderr.contains("--codex-home \(home.path) --force"),
                    "\(command): \(result.stderr)")
                let forgedAccess = try #require(JSONDocument(forged).string("tokens", "access_token"))
                #expect(!result.stdout.contains(forgedAccess) && !result.stderr.contains(forgedAccess) && !result.stderr.contains("rt_forged"))
            }
            #expect(
                try await testbed.control("/_emulator/stats").int("refresh", "redemptions") == redeemed, "the stored refresh token was not redeemed")
            #expect(try Data(contentsOf: home.appendingPathComponent("auth.json")) == forged, "nothing was written there")

            // The genuine id_token kept (copied from the file switch wrote), the access and refresh
            // tokens replaced: the access token is checked too.
            let genuine = try #require(JSONDocument(written).string("tokens", "id_token"))
            let spliced = try JSONSerialization.data(withJSONObject: [
                "auth_mode": "chatgpt", "last_refresh": "2030-01-01T00:00:00Z",
                "tokens": [
                    "id_token": genuine, "refresh_token": "rt_spliced", "account_id": accountID,
                    "access_token": TestTokens.accessToken(accountID: accountID, expiresAt: Date().addingTimeInterval(7200), marker: "spliced"),
                ],
            ])
            try spliced.write(to: home.appendingPathComponent("auth.json"))
            let splicedToken = try await testbed.chappie(["token", "work"])
            #expect(splicedToken.status == 78 && splicedToken.stderr.contains("not the issuer's"), "\(splicedToken.stderr)")
            #expect(try await testbed.control("/_emulator/stats").int("refresh", "redemptions") == redeemed)

            // Replaced (switch --force writes the stored tokens back): the account works again.
            let replaced = try await testbed.chappie(["accounts", "switch", "work", "--codex-home", home.path, "--force"])
            #expect(replaced.status == 0, "\(replaced.stderr)")
            #expect(try await testbed.chappie(["token", "work"]).stdout == token)
            #expect(try await testbed.chappie(["refresh", "work"]).status == 0)
            #expect(try await testbed.control("/_emulator/stats").int("refresh", "reuse_detected") == 0)

            // Newer tokens naming a key the issuer does not list: nothing adopted or redeemed (75: the
            // issuer may be changing keys); switch --force replaces them.
            let unlisted = try JSONSerialization.data(withJSONObject: [
                "auth_mode": "chatgpt", "last_refresh": "2030-01-01T00:00:00Z",
                "tokens": [
                    "id_token": TestTokens.jwt([
                        "iss": testbed.emulator.issuer, "https://api.openai.com/auth": ["chatgpt_account_id": accountID, "chatgpt_user_id": userID],
                    ]),
                    "access_token": TestTokens.jwt([
                        "iss": testbed.emulator.issuer, "exp": Int(Date().timeIntervalSince1970) + 7200,
                        "https://api.openai.com/auth": ["chatgpt_account_id": accountID],
                    ]),
                    "refresh_token": "rt_unlisted", "account_id": accountID,
                ],
            ])
            try unlisted.write(to: home.appendingPathComponent("auth.json"))
            let waiting = try await testbed.chappie(["refresh", "work"])
            #expect(waiting.status == 75 && waiting.stderr.contains("does not list"), "\(waiting.status) \(waiting.stderr)")
            // `token` hands out the stored access token while it is valid, with the warning.
            let stillValid = try await testbed.chappie(["token", "work"])
            #expect(stillValid.status == 0 && stillValid.stderr.contains("does not list"), "\(stillValid.stderr)")
            #expect(!stillValid.stdout.contains(try #require(JSONDocument(unlisted).string("tokens", "access_token"))))
            #expect(try await testbed.chappie(["accounts", "switch", "work", "--codex-home", home.path, "--force"]).status == 0)
            #expect(try await testbed.chappie(["token", "work"]).status == 0)

            // Stored tokens that name another issuer than --issuer (the same emulator, spelled
            // localhost): refused before anything is redeemed, naming the issuer to use.
            let elsewhereIssuer = testbed.emulator.issuer.replacingOccurrences(of: "127.0.0.1", with: "localhost")
            let redeemedBefore = try await testbed.control("/_emulator/stats").int("refresh", "redemptions") ?? 0
            let foreign = try await runProcess(
                try BuiltProducts.executable("chappie"),
                ["refresh", "work", "--issuer", elsewhereIssuer, "--backend", testbed.emulator.backend, "--home", testbed.home.path],
                environment: ["CHAPPIE_PASSPHRASE": nil, "CHAPPIE_KEY_FILE": nil])
            #expect(foreign.status == 78 && foreign.stderr.contains("point --issuer"), "\(foreign.stderr)")
            #expect(try await testbed.control("/_emulator/stats").int("refresh", "redemptions") == redeemedBefore)

            // Newer tokens the issuer did sign (as Codex leaves them after its own refresh), while the
            // issuer's keys cannot be fetched: nothing adopted, nothing redeemed, exit 75; then adopted.
            func sign(_ claims: [String: Any]) async throws -> String {
                let body = String(decoding: try JSONSerialization.data(withJSONObject: claims), as: UTF8.self)
                return try #require(try await testbed.control("/_emulator/sign", method: "POST", body: body).string("jwt"))
            }
            let auth: [String: Any] = ["chatgpt_account_id": accountID, "chatgpt_user_id": userID]
            let access = try await sign([
                "iss": testbed.emulator.issuer, "exp": Int(Date().timeIntervalSince1970) + 7200, "https://api.openai.com/auth": auth,
            ])
            let codexRefreshed = try JSONSerialization.data(withJSONObject: [
                "auth_mode": "chatgpt", "last_refresh": "2030-01-01T00:00:00Z",
                "tokens": [
                    "id_token": try await sign(["iss": testbed.emulator.issuer, "email": "work@example.com", "https://api.openai.com/auth": auth]),
                    "access_token": access, "refresh_token": "rt_codex", "account_id": accountID,
                ],
            ])
            try codexRefreshed.write(to: home.appendingPathComponent("auth.json"))
            let redeemedNow = try await testbed.control("/_emulator/stats").int("refresh", "redemptions") ?? 0
            _ = try await testbed.control(
                "/_emulator/faults", method: "POST", body: #"{"kind": "status", "status": 503, "path": "/.well-known/", "count": 10}"#)
            let unreachable = try await testbed.chappie(["refresh", "work"])
            #expect(unreachable.status == 75 && unreachable.stderr.contains("could not be checked"), "\(unreachable.stderr)")
            #expect(try await testbed.control("/_emulator/stats").int("refresh", "redemptions") == redeemedNow)
            _ = try await testbed.control("/_emulator/faults", method: "DELETE")
            let adopted = try await testbed.chappie(["token", "work"])
            #expect(adopted.status == 0 && adopted.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == access, "\(adopted.stderr)")
        }
    }

    @Test("Signing an account in again must return the same ChatGPT user: another is refused and nothing is stored")
    func signInAgainAsAnother() async throws {
        let testbed = try await Self.testbedWithAccount()
        try await whileRunning(testbed) {
            _ = try await testbed.control(
                "/_emulator/device/next", method: "POST", body: #"{"email": "mallory@example.com", "account_id": "acct-m", "user_id": "user-m"}"#)
            let again = try await testbed.chappie(["accounts", "add", "work"])
            #expect(again.status != 0)
            #expect(
                again.stderr.contains("another ChatGPT user (mallory@example.com)") && again.stderr.contains("nothing was stored"), "\(again.stderr)")
            let list = try await testbed.chappie(["accounts", "list", "--json"])
            let accounts = try #require(JSONDocument(Data(list.stdout.utf8)).array() as? [[String: Any]])
            #expect(accounts.count == 1)
            #expect(accounts.first?["email"] as? String != "mallory@example.com")
        }
    }

    @Test("chappie's own files are never used through a link, and temporary files a killed chappie left are removed")
    func linksAndLeftovers() async throws {
        let testbed = try await Self.testbedWithAccount()
        try await whileRunning(testbed) {
            let elsewhere = try TestTokens.temporaryDirectory("chappie-links")
            defer { try? FileManager.default.removeItem(at: elsewhere) }
            // Temporary files of processes that no longer run are removed at the next open; a running one's are kept.
            let dead = testbed.home.appendingPathComponent(".chappie.key.new.2147483646.7.tmp")
            let alive = testbed.home.appendingPathComponent(".chappie.key.new.\(getpid()).7.tmp")
            try Data("key in clear".utf8).write(to: dead)
            try Data("being written".utf8).write(to: alive)
            #expect(try await testbed.chappie(["accounts", "list"]).status == 0)
            #expect(!FileManager.default.fileExists(atPath: dead.path))
            #expect(FileManager.default.fileExists(atPath: alive.path))

            // The database's WAL replaced by a link to a file of the user's: refused, and the file untouched.
            let victim = elsewhere.appendingPathComponent("victim")
            try Data("precious".utf8).write(to: victim)
            chmod(victim.path, 0o644)
            let wal = testbed.home.appendingPathComponent("chappie.sqlite-wal")
            try? FileManager.default.removeItem(at: wal)
            try FileManager.default.createSymbolicLink(at: wal, withDestinationURL: victim)
            let refused = try await testbed.chappie(["accounts", "list"])
            #expect(refused.status == 78, "\(refused.stderr)")
            #expect(refused.stderr.contains("symbolic link"), "\(refused.stderr)")
            #expect(try Data(contentsOf: victim) == Data("precious".utf8))
            #expect(try FileManager.default.attributesOfItem(atPath: victim.path)[.posixPermissions] as? Int == 0o644)
            try FileManager.default.removeItem(at: wal)

            // The database itself a link: refused as well.
            let database = testbed.home.appendingPathComponent("chappie.sqlite")
            let moved = elsewhere.appendingPathComponent("chappie.sqlite")
            try FileManager.default.moveItem(at: database, to: moved)
            try FileManager.default.createSymbolicLink(at: database, withDestinationURL: moved)
            let linked = try await testbed.chappie(["accounts", "list"])
            #expect(linked.status == 78 && linked.stderr.contains("symbolic link"), "\(linked.stderr)")
            try FileManager.default.removeItem(at: database)
            try FileManager.default.moveItem(at: moved, to: database)
            #expect(try await testbed.chappie(["token", "work"]).status == 0, "with the file itself back, the store opens")
        }
    }
}
