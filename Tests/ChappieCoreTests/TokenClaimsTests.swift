import ChappieCore
import ChappieTestSupport
import Foundation
import Testing

@Suite("JWT claims, plans and account names")
struct TokenClaimsTests {
    @Test("The fixture id_token decodes into the account's facts")
    func fixtureIDToken() throws {
        let fixture = JSONDocument(try Fixtures.data("token-response.json"))
        let claims = try TokenClaims(jwt: try #require(fixture.string("id_token")))
        #expect(claims.account.email == "ada@example.com")
        #expect(claims.account.accountID == "3f1c2a9e-5b7d-4c1e-9a2b-7d6e5f4a3b2c")
        #expect(claims.account.userID == "user-Fx8kQ2mN7pR4sT1v")
        #expect(claims.account.plan == .plus)
        #expect(claims.account.isFedRAMPAccount == false)
        #expect(claims.expiresAt == Date(timeIntervalSince1970: 1_795_003_600))
        let access = try TokenClaims(jwt: try #require(fixture.string("access_token")))
        // The access token has no top-level email: the profile namespace supplies it.
        #expect(access.account.email == "ada@example.com")
        #expect(access.expiresAt == Date(timeIntervalSince1970: 1_795_864_000))
    }

    @Test(
        "Malformed tokens are refused with a message that does not echo the token",
        arguments: [
            "", "abc", "a.b", "a.b.c.d", "header..sig", "eyJ.@@@.sig", "eyJ.bm90IGpzb24.sig", "eyJ.WzEsMl0.sig",
        ])
    func malformed(_ token: String) {
        #expect(throws: TokenClaimsError.self) { try TokenClaims(jwt: token) }
        do {
            _ = try TokenClaims(jwt: token)
        } catch {
            if !token.isEmpty { #expect(!error.description.contains(token)) }
        }
    }

    @Test("user_id is the fallback for chatgpt_user_id; FedRAMP is read")
    func fallbacks() throws {
        let token = TestTokens.jwt(["https://api.openai.com/auth": ["user_id": "user-1", "chatgpt_account_is_fedramp": true]])
        let claims = try TokenClaims(jwt: token)
        #expect(claims.account.userID == "user-1")
        #expect(claims.account.isFedRAMPAccount)
        #expect(claims.account.email == nil)
        #expect(claims.expiresAt == nil)
    }

    @Test("Plans decode case-insensitively with display names; unknown ones are kept")
    func plans() {
        #expect(ChappiePlan(rawValue: "PROLITE") == .proLite)
        #expect(ChappiePlan(rawValue: "prolite").displayName == "Pro Lite")
        #expect(ChappiePlan(rawValue: "hc") == .enterprise)
        #expect(ChappiePlan(rawValue: "education") == .edu)
        #expect(ChappiePlan(rawValue: "quorum") == .unknown("quorum"))
        #expect(ChappiePlan(rawValue: "quorum").rawValue == "quorum")
        #expect(ChappiePlan.team.isWorkspace)
        #expect(!ChappiePlan.plus.isWorkspace)
    }

    @Test("Account names follow the rule", arguments: ["work", "a", "personal.plus", "team_2-b", String(repeating: "x", count: 64)])
    func validNames(_ name: String) throws {
        #expect(try AccountName(name).rawValue == name)
    }

    @Test(
        "Hostile names are refused with the rule, control characters escaped",
        arguments: [
            "", ".", "..", "a b", "a/b", "../etc", "name\nnext", "quote'\"", "x;DROP TABLE accounts;--", "é", "tab\t",
            String(repeating: "y", count: 65), String(repeating: "z", count: 200),
        ])
    func hostileNames(_ name: String) {
        do {
            _ = try AccountName(name)
            Issue.record("\(name.debugDescription) was accepted")
        } catch {
            #expect(error.description.contains("letters, digits"))
            #expect(!error.description.contains("\n"))
            #expect(!error.description.contains("\t"))
        }
    }

    @Test("Names derived from e-mail local parts are valid")
    func derivedNames() {
        #expect(AccountName.derived(from: "ada.lovelace")?.rawValue == "ada.lovelace")
        #expect(AccountName.derived(from: "a+b c")?.rawValue == "a-b-c")
        #expect(AccountName.derived(from: "+++") == nil)
    }
}
