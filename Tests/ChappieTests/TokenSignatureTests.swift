import Chappie
import ChappieEmulator
import ChappieNet
import ChappieTestSupport
import Foundation
import Synchronization
import Testing

@Suite("The issuer's signatures: discovery, the key set, RS256, the issuer claim, the cache")
struct TokenSignatureTests {
    private func signatures(_ emulator: RunningEmulator, clock: @escaping @Sendable () -> Date = Date.init) throws -> TokenSignatures {
        TokenSignatures(
            OAuthClient(endpoints: try ChappieEndpoints(issuer: emulator.baseURL.absoluteString, backend: nil), http: emulator.client), clock: clock)
    }

    private func signed(_ claims: String, by emulator: RunningEmulator) async throws -> String {
        try #require(try await emulator.json(emulator.request("/_emulator/sign", method: .post, json: claims)).json.string("jwt"))
    }

    private func keySetFetches(_ emulator: RunningEmulator) async throws -> Int {
        try await emulator.json(emulator.request("/_emulator/stats")).json.int("requests", "/.well-known/jwks.json") ?? 0
    }

    @Test("The issuer's token verifies; altered, unsigned, HS256, foreign-issuer and unknown-key tokens are forged")
    func verifiesAndRefuses() async throws {
        try await withEmulator { emulator in
            let check = try signatures(emulator)
            let issuer = emulator.baseURL.absoluteString
            let token = try await signed(#"{"iss": "\#(issuer)", "sub": "auth0|user-1", "exp": 4102444800}"#, by: emulator)
            #expect(await check.check(jwt: token) == .verified)
            let parts = token.split(separator: ".").map(String.init)
            func base64URL(_ text: String) -> String {
                Data(text.utf8).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
                    .replacingOccurrences(of: "=", with: "")
            }
            let altered = [parts[0], base64URL(#"{"iss":"\#(issuer)","sub":"auth0|mallory","exp":4102444800}"#), parts[2]].joined(separator: ".")
            let cases: [(String, String)] = [
                (altered, "signature does not match"),
                ([base64URL(#"{"alg":"none"}"#), parts[1], ""].joined(separator: "."), "not signed with RS256"),
                ([base64URL(#"{"alg":"HS256","kid":"x"}"#), parts[1], parts[2]].joined(separator: "."), "not signed with RS256"),
                (try await signed(#"{"iss": "https://auth.openai.com.evil.example"}"#, by: emulator), "was not issued by"),
                ("not-a-jwt", "not a readable JWT"),
            ]
            // Another spelling of the same issuer is the same issuer; a key the set does not list is its own verdict.
            let spelled = issuer.replacingOccurrences(of: "http://127.0.0.1", with: "HTTP://127.0.0.1") + "/"
            #expect(await check.check(jwt: try await signed(#"{"iss": "\#(spelled)"}"#, by: emulator)) == .verified)
            #expect(await check.check(jwt: TestTokens.jwt(["iss": issuer])) == .unknownKey)
            #expect(await check.check(tokens: [token, TestTokens.jwt(["iss": issuer])]) == .unknownKey, "each token counts")
            for (token, reason) in cases {
                let result = await check.check(jwt: token)
                guard case .forged(let said) = result else {
                    Issue.record("\(reason): \(result)")
                    continue
                }
                #expect(said.contains(reason), "\(said)")
            }
        }
    }

    @Test("The key set is fetched once and kept; an unknown key id fetches it again at most once a minute; after an hour it is fetched again")
    func keySetIsCached() async throws {
        try await withEmulator { emulator in
            let now = Mutex(Date())
            let check = try signatures(emulator) { now.withLock { $0 } }
            let token = try await signed(#"{"iss": "\#(emulator.baseURL.absoluteString)"}"#, by: emulator)
            for _ in 0..<5 { #expect(await check.check(jwt: token) == .verified) }
            #expect(try await keySetFetches(emulator) == 1)
            let unknown = TestTokens.jwt(["iss": emulator.baseURL.absoluteString])
            for _ in 0..<3 { _ = await check.check(jwt: unknown) }
            #expect(try await keySetFetches(emulator) == 1, "within a minute of the fetch, an unknown kid fetches nothing")
            now.withLock { $0 += 61 }
            for _ in 0..<3 { _ = await check.check(jwt: unknown) }
            #expect(try await keySetFetches(emulator) == 2, "one fetch for the unknown kid, then none for a minute")
            // Past the hour by a second: exactly an hour later is not reliably "an hour" in Date's
            // floating point.
            now.withLock { $0 += 3601 }
            #expect(await check.check(jwt: token) == .verified)
            #expect(try await keySetFetches(emulator) == 3)
        }
    }

    @Test("Keys that cannot be fetched make a check unchecked, not forged; keys fetched before still serve")
    func unreachableKeys() async throws {
        let nobody = TokenSignatures(
            OAuthClient(endpoints: try ChappieEndpoints(issuer: "http://127.0.0.1:9", backend: nil), http: ChappieHTTPClient()))
        guard case .unchecked = await nobody.check(jwt: TestTokens.jwt(["iss": "http://127.0.0.1:9"])) else {
            Issue.record("an unreachable issuer is not a forgery")
            return
        }
        try await withEmulator { emulator in
            let now = Mutex(Date())
            let check = try signatures(emulator) { now.withLock { $0 } }
            let token = try await signed(#"{"iss": "\#(emulator.baseURL.absoluteString)"}"#, by: emulator)
            #expect(await check.check(jwt: token) == .verified)
            try await emulator.addFault(#"{"kind": "status", "status": 503, "path": "/.well-known/", "count": 100}"#)
            now.withLock { $0 += 7200 }
            #expect(await check.check(jwt: token) == .verified, "the known key serves while the issuer is away")
            guard case .unchecked(let reason) = await check.check(jwt: TestTokens.jwt(["iss": emulator.baseURL.absoluteString])) else {
                Issue.record("an unknown key while the issuer is away is unchecked")
                return
            }
            #expect(reason.contains("503"), "\(reason)")
        }
    }
}
