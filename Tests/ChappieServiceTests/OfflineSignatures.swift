import Chappie
import ChappieNet

extension TokenSignatures {
    /// Checks against an issuer nobody listens at (127.0.0.1, port 9): every check is `unchecked`,
    /// so a test that adopts tokens from a Codex home sees it refused as the real issuer's outage would.
    static var offline: TokenSignatures {
        TokenSignatures(OAuthClient(endpoints: try! ChappieEndpoints(issuer: "http://127.0.0.1:9", backend: nil), http: ChappieHTTPClient()))
    }
}
