import ChappieTestSupport
import Foundation
import Synchronization
import Testing

@Suite("Accounts stay whole, run as a user runs chappie: Codex homes, sign-out, key rotation under readers", .tags(.slow))
struct AccountsStayWholeEndToEndTests {
    private func setUp(_ names: [String], emulator: [String] = []) async throws -> ChappieTestbed {
        let setup = try await ChappieTestbed.start(
            emulatorArguments: ["--auto-approve", "--auto-approve-delay", "0", "--device-code-interval", "1"] + emulator)
        for name in names { #expect(try await setup.chappie(["accounts", "add", name]).status == 0) }
        return setup
    }

    private func accounts(_ setup: ChappieTestbed) async throws -> [String: [String: Any]] {
        let list = JSONDocument(Data(try await setup.chappie(["accounts", "list", "--json"]).stdout.utf8))
        return (list.array() ?? []).compactMap { $0 as? [String: Any] }.reduce(into: [:]) { $0[$1["name"] as? String ?? ""] = $1 }
    }

    /// What the Codex CLI does when it refreshes by itself: redeems the refresh token in
    /// `home/auth.json` and writes the new tokens and `last_refresh` back. Returns the new access token.
    private func codexRefreshes(in home: URL, _ setup: ChappieTestbed) async throws -> String {
        let file = home.appendingPathComponent("auth.json")
        var object = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: file)) as? [String: Any])
        var tokens = try #require(object["tokens"] as? [String: Any])
        let body = RunningEmulator.encode([
            "client_id": codexClientID, "grant_type": "refresh_token", "refresh_token": try #require(tokens["refresh_token"] as? String),
        ])
        let refreshed = try await setup.control("/oauth/token", method: "POST", body: body)
        let access = try #require(refreshed.string("access_token"))
        tokens["access_token"] = access
        let refresh = try #require(refreshed.string("refresh_token"))
        tokens["refresh_token"] = refresh
        tokens["id_token"] = refreshed.string("id_token") ?? tokens["id_token"]
        object["tokens"] = tokens
        object["last_refresh"] = Date().formatted(.iso8601.year().month().day().time(includingFractionalSeconds: true).timeZone(separator: .omitted))
        try JSONSerialization.data(withJSONObject: object).write(to: file)
        return access
    }

    private func authFile(_ home: URL) throws -> JSONDocument {
        JSONDocument(try Data(contentsOf: home.appendingPathComponent("auth.json")))
    }

    @Test("switch a, switch b, then refreshes of a: the Codex home keeps b, and only b owns it")
    func oneOwnerPerCodexHome() async throws {
        let setup = try await setUp(["a", "b"])
        try await whileRunning(setup) {
            let codexHome = setup.home.appendingPathComponent("codex")
            #expect(try await setup.chappie(["config", "set", "codex-home", codexHome.path]).status == 0)
            #expect(try await setup.chappie(["accounts", "switch", "a"]).status == 0)
            #expect(try await setup.chappie(["accounts", "switch", "b"]).status == 0)
            for _ in 0..<3 { #expect(try await setup.chappie(["refresh", "a"]).status == 0) }
            let listed = try await accounts(setup)
            let b = try #require(listed["b"])
            #expect(try authFile(codexHome).string("tokens", "account_id") == b["chatgptAccountID"] as? String)
            #expect(jwtClaims(try authFile(codexHome).string("tokens", "id_token") ?? "").string("email") == b["email"] as? String)
            #expect(try await setup.chappie(["accounts", "current"]).stdout.contains("b"))
            #expect(b["codexHome"] as? String == codexHome.path)
            #expect(listed["a"]?["codexHome"] == nil, "a must no longer own the home")
            // b's refreshes still reach the file.
            let before = try authFile(codexHome).string("tokens", "refresh_token")
            #expect(try await setup.chappie(["refresh", "b"]).status == 0)
            #expect(try authFile(codexHome).string("tokens", "refresh_token") != before)
            #expect(try await setup.control("/_emulator/stats").int("refresh", "reuse_detected") == 0)
        }
    }

    @Test("Codex rotated the owner's token in auth.json: switch adopts it before writing the next account, so the owner is not lost")
    func switchAdoptsCodexRotation() async throws {
        let setup = try await setUp(["a", "b"])
        try await whileRunning(setup) {
            let codexHome = setup.home.appendingPathComponent("codex")
            #expect(try await setup.chappie(["accounts", "switch", "b", "--codex-home", codexHome.path]).status == 0)
            // Codex refreshes b by itself and writes the new tokens into auth.json.
            _ = try await codexRefreshes(in: codexHome, setup)
            // b's stored refresh token is now spent; switching away must keep Codex's.
            #expect(try await setup.chappie(["accounts", "switch", "a", "--codex-home", codexHome.path]).status == 0)
            let refresh = try await setup.chappie(["refresh", "b"])
            #expect(refresh.status == 0, "\(refresh.stderr)")
            #expect(try await setup.chappie(["log", "--json"]).stdout.contains("adopted"))
            let stats = try await setup.control("/_emulator/stats")
            #expect(stats.int("refresh", "reuse_detected") == 0)
            #expect(try await accounts(setup)["b"]?["status"] as? String == "ok")
        }
    }

    @Test("Codex refreshed in the home an account owns: chappie token hands out Codex's new token at once (no refresh of its own)")
    func tokenAdoptsCodexRefresh() async throws {
        let setup = try await setUp(["a"])
        try await whileRunning(setup) {
            let codexHome = setup.home.appendingPathComponent("codex")
            #expect(try await setup.chappie(["accounts", "switch", "a", "--codex-home", codexHome.path]).status == 0)
            // Codex's own refresh (after its access token was revoked): chappie's stored access token is dead.
            let codexAccess = try await codexRefreshes(in: codexHome, setup)
            let redemptions = try await setup.control("/_emulator/stats").int("refresh", "redemptions")
            let token = try await setup.chappie(["token", "a"])
            #expect(token.status == 0)
            #expect(token.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == codexAccess, "chappie handed out its own, older token")
            let stats = try await setup.control("/_emulator/stats")
            #expect(stats.int("refresh", "redemptions") == redemptions, "chappie redeemed a token instead of adopting Codex's")
            #expect(stats.int("refresh", "reuse_detected") == 0)
            #expect(try await setup.chappie(["refresh", "a"]).status == 0)
        }
    }

    @Test("Importing an old copy of auth.json (its refresh token already redeemed) is refused; the account keeps working")
    func importRefusesOlderTokens() async throws {
        let setup = try await setUp(["a"])
        try await whileRunning(setup) {
            let codexHome = setup.home.appendingPathComponent("codex")
            #expect(try await setup.chappie(["accounts", "switch", "a", "--codex-home", codexHome.path]).status == 0)
            let old = setup.home.appendingPathComponent("old-auth.json")
            try FileManager.default.copyItem(at: codexHome.appendingPathComponent("auth.json"), to: old)
            #expect(try await setup.chappie(["refresh", "a"]).status == 0)
            let refused = try await setup.chappie(["accounts", "import", old.path])
            #expect(refused.status == 1)
            #expect(refused.stderr.contains("older tokens"))
            #expect(try await setup.chappie(["refresh", "a"]).status == 0, "the old copy replaced the live tokens")
            // The current file (the same tokens as stored) imports fine.
            #expect(try await setup.chappie(["accounts", "import", codexHome.appendingPathComponent("auth.json").path]).status == 0)
            #expect(try await setup.control("/_emulator/stats").int("refresh", "reuse_detected") == 0)
        }
    }

    @Test("An account switched into a second Codex home leaves the first: that auth.json is removed instead of keeping a token chappie will spend")
    func oneHomePerAccount() async throws {
        let setup = try await setUp(["a"])
        try await whileRunning(setup) { () async throws in
            let first = setup.home.appendingPathComponent("codex-1")
            let second = setup.home.appendingPathComponent("codex-2")
            #expect(try await setup.chappie(["accounts", "switch", "a", "--codex-home", first.path]).status == 0)
            #expect(try await setup.chappie(["accounts", "switch", "a", "--codex-home", second.path]).status == 0)
            #expect(!FileManager.default.fileExists(atPath: first.appendingPathComponent("auth.json").path))
            #expect(try authFile(second).string("tokens", "account_id") != nil)
            #expect(try await accounts(setup)["a"]?["codexHome"] as? String == second.path)
            #expect(try await setup.chappie(["refresh", "a"]).status == 0)
            #expect(!FileManager.default.fileExists(atPath: first.appendingPathComponent("auth.json").path))
            #expect(try await setup.chappie(["log", "--json"]).stdout.contains("codex_home_left"))
        }
    }

    @Test(
        "CHAPPIE_PASSPHRASE and CHAPPIE_NEW_PASSPHRASE: a passphrase store opens, an empty or wrong one is refused clearly, rotation takes the new one"
    )
    func passphraseFromEnvironment() async throws {
        let setup = try await setUp([])
        try await whileRunning(setup) {
            let first = try await setup.chappie(["accounts", "add", "a"], environment: ["CHAPPIE_PASSPHRASE": "correct horse"])
            #expect(first.status == 0, "\(first.stderr)")
            let status = JSONDocument(
                Data(try await setup.chappie(["key", "status", "--json"], environment: ["CHAPPIE_PASSPHRASE": "correct horse"]).stdout.utf8))
            #expect(status.string("source")?.contains("CHAPPIE_PASSPHRASE") == true, "\(status.root.map { "\($0)" } ?? "")")
            // The passphrase is taken out of the environment at start: a command chappie runs does not inherit it.
            let child = try await setup.chappie(
                ["exec", "--account", "a", "--", "/bin/sh", "-c", "printf %s \"${CHAPPIE_PASSPHRASE-unset}\""],
                environment: ["CHAPPIE_PASSPHRASE": "correct horse"])
            #expect(child.status == 0, "\(child.stderr)")
            #expect(child.stdout == "unset")
            let empty = try await setup.chappie(["token", "a"], environment: ["CHAPPIE_PASSPHRASE": ""])
            #expect(empty.status == 78)
            #expect(empty.stderr.contains("CHAPPIE_PASSPHRASE is empty"))
            let wrong = try await setup.chappie(["token", "a"], environment: ["CHAPPIE_PASSPHRASE": "wrong horse"])
            #expect(wrong.status == 78)
            #expect(wrong.stderr.contains("does not open this store"))
            #expect(!wrong.stderr.contains("horse"), "the passphrase was printed")
            let rotated = try await setup.chappie(
                ["key", "rotate"], environment: ["CHAPPIE_PASSPHRASE": "correct horse", "CHAPPIE_NEW_PASSPHRASE": "battery staple"])
            #expect(rotated.status == 0, "\(rotated.stderr)")
            #expect(try await setup.chappie(["token", "a"], environment: ["CHAPPIE_PASSPHRASE": "correct horse"]).status == 78)
            #expect(try await setup.chappie(["token", "a"], environment: ["CHAPPIE_PASSPHRASE": "battery staple"]).status == 0)
        }
    }

    @Test(
        "A read-only database is refused before any refresh is redeemed; made writable again, the account works",
        .enabled(if: OtherUser.isPossible, "runs chappie as nobody: root writes through file modes, so only another user sees a read-only file"))
    func readOnlyDatabase() async throws {
        let setup = try await setUp([])
        try await whileRunning(setup) {
            #expect(chown(setup.home.path, 65534, 65534) == 0)
            let chappie = try OtherUser.chappie()
            func asNobody(_ arguments: [String]) async throws -> ProcessResult {
                try await OtherUser.nobody.run(
                    chappie, arguments + setup.service,
                    environment: ["HOME": setup.home.path, "CHAPPIE_PASSPHRASE": nil, "CHAPPIE_KEY_FILE": nil, "CHAPPIE_HOME": nil])
            }
            #expect(try await asNobody(["accounts", "add", "a"]).status == 0)
            let database = setup.home.appendingPathComponent("chappie.sqlite").path
            #expect(chmod(database, 0o400) == 0)
            let refused = try await asNobody(["token", "a", "--margin", "2h"])
            #expect(refused.status == 78)
            #expect(refused.stderr.contains("read-only"), "\(refused.stderr)")
            #expect(
                try await setup.control("/_emulator/stats").int("refresh", "redemptions") == 0,
                "a refresh token was redeemed into a database that cannot keep it")
            #expect(chmod(database, 0o600) == 0)
            let token = try await asNobody(["token", "a", "--margin", "2h"])
            #expect(token.status == 0, "\(token.stderr)")
            let stats = try await setup.control("/_emulator/stats")
            #expect(stats.int("refresh", "redemptions") == 1)
            #expect(stats.int("refresh", "reuse_detected") == 0)
        }
    }

    @Test("A login made with codex login is never clobbered: refreshes leave it, switch refuses without --force")
    func foreignLoginIsKept() async throws {
        let setup = try await setUp(["a", "b"])
        try await whileRunning(setup) {
            let codexHome = setup.home.appendingPathComponent("codex")
            #expect(try await setup.chappie(["accounts", "switch", "a", "--codex-home", codexHome.path]).status == 0)
            let stranger = TestTokens.codexAuthJSON(
                email: "stranger@example.com", accountID: "acct-stranger", userID: "user-stranger", marker: "stranger")
            let file = codexHome.appendingPathComponent("auth.json")
            try stranger.write(to: file)
            #expect(try await setup.chappie(["refresh", "a"]).status == 0)
            #expect(try Data(contentsOf: file) == stranger, "a refresh of the old owner overwrote another login")
            let refused = try await setup.chappie(["accounts", "switch", "b", "--codex-home", codexHome.path])
            #expect(refused.status == 1)
            #expect(refused.stderr.contains("--force"))
            #expect(refused.stderr.contains("stranger@example.com"))
            #expect(!refused.stderr.contains("rt_stranger"))
            #expect(try Data(contentsOf: file) == stranger)
            #expect(try await setup.chappie(["accounts", "current"]).stdout.contains("a"))
            #expect(try await setup.chappie(["accounts", "switch", "b", "--codex-home", codexHome.path, "--force"]).status == 0)
            #expect(try authFile(codexHome).string("tokens", "account_id") == (try await accounts(setup)["b"]?["chatgptAccountID"] as? String))
        }
    }

    @Test("An HTML 403 from a proxy on the token endpoint: token prints the still-valid token with a warning (exit 0); the account stays signed in")
    func proxyErrorKeepsAccount() async throws {
        let setup = try await setUp(["work"])
        try await whileRunning(setup) {
            let fault = #"{"kind":"status","status":403,"count":3,"path":"/oauth/token","body":"<html><body>Forbidden</body></html>"}"#
            _ = try await setup.control("/_emulator/faults", method: "POST", body: fault)
            // A margin longer than the token's life: the refresh is attempted, and fails.
            let token = try await setup.chappie(["token", "work", "--margin", "2h"])
            #expect(token.status == 0, "\(token.stderr)")
            #expect(token.stdout.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: ".").count == 3)
            #expect(token.stderr.contains("warning:"))
            #expect(token.stderr.components(separatedBy: "answered HTTP 403").count == 2)
            let refresh = try await setup.chappie(["refresh", "work"])
            #expect(refresh.status == 75)
            #expect(try await accounts(setup)["work"]?["status"] as? String == "ok")
            _ = try await setup.control("/_emulator/faults", method: "DELETE")
            #expect(try await setup.chappie(["refresh", "work"]).status == 0)
        }
    }

    @Test("An e-mail with terminal escape sequences is listed without them; --json keeps the exact value")
    func hostileEmail() async throws {
        let setup = try await setUp([])
        try await whileRunning(setup) {
            let email = "evil\u{1B}]0;pwned\u{07}\u{1B}[2J@example.com"
            let file = setup.home.appendingPathComponent("import.json")
            try TestTokens.codexAuthJSON(email: email, accountID: "acct-evil", userID: "user-evil", marker: "evil").write(to: file)
            #expect(try await setup.chappie(["accounts", "import", file.path, "--name", "evil"]).status == 0)
            for arguments in [["accounts", "list"], ["accounts", "show", "evil"], ["status"]] {
                let output = try await setup.chappie(arguments)
                #expect(output.status == 0)
                #expect(!output.stdout.unicodeScalars.contains { $0.value == 0x1B || $0.value == 0x07 }, "\(arguments)")
                if arguments[0] == "accounts" { #expect(output.stdout.contains("pwned"), "\(arguments)") }
            }
            #expect(try await accounts(setup)["evil"]?["email"] as? String == email)
        }
    }

    @Test("key rotate 20 times while token and accounts list run in loops: no reader fails, one key on disk opens the store, nothing lost")
    func rotationUnderReaders() async throws {
        let setup = try await setUp(["a", "b"])
        try await whileRunning(setup) {
            let stop = StopFlag()
            let readers = Task {
                try await withThrowingTaskGroup(of: (Int, [String]).self) { group in
                    for worker in 0..<3 {
                        group.addTask {
                            var calls = 0
                            var failures: [String] = []
                            while !stop.isSet {
                                // Worker 0 refreshes on every call (the key lock shared against the rotation).
                                let arguments = [["token", "a", "--margin", "2h"], ["token", "b"], ["accounts", "list", "--json"]][worker]
                                let result = try await setup.chappie(arguments)
                                calls += 1
                                if result.status != 0 {
                                    failures.append("\(arguments.joined(separator: " ")): exit \(result.status): \(result.stderr)")
                                }
                            }
                            return (calls, failures)
                        }
                    }
                    var total = 0
                    var failures: [String] = []
                    for try await (calls, found) in group {
                        total += calls
                        failures += found
                    }
                    return (total, failures)
                }
            }
            let keyFile = setup.home.appendingPathComponent("chappie.key")
            for round in 0..<20 {
                let rotation = try await setup.chappie(["key", "rotate"])
                #expect(rotation.status == 0, "round \(round): \(rotation.stderr)")
                #expect(!FileManager.default.fileExists(atPath: keyFile.path + ".new"), "round \(round)")
                let status = try await setup.chappie(["key", "status", "--json"])
                #expect(status.status == 0, "round \(round): \(status.stderr)")
            }
            stop.set()
            let (calls, failures) = try await readers.value
            #expect(calls >= 20, "the readers barely overlapped the rotations")
            #expect(failures.isEmpty, "\(failures.prefix(3))")
            let listed = try await accounts(setup)
            #expect(listed["a"]?["credentials"] as? String == "ok")
            #expect(listed["b"]?["credentials"] as? String == "ok")
            #expect(try await setup.chappie(["refresh", "--all"]).status == 0)
            #expect(try await setup.control("/_emulator/stats").int("refresh", "reuse_detected") == 0)
        }
    }
}

/// A flag one task sets and others read.
private final class StopFlag: Sendable {
    private let value = Mutex(false)

    var isSet: Bool { value.withLock { $0 } }

    func set() {
        value.withLock { $0 = true }
    }
}
