import ChappieCore
import ChappieService
import ChappieStore
import ChappieTestSupport
import ChappieVault
import Foundation
import Testing

@Suite("Codex auth.json: import and export")
struct CodexAuthTests {
    private func service() async throws -> (AccountsService, URL) {
        let home = try TestTokens.temporaryDirectory("chappie-svc")
        let opened = try await StoreOpener.open(StoreOptions(home: home.path, environment: ["HOME": home.path]))
        return (AccountsService(store: opened.local!, signatures: .offline, environment: ["HOME": home.path]), home)
    }

    @Test("The current and the legacy fixture import with their claims")
    func importFixtures() async throws {
        let (service, home) = try await service()
        defer { try? FileManager.default.removeItem(at: home) }
        let current = try await service.importCodexAuth(from: Fixtures.directory.appendingPathComponent("codex-auth.json"), name: nil)
        #expect(current.created)
        #expect(current.account.name.rawValue == "ada")
        #expect(current.account.info.plan == .plus)
        #expect(current.account.info.accountID == "3f1c2a9e-5b7d-4c1e-9a2b-7d6e5f4a3b2c")
        #expect(current.account.accessTokenExpiresAt == Date(timeIntervalSince1970: 1_795_864_000))
        #expect(current.account.lastRefreshAt.map { abs($0.timeIntervalSince1970 - 1_795_167_012.123) < 0.002 } == true)
        // The legacy file (no account_id, no auth_mode) is the same ChatGPT account: an update.
        // Its tokens are older than the stored ones: refused unless forced.
        await #expect(throws: ServiceError.self) {
            _ = try await service.importCodexAuth(from: Fixtures.directory.appendingPathComponent("codex-auth-legacy.json"), name: nil)
        }
        let legacy = try await service.importCodexAuth(
            from: Fixtures.directory.appendingPathComponent("codex-auth-legacy.json"), name: nil, force: true)
        #expect(!legacy.created)
        #expect(try await service.store.accounts().count == 1)
        #expect(try await service.store.credentials(for: legacy.account).refreshToken == "rt_fixture.legacy")
    }

    @Test("An auth.json written by switch is read back identically by import")
    func roundTrip() async throws {
        let (service, home) = try await service()
        defer { try? FileManager.default.removeItem(at: home) }
        let imported = try await service.importCodexAuth(
            from: Fixtures.directory.appendingPathComponent("codex-auth.json"), name: AccountName("work"))
        let codexHome = home.appendingPathComponent("codex-work")
        let outcome = try await service.switchTo(AccountName("work"), codexHome: .at(codexHome))
        let file = try #require(outcome.codexAuthFile)
        #expect((try FileManager.default.attributesOfItem(atPath: file.path)[.posixPermissions] as? NSNumber)?.intValue == 0o600)
        #expect((try FileManager.default.attributesOfItem(atPath: codexHome.path)[.posixPermissions] as? NSNumber)?.intValue == 0o700)
        let reread = try CodexAuthFile.read(file)
        #expect(reread.credentials == (try await service.store.credentials(for: imported.account)))
        #expect(reread.info == imported.account.info)
        let written = JSONDocument(try Data(contentsOf: file))
        #expect(written.string("auth_mode") == "chatgpt")
        #expect(written.isNull("OPENAI_API_KEY"))
        #expect(written.string("tokens", "account_id") == "3f1c2a9e-5b7d-4c1e-9a2b-7d6e5f4a3b2c")
        let lastRefresh = try #require(written.string("last_refresh"))
        #expect(lastRefresh.wholeMatch(of: /\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z/) != nil)
        // Importing what switch wrote updates the same account.
        let again = try await service.importCodexAuth(from: file, name: nil)
        #expect(!again.created)
        #expect(again.account.id == imported.account.id)
        #expect(try await service.store.activeAccount()?.name.rawValue == "work")
        #expect(try await service.store.account(named: AccountName("work")).codexHome == codexHome.path)
    }

    @Test("switch refuses to replace a Codex login it cannot read unless forced; forced, it keeps the fields chappie does not manage")
    func keepsUnknownFields() async throws {
        let (service, home) = try await service()
        defer { try? FileManager.default.removeItem(at: home) }
        _ = try await service.importCodexAuth(from: Fixtures.directory.appendingPathComponent("codex-auth.json"), name: nil)
        let codexHome = home.appendingPathComponent("codex")
        try FileManager.default.createDirectory(at: codexHome, withIntermediateDirectories: true)
        let existing =
            #"{"OPENAI_API_KEY":"sk-keep","agent_identity":"agent-jwt","future":{"x":[1,2]},"tokens":{"extra":"kept","refresh_token":"old"}}"#
        _ = FileManager.default.createFile(atPath: codexHome.appendingPathComponent("auth.json").path, contents: Data(existing.utf8))
        await #expect { _ = try await service.switchTo(AccountName("ada"), codexHome: .at(codexHome)) } throws: { error in
            (error as? ServiceError)?.message.contains("--force") == true
        }
        #expect(JSONDocument(try Data(contentsOf: codexHome.appendingPathComponent("auth.json"))).string("tokens", "refresh_token") == "old")
        _ = try await service.switchTo(AccountName("ada"), codexHome: .at(codexHome), force: true)
        let written = JSONDocument(try Data(contentsOf: codexHome.appendingPathComponent("auth.json")))
        #expect(written.string("OPENAI_API_KEY") == "sk-keep")
        #expect(written.string("agent_identity") == "agent-jwt")
        #expect(written.int("future", "x", 1) == 2)
        #expect(written.string("tokens", "extra") == "kept")
        #expect(written.string("tokens", "refresh_token") == "rt_fixture.Rr8Yx2Qm7Lp4Nv1Kb6Tz")
    }

    @Test("A Codex login belongs to an account only with the same ChatGPT account and, when known, the same user (Team members share an account id)")
    func belongsToTheSameUser() async throws {
        let (service, home) = try await service()
        defer { try? FileManager.default.removeItem(at: home) }
        let account = try await service.store.save(
            info: ChappieAccountInfo(email: "ada@example.com", userID: "user-ada", accountID: "acct-team", plan: .team),
            credentials: Credentials(idToken: "i", accessToken: "a", refreshToken: "r"), accessTokenExpiresAt: nil, refreshedAt: nil,
            name: nil, event: .imported
        ).account
        let file = home.appendingPathComponent("auth.json")
        func holder(email: String, accountID: String, userID: String) throws -> CodexAuthFile {
            try TestTokens.codexAuthJSON(email: email, accountID: accountID, userID: userID, marker: "m").write(to: file)
            return try CodexAuthFile.read(file)
        }
        #expect(try holder(email: "ada@example.com", accountID: "acct-team", userID: "user-ada").belongs(to: account))
        #expect(try !holder(email: "bob@example.com", accountID: "acct-team", userID: "user-bob").belongs(to: account))
        #expect(try !holder(email: "ada@example.com", accountID: "acct-other", userID: "user-ada").belongs(to: account))
    }

    @Test(
        "Malformed auth.json files are refused with a clear message and nothing is stored",
        arguments: [
            ("not json", "not a JSON object"),
            ("[1,2,3]", "not a JSON object"),
            (#"{"OPENAI_API_KEY":"sk-abc"}"#, "API-key login"),
            (#"{"tokens":{"id_token":"not-a-jwt","access_token":"a","refresh_token":"r"}}"#, "not a JWT"),
            (#"{"tokens":{"id_token":"a.b.c","access_token":"a","refresh_token":"r"}}"#, "not a JWT"),
            (#"{"tokens":{"access_token":"a","refresh_token":"r"}}"#, "no tokens.id_token"),
            (#"{"tokens":{"id_token":"x","access_token":"a"}}"#, "no tokens.refresh_token"),
        ])
    func malformed(_ body: String, _ phrase: String) async throws {
        let (service, home) = try await service()
        defer { try? FileManager.default.removeItem(at: home) }
        let file = home.appendingPathComponent("auth.json")
        _ = FileManager.default.createFile(atPath: file.path, contents: Data(body.utf8))
        do {
            _ = try await service.importCodexAuth(from: file, name: nil)
            Issue.record("accepted \(body)")
        } catch let error as ServiceError {
            #expect(error.code == .invalidInput)
            #expect(error.message.contains(phrase), "\(error.message)")
            #expect(!error.message.contains("sk-abc"))
        }
        #expect(try await service.store.accounts().isEmpty)
    }

    @Test("A missing auth.json names the path looked at ($CODEX_HOME first)")
    func missingFile() async throws {
        let (service, home) = try await service()
        defer { try? FileManager.default.removeItem(at: home) }
        let withCodexHome = AccountsService(
            store: service.store, signatures: .offline, environment: ["CODEX_HOME": home.appendingPathComponent("nope").path])
        await #expect { _ = try await withCodexHome.importCodexAuth(from: nil, name: nil) } throws: { error in
            (error as? ServiceError)?.message.contains(home.appendingPathComponent("nope/auth.json").path) == true
        }
    }
}
