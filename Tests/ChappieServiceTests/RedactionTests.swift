import ChappieDaemonClient
import Chappie
import ChappieCore
import ChappieService
import ChappieStore
import ChappieTestSupport
import Foundation
import Testing

@Suite("Token-bearing values print redacted: description, debugDescription, mirror and dump")
struct RedactionTests {
    /// Every way a value can end up printed.
    private func renderings(_ value: Any) -> [String] {
        var dumped = ""
        dump(value, to: &dumped)
        let children = Mirror(reflecting: value).children.map { "\($0.label ?? ""): \($0.value)" }.joined(separator: "\n")
        return [String(describing: value), String(reflecting: value), "\(value)", dumped, children]
    }

    private func expectNoSecret(_ value: Any, _ secrets: [String], sourceLocation: SourceLocation = #_sourceLocation) {
        for text in renderings(value) {
            for secret in secrets {
                #expect(!text.contains(secret), "\(type(of: value)) printed a secret", sourceLocation: sourceLocation)
            }
            #expect(text.contains("redacted"), sourceLocation: sourceLocation)
        }
    }

    @Test("Credentials, TokenRefresher.Fresh, the daemon's token reply and a Codex auth.json")
    func redacted() async throws {
        let credentials = Credentials(idToken: "SECRET-ID-TOKEN", accessToken: "SECRET-ACCESS-TOKEN", refreshToken: "SECRET-REFRESH-TOKEN")
        let secrets = ["SECRET-ID-TOKEN", "SECRET-ACCESS-TOKEN", "SECRET-REFRESH-TOKEN"]
        expectNoSecret(credentials, secrets)

        let home = try TestTokens.temporaryDirectory("chappie-redaction")
        defer { try? FileManager.default.removeItem(at: home) }
        let store = try await StoreOpener.open(StoreOptions(home: home.path, environment: [:])).local!
        let account = try await store.save(
            info: ChappieAccountInfo(email: "ada@example.com", userID: "u", accountID: "a", plan: .plus), credentials: credentials,
            accessTokenExpiresAt: nil, refreshedAt: nil, name: nil, event: .imported
        ).account
        expectNoSecret(TokenRefresher.Fresh(credentials: credentials, account: account, outcome: .stillValid, expiresAt: nil), secrets)
        expectNoSecret(
            DaemonReply.Token(name: "ada", accessToken: "SECRET-ACCESS-TOKEN", expiresAt: nil, chatgptAccountID: "a", fedramp: false),
            secrets)

        let file = home.appendingPathComponent("auth.json")
        try TestTokens.codexAuthJSON(email: "ada@example.com", accountID: "acct", userID: "user", marker: "SECRETMARK").write(to: file)
        let auth = try CodexAuthFile.read(file)
        expectNoSecret(auth, ["SECRETMARK", auth.credentials.idToken, auth.credentials.accessToken])
        #expect("\(auth)".contains("ada@example.com"))
    }
}
