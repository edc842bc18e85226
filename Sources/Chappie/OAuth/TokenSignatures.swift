import ChappieText
package import ChappieCore
import ChappieNet
package import CryptoExtras
package import Foundation
import Synchronization

/// Checks that tokens chappie did not get from its own exchange with the issuer were signed by that
/// issuer: tokens Codex left in an `auth.json` before they are adopted, and refresh replies before
/// they are stored (docs/security.md, "Signatures").
///
/// The keys are the issuer's published ones: its OIDC discovery document
/// (`ISSUER/.well-known/openid-configuration`) names `jwks_uri`, which lists RSA keys by `kid`. They
/// are kept for the life of the process, one set per issuer, fetched again after an hour, or at
/// most once a minute when a token names a `kid` the set lacks (the issuer rotated its keys).
/// Only RS256 with a key of 2048 bits or more is accepted, and the token's `iss` must be the issuer
/// (compared by scheme, host and port, without case or a trailing slash).
package struct TokenSignatures: Sendable {
    /// What a check found.
    package enum Check: Sendable, Equatable {
        /// Signed by one of the issuer's keys, and issued by it.
        case verified
        /// Not the issuer's: a forged, altered or foreign token, another algorithm, or a signature
        /// the named key does not match. Why, without the token.
        case forged(String)
        /// It names a key the issuer's key set does not list, even fetched again: forged, or signed
        /// with a key the issuer has not published yet. Callers choose which to assume.
        case unknownKey
        /// Could not be checked now (the keys could not be fetched). Why.
        case unchecked(String)

        /// The worse of two results: forged, then an unknown key, then unchecked, then verified.
        func worse(_ other: Check) -> Check {
            func rank(_ check: Check) -> Int {
                switch check {
                case .verified: 0
                case .unchecked: 1
                case .unknownKey: 2
                case .forged: 3
                }
            }
            return rank(other) > rank(self) ? other : self
        }
    }

    private let issuer: URL
    private let http: ChappieHTTPClient
    private let clock: @Sendable () -> Date

    /// Checks against the keys `oauth`'s issuer publishes, fetched with its HTTP client.
    package init(_ oauth: OAuthClient, clock: @escaping @Sendable () -> Date = Date.init) {
        issuer = oauth.endpoints.issuer
        http = oauth.http
        self.clock = clock
    }

    /// Checks every token of a set of credentials that is there: the id_token (who the account is)
    /// and the access token (what is used, and whose expiry decides which tokens are newer).
    package func check(_ credentials: Credentials) async -> Check {
        await check(tokens: [credentials.idToken, credentials.accessToken])
    }

    /// Checks each non-empty token; the worst result. Without `fetching`, only keys already at
    /// hand are used (right after a refresh token is redeemed, when nothing may wait on the
    /// network): a key not at hand makes the token `unknownKey`, no keys at all `unchecked`.
    package func check(tokens: [String], fetching: Bool = true) async -> Check {
        var result = Check.verified
        for token in tokens where !token.isEmpty { result = result.worse(await check(jwt: token, fetching: fetching)) }
        return result
    }

    /// What to do with newer tokens found in a Codex home for `account`.
    package enum Adoption: Sendable, Equatable {
        /// They are the issuer's and name the account: take them.
        case adopt
        /// They are not the issuer's: never take them. Why and what to do.
        case refuse(String)
        /// They name a key the issuer's set does not list: signed with a key it has not published
        /// yet (it may be changing keys), or not the issuer's. Take nothing and redeem nothing now;
        /// a person who knows they are not the issuer's may replace them (`switch --force`).
        case unlisted(String)
        /// They cannot be judged now (the keys are unreachable): take nothing and redeem nothing
        /// until they can. Why and when to try again.
        case later(String)
    }

    /// Newer tokens found in a Codex home (`home`) that would be adopted for `account`: both must
    /// name the account where they name one, as a refresh reply must, and both must be the issuer's.
    package func adoption(of credentials: Credentials, for account: Account, in home: URL) async -> Adoption {
        let tokens = OAuthClient.RefreshedTokens(
            idToken: credentials.idToken, accessToken: credentials.accessToken, refreshToken: credentials.refreshToken)
        let verdict: Check = if let problem = TokenRefresher.mismatch(tokens, for: account) { .forged(problem) } else { await check(credentials) }
        let file = home.appendingPathComponent("auth.json").path
        let replace =
            "replace that file with the stored tokens (chappie accounts switch \(account.name) --codex-home \(home.path) --force) or sign the account in again"
        switch verdict {
        case .verified:
            return .adopt
        case .forged(let reason):
            return .refuse(
                "\(file) holds newer tokens for \(account.name) that are not the issuer's (\(reason)); they were not adopted. If you did not put them there, \(replace)"
            )
        case .unknownKey:
            return .unlisted(
                "\(file) holds newer tokens for \(account.name) signed with a key the issuer does not list (it may be changing its keys); nothing was adopted: try again in a minute. If this persists, they are not the issuer's: \(replace)"
            )
        case .unchecked(let reason):
            return .later(
                "\(file) holds newer tokens for \(account.name) whose signature could not be checked (\(reason)); nothing was adopted: try again when the issuer can be reached"
            )
        }
    }

    /// Why stored tokens must not be redeemed here: they name another issuer than the one chappie
    /// uses, so the reply would be refused as not the issuer's once the refresh token is spent.
    package func foreignIssuer(of credentials: Credentials) -> String? {
        for token in [credentials.idToken, credentials.accessToken] {
            guard let named = SignedToken(token)?.issuer(otherThan: issuer) else { continue }
            return
                "its tokens were issued by \(named), not by the issuer chappie uses (\(issuer.absoluteString)); nothing was redeemed: point --issuer (or CHAPPIE_ISSUER) at \(named)"
        }
        return nil
    }

    /// Fetches the issuer's keys now unless a fresh set is kept, so that a check made right after a
    /// refresh token is redeemed needs no network (nothing is redeemed while waiting on it).
    ///
    /// - Returns: Whether a key set is at hand.
    package func prepare() async -> Bool {
        let kept = Self.cache.withLock { $0[issuer.absoluteString] }
        if let kept, clock().timeIntervalSince(kept.fetchedAt) < Self.lifetime { return true }
        guard let keys = try? await fetch() else { return kept != nil }
        Self.cache.withLock { $0[issuer.absoluteString] = KeySet(keys: keys, fetchedAt: clock()) }
        return true
    }

    /// Checks one compact JWT.
    package func check(jwt: String, fetching: Bool = true) async -> Check {
        guard let token = SignedToken(jwt) else { return .forged("it is not a readable JWT") }
        if let refusal = token.refusal(issuer: issuer) { return .forged(refusal) }
        switch await key(token.keyID, fetching: fetching) {
        case .success(let key?): return token.isSigned(by: key) ? .verified : .forged("its signature does not match the issuer's key")
        case .success(nil): return .unknownKey
        case .failure(let reason): return .unchecked(reason.description)
        }
    }

    /// The issuer's key with this id, fetching the set when it is missing, stale, or lacks the id.
    private func key(_ kid: String, fetching: Bool) async -> Result<_RSA.Signing.PublicKey?, KeyFetchFailure> {
        let now = clock()
        let cached = Self.cache.withLock { $0[issuer.absoluteString] }
        if !fetching {
            guard let cached else { return .failure(KeyFetchFailure("the issuer's keys could not be fetched before the refresh")) }
            return .success(cached.keys[kid])
        }
        if let cached, now.timeIntervalSince(cached.fetchedAt) < Self.lifetime,
            cached.keys[kid] != nil || now.timeIntervalSince(cached.fetchedAt) < Self.refetchPause
        {
            return .success(cached.keys[kid])
        }
        do {
            let keys = try await fetch()
            Self.cache.withLock { $0[issuer.absoluteString] = KeySet(keys: keys, fetchedAt: now) }
            return .success(keys[kid])
        } catch {
            // Keys fetched before still count while the issuer cannot be reached.
            if let cached, let key = cached.keys[kid] { return .success(key) }
            return .failure(error)
        }
    }

    /// Discovery, then the key set.
    private func fetch() async throws(KeyFetchFailure) -> [String: _RSA.Signing.PublicKey] {
        let discovery = issuer.appendingPathComponent(".well-known/openid-configuration")
        guard let document = try await json(discovery), let address = document["jwks_uri"] as? String, let jwks = URL(string: address) else {
            throw KeyFetchFailure("the issuer's discovery document names no jwks_uri")
        }
        // Keys travel as the issuer's own replies do: over TLS, or in clear to this machine only.
        guard
            jwks.scheme?.lowercased() == "https"
                || (jwks.scheme?.lowercased() == "http" && ["127.0.0.1", "::1", "localhost"].contains(jwks.host?.lowercased() ?? ""))
        else { throw KeyFetchFailure("the issuer's discovery document names a jwks_uri that is not https") }
        guard let keys = Self.keys(fromKeySet: try await body(jwks)) else {
            throw KeyFetchFailure("the issuer's key set (\(Self.shown(jwks))) is not readable")
        }
        return keys
    }

    /// The RSA signing keys of a key set (RFC 7517) by `kid`; `nil` when it is not a key set.
    /// Keys of another type or use, or under 2048 bits, are left out.
    package static func keys(fromKeySet data: Data) -> [String: _RSA.Signing.PublicKey]? {
        guard let set = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any], let entries = set["keys"] as? [[String: Any]] else {
            return nil
        }
        var keys: [String: _RSA.Signing.PublicKey] = [:]
        for entry in entries where entry["kty"] as? String == "RSA" && (entry["use"] as? String).map({ $0 == "sig" }) ?? true {
            guard let kid = entry["kid"] as? String, let n = (entry["n"] as? String).flatMap({ Base64URL.decode(Substring($0)) }),
                let e = (entry["e"] as? String).flatMap({ Base64URL.decode(Substring($0)) }),
                let key = try? _RSA.Signing.PublicKey(n: n, e: e)
            else { continue }
            keys[kid] = key
        }
        return keys
    }

    private func json(_ url: URL) async throws(KeyFetchFailure) -> [String: Any]? {
        let data = try await body(url)
        return (try? JSONSerialization.jsonObject(with: data)) as? [String: Any]
    }

    private func body(_ url: URL) async throws(KeyFetchFailure) -> Data {
        var request = ChappieHTTPRequest(url: url, headers: ["Accept": "application/json"])
        request.totalTimeout = .seconds(10)
        let response: ChappieHTTPResponse
        do {
            response = try await http.execute(request)
        } catch {
            throw KeyFetchFailure("the issuer's keys could not be fetched (\(error))")
        }
        guard response.isSuccess else {
            throw KeyFetchFailure("the issuer's keys could not be fetched (HTTP \(response.status) from \(Self.shown(url)))")
        }
        return response.body
    }

    /// An address as messages show it: scheme, host, port and path; never a query.
    private static func shown(_ url: URL) -> String {
        TerminalText.sanitized("\(url.scheme ?? "")://\(url.host ?? "")\(url.port.map { ":\($0)" } ?? "")\(url.path)")
    }

    private struct KeyFetchFailure: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    private struct KeySet: Sendable {
        var keys: [String: _RSA.Signing.PublicKey]
        var fetchedAt: Date
    }

    /// How long a fetched set is used before it is fetched again.
    private static let lifetime: TimeInterval = 3600
    /// How long after a fetch a token naming an unknown `kid` does not make another.
    private static let refetchPause: TimeInterval = 60
    private static let cache = Mutex<[String: KeySet]>([:])
}

/// A compact JWT taken apart for its signature check.
package struct SignedToken: Sendable {
    /// The header's `kid`.
    package let keyID: String
    private let algorithm: String?
    private let claimedIssuer: String?
    private let signingInput: Data
    private let signature: Data

    /// `nil` when the text is not three base64url parts whose first two are JSON objects.
    package init?(_ jwt: String) {
        let parts = jwt.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let headerBytes = Base64URL.decode(parts[0]), let payloadBytes = Base64URL.decode(parts[1]),
            let signature = Base64URL.decode(parts[2]),
            let header = (try? JSONSerialization.jsonObject(with: headerBytes)) as? [String: Any],
            let payload = (try? JSONSerialization.jsonObject(with: payloadBytes)) as? [String: Any]
        else { return nil }
        keyID = header["kid"] as? String ?? ""
        algorithm = header["alg"] as? String
        claimedIssuer = payload["iss"] as? String
        signingInput = Data(jwt.utf8.prefix(parts[0].utf8.count + 1 + parts[1].utf8.count))
        self.signature = signature
    }

    /// The issuer the token names, when it names one and it is not `issuer`.
    package func issuer(otherThan issuer: URL) -> String? {
        guard let claimedIssuer else { return nil }
        let claimed = URL(string: claimedIssuer)
        return claimed.flatMap(Self.origin) == Self.origin(issuer) ? nil : TerminalText.sanitized(claimedIssuer).prefix(200).description
    }

    /// Why the token cannot be the issuer's whatever its key: not RS256, or another `iss`.
    package func refusal(issuer: URL) -> String? {
        guard algorithm == "RS256" else { return "it is not signed with RS256 (alg \(TerminalText.sanitized(algorithm ?? "none").prefix(20)))" }
        guard let claimedIssuer, let claimed = URL(string: claimedIssuer), Self.origin(claimed) == Self.origin(issuer) else {
            return "it was not issued by \(issuer.absoluteString)"
        }
        return nil
    }

    /// Scheme, host and port (the scheme's default when absent) and the path without a trailing
    /// slash, in lower case but the path: how two spellings of one issuer compare equal.
    private static func origin(_ url: URL) -> String? {
        guard let scheme = url.scheme?.lowercased(), let host = url.host?.lowercased(), url.user == nil, url.query == nil else { return nil }
        let port = url.port ?? (scheme == "https" ? 443 : scheme == "http" ? 80 : -1)
        let path = url.path.hasSuffix("/") ? String(url.path.dropLast()) : url.path
        return "\(scheme)://\(host):\(port)\(path)"
    }

    /// Whether the signature is the key's (RSASSA-PKCS1-v1_5 with SHA-256).
    package func isSigned(by key: _RSA.Signing.PublicKey) -> Bool {
        key.isValidSignature(_RSA.Signing.RSASignature(rawRepresentation: signature), for: signingInput, padding: .insecurePKCS1v1_5)
    }
}
