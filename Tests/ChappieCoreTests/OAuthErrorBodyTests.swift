import ChappieCore
import Foundation
import Testing

@Suite("Issuer error bodies: read only as JSON, kept redacted")
struct OAuthErrorBodyTests {
    @Test(
        "Only a JSON body carries an OAuth code: plain text or HTML that looks like one never signs an account out",
        arguments: [
            "invalid_grant", "invalid_grant: revoked", "forbidden", "<html><body>invalid_grant</body></html>", "",
        ])
    func plainTextIsNoCode(body: String) {
        let error = ChappieAuthError.tokenExchangeFailed(statusCode: 400, body: body)
        #expect(error.oauthErrorCode == nil)
        #expect(!error.requiresReauthentication)
        #expect(error.recovery == .retry(.after(seconds: 5)))
    }

    @Test("A stored description reads back as the JSON it came from, with the same class")
    func storedFormReadsBack() throws {
        for (code, reauth) in [("refresh_token_reused", true), ("invalid_client", false)] {
            let original = ChappieAuthError.tokenExchangeFailed(statusCode: 401, body: #"{"error":{"code":"\#(code)","message":"said: this"}}"#)
            let description = try #require(original.errorDescription)
            #expect(description == "The token endpoint answered HTTP 401: \(code): said: this")
            let reread = try #require(ChappieAuthError(tokenEndpointDescription: description))
            #expect(reread.oauthErrorCode == code)
            #expect(reread.requiresReauthentication == reauth)
            #expect(reread.errorDescription == description)
        }
        let html = ChappieAuthError.tokenExchangeFailed(statusCode: 403, body: "<html>no</html>")
        let reread = try #require(ChappieAuthError(tokenEndpointDescription: html.errorDescription ?? ""))
        #expect(reread.oauthErrorCode == nil)
        #expect(!reread.requiresReauthentication)
    }

    @Test("Redaction: token members in any case, escaped quotes, form fields, JWTs; the error code stays")
    func redaction() {
        let body =
            #"{"error":"invalid_grant","refreshToken":"rt_A\"still_secret","Access_Token":"at_secret","code_verifier":"cv_secret","echo":"refresh_token=rt_form_secret&code=ac_secret","id":"eyJhbGciOi.eyJzdWIiOi.c2ln"}"#
        let kept = OAuthErrorBody.redacted(Data(body.utf8))
        for secret in ["rt_A", "still_secret", "at_secret", "cv_secret", "rt_form_secret", "ac_secret", "eyJhbGciOi"] {
            #expect(!kept.contains(secret), "\(secret) in \(kept)")
        }
        #expect(OAuthErrorBody(Data(kept.utf8)).code == "invalid_grant")
        // A form field inside a JSON string stops at a backslash: the escaped quote, and the JSON, survive.
        let echoed = #"{"error":"invalid_grant","error_description":"sent code=abc\"x\" and device_code=dc_secret&authorization_code=ac2_secret"}"#
        let keptEcho = OAuthErrorBody.redacted(Data(echoed.utf8))
        #expect(OAuthErrorBody(Data(keptEcho.utf8)).code == "invalid_grant", "\(keptEcho)")
        #expect(!keptEcho.contains("dc_secret") && !keptEcho.contains("ac2_secret") && !keptEcho.contains("abc"))
    }

    @Test("A long body is redacted before it is cut (no token's start survives the cut), and a long JSON body keeps its code")
    func longBodies() {
        let padding = String(repeating: "x", count: OAuthErrorBody.keptLength - 30)
        let cut = #"{"note":"\#(padding)","refresh_token":"rt_secret_beyond_the_cut_point_0123456789"}"#
        let kept = OAuthErrorBody.redacted(Data(cut.utf8))
        #expect(kept.count <= OAuthErrorBody.keptLength)
        #expect(!kept.contains("rt_secret"))
        let longDescription = String(repeating: "z", count: 5000)
        for long in [
            #"{"error":"refresh_token_reused","error_description":"used","padding":"\#(String(repeating: "y", count: 5000))"}"#,
            #"{"error":"refresh_token_reused","error_description":"\#(longDescription)"}"#,
            // Redaction lengthens it past the limit.
            #"{"error":"refresh_token_reused","note":"\#(String(repeating: "w", count: 1900))","id_token":"","refresh_token":""}"#,
        ] {
            let kept = OAuthErrorBody.redacted(Data(long.utf8))
            #expect(kept.count <= OAuthErrorBody.keptLength)
            let error = ChappieAuthError.tokenExchangeFailed(statusCode: 401, body: kept)
            #expect(error.oauthErrorCode == "refresh_token_reused")
            #expect(error.requiresReauthentication)
        }
    }
}
