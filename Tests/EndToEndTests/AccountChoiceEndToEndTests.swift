import ChappieTestSupport
import Foundation
import Testing

@Suite("Which account a command uses: the name given, else $CHAPPIE_ACCOUNT, else the command's default", .tags(.slow))
struct AccountChoiceEndToEndTests {
    @Test("token, usage, usage poll, ask, exec and lease take $CHAPPIE_ACCOUNT when no account is named; a name given wins; exec NAME -- CMD works")
    func environmentComesAfterTheName() async throws {
        let testbed = try await ChappieTestbed.start()
        try await whileRunning(testbed) {
            #expect(try await testbed.chappie(["accounts", "add", "a"]).status == 0)
            #expect(try await testbed.chappie(["accounts", "add", "b"]).status == 0)
            let asB: [String: String?] = ["CHAPPIE_ACCOUNT": "b"]

            // token: the named account, else $CHAPPIE_ACCOUNT, else the active one (a, the first).
            let tokenA = try await testbed.chappie(["token", "a"]).stdout
            let tokenB = try await testbed.chappie(["token", "b"]).stdout
            // Compared as booleans: a failure must not print a token.
            let differ = tokenA != tokenB
            #expect(differ)
            let activeIsA = try await testbed.chappie(["token"]).stdout == tokenA
            #expect(activeIsA)
            let environmentIsB = try await testbed.chappie(["token"], environment: asB).stdout == tokenB
            #expect(environmentIsB)
            let nameWins = try await testbed.chappie(["token", "a"], environment: asB).stdout == tokenA
            #expect(nameWins)

            // usage: all accounts by default, the one $CHAPPIE_ACCOUNT names otherwise.
            func listed(_ result: ProcessResult, key: String = "name") -> [String] {
                (JSONDocument(Data(result.stdout.utf8)).array() ?? []).compactMap { ($0 as? [String: Any])?[key] as? String }
            }
            #expect(listed(try await testbed.chappie(["usage", "--cached", "--json"])) == ["a", "b"])
            #expect(listed(try await testbed.chappie(["usage", "--cached", "--json"], environment: asB)) == ["b"])
            let polled = try await testbed.chappie(["usage", "poll", "--json"], environment: asB)
            #expect(polled.status == 0 && listed(polled, key: "account") == ["b"], "\(polled.stderr)")
            #expect(try await testbed.chappie(["usage", "poll"]).status != 0, "no account named and no $CHAPPIE_ACCOUNT")

            // ask and lease: an unknown name in $CHAPPIE_ACCOUNT is what they use, so they say so.
            let ask = try await testbed.chappie(["ask", "hello"], environment: ["CHAPPIE_ACCOUNT": "nobody"])
            #expect(ask.status != 0 && ask.stderr.contains("nobody"), "\(ask.stderr)")
            // An inherited CODEX_HOME (another account's, in a command exec started) does not reach a
            // job whose account owns no Codex home.
            for name in ["a", "b"] {
                let leased = try await testbed.chappie(
                    ["lease", "run", "--", "sh", "-c", "echo \"$CHAPPIE_ACCOUNT [${CODEX_HOME-}]\""],
                    environment: ["CHAPPIE_ACCOUNT": name, "CODEX_HOME": "/elsewhere"])
                #expect(leased.status == 0 && leased.stdout == name + " []\n", "\(leased.stdout) \(leased.stderr)")
            }

            // exec: NAME before --, as aws-vault users type it; --account; $CHAPPIE_ACCOUNT; the active one.
            let show = ["--", "sh", "-c", "echo \"$CHAPPIE_ACCOUNT\""]
            #expect(try await testbed.chappie(["exec", "b"] + show).stdout == "b\n")
            #expect(try await testbed.chappie(["exec", "--account", "b"] + show).stdout == "b\n")
            #expect(try await testbed.chappie(["exec"] + show, environment: asB).stdout == "b\n")
            #expect(try await testbed.chappie(["exec", "a"] + show, environment: asB).stdout == "a\n")
            #expect(try await testbed.chappie(["exec"] + show).stdout == "a\n")
            let twice = try await testbed.chappie(["exec", "a", "--account", "b"] + show)
            #expect(twice.status == 2 && twice.stderr.contains("name the account once"), "\(twice.stderr)")

            let bad = try await testbed.chappie(["token"], environment: ["CHAPPIE_ACCOUNT": "no good"])
            #expect(bad.status == 2 && bad.stderr.contains("$CHAPPIE_ACCOUNT is not an account name"), "\(bad.stderr)")
        }
    }
}
