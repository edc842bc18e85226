package import ChappieCore
import ChappieStore
import ChappieVault
package import Foundation

/// The Codex CLI's `auth.json` (docs/protocol.md §5): read to import an account, written to make
/// Codex use one. Prints redacted.
package struct CodexAuthFile: Sendable, RedactedDescription {
    /// Who the account is, from the id_token (falling back to `tokens.account_id` for the account id).
    package var info: ChappieAccountInfo
    /// The tokens.
    package var credentials: Credentials
    /// The access token's `exp`, when it is a readable JWT.
    package var accessTokenExpiresAt: Date?
    /// `last_refresh`, when present.
    package var lastRefresh: Date?

    /// Who it is and when, never the tokens.
    package var redactedFields: KeyValuePairs<String, String> {
        [
            "email": info.email ?? "nil", "accountID": info.accountID ?? "nil", "credentials": redactedMarker,
            "accessTokenExpiresAt": accessTokenExpiresAt.map { "\($0)" } ?? "nil", "lastRefresh": lastRefresh.map { "\($0)" } ?? "nil",
        ]
    }

    /// Whether this file holds `account`'s login: the same ChatGPT account (`tokens.account_id`)
    /// and, when chappie knows the account's user, the same user (the id_token's user id: members
    /// of one Team workspace share the account id); an account known only by e-mail matches on the
    /// e-mail.
    package func belongs(to account: Account) -> Bool {
        if let accountID = account.info.accountID {
            guard info.accountID == accountID else { return false }
            if let ours = account.info.userID { return info.userID == ours }
            return true
        }
        guard info.accountID == nil, let email = account.info.email else { return false }
        return info.email == email
    }

    /// Whether these tokens are newer than `current`, the stored tokens of `account` (the same
    /// login): a different refresh token whose access token expires later, or on a tie whose
    /// `last_refresh` is after the account's last refresh. Older tokens hold a refresh token that was
    /// already redeemed.
    package func isNewer(than current: Credentials, of account: Account) -> Bool {
        guard credentials.refreshToken != current.refreshToken else { return false }
        let theirs = accessTokenExpiresAt ?? .distantPast
        let ours = current.accessTokenExpiresAt ?? .distantPast
        if theirs != ours { return theirs > ours }
        guard let written = lastRefresh else { return false }
        return written > (account.lastRefreshAt ?? .distantPast)
    }

    /// `$CODEX_HOME`, else `~/.codex`.
    package static func defaultHome(environment: [String: String]) -> URL {
        if let home = environment["CODEX_HOME"], !home.isEmpty { return URL(fileURLWithPath: (home as NSString).expandingTildeInPath) }
        let user = environment["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? NSHomeDirectory()
        return URL(fileURLWithPath: user).appendingPathComponent(".codex")
    }

    /// Reads and checks an `auth.json`.
    ///
    /// - Throws: ``ServiceError`` `.invalidInput` saying what is wrong (missing file, not JSON, an API-key
    ///   login, an id_token that is not a JWT, a missing token). The message never holds a token.
    package static func read(_ url: URL) throws(ServiceError) -> CodexAuthFile {
        guard let data = FileManager.default.contents(atPath: url.path) else {
            throw ServiceError(.invalidInput, "cannot read \(url.path): no such file, or not readable")
        }
        return try parse(data, from: url)
    }

    /// Checks the contents of an `auth.json` read from `url` (named in the errors).
    package static func parse(_ data: Data, from url: URL) throws(ServiceError) -> CodexAuthFile {
        guard let object = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] else {
            throw ServiceError(.invalidInput, "\(url.path) is not a JSON object, so it is not a Codex auth.json")
        }
        guard let tokens = object["tokens"] as? [String: Any] else {
            let apiKey = object["OPENAI_API_KEY"] is String
            throw ServiceError(
                .invalidInput,
                apiKey
                    ? "\(url.path) holds an API-key login, not ChatGPT tokens; sign Codex in with ChatGPT first"
                    : "\(url.path) has no \"tokens\" object: it is not a ChatGPT login")
        }
        func token(_ name: String) throws(ServiceError) -> String {
            guard let value = tokens[name] as? String, !value.isEmpty else {
                throw ServiceError(.invalidInput, "\(url.path) has no tokens.\(name); nothing was stored")
            }
            return value
        }
        let credentials = Credentials(
            idToken: try token("id_token"), accessToken: try token("access_token"), refreshToken: try token("refresh_token"))
        let claims: TokenClaims
        do {
            claims = try TokenClaims(jwt: credentials.idToken)
        } catch {
            throw ServiceError(.invalidInput, "\(url.path): tokens.id_token is \(error); nothing was stored")
        }
        var info = claims.account
        if info.accountID == nil { info.accountID = tokens["account_id"] as? String }
        return CodexAuthFile(
            info: info, credentials: credentials,
            accessTokenExpiresAt: credentials.accessTokenExpiresAt,
            lastRefresh: (object["last_refresh"] as? String).flatMap(WireNumber.date(iso8601:)))
    }

    /// Writes `auth.json` in a Codex home the way Codex writes it, keeping every field chappie does
    /// not set from an existing file; atomically (a 0600 temporary file, synced, renamed).
    ///
    /// - Parameters:
    ///   - credentials: The tokens to write.
    ///   - accountID: `tokens.account_id`.
    ///   - home: The Codex home (created 0700 if missing).
    ///   - now: `last_refresh`.
    /// - Returns: The file written.
    @discardableResult
    package static func write(_ credentials: Credentials, accountID: String?, to home: URL, now: Date = Date()) throws(ServiceError) -> URL {
        let url = home.appendingPathComponent("auth.json")
        do {
            try FileManager.default.createDirectory(at: home, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            throw ServiceError(.invalidInput, "cannot create the Codex home \(home.path)")
        }
        var object: [String: Any] = [:]
        if let data = FileManager.default.contents(atPath: url.path),
            let existing = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any]
        {
            object = existing
        }
        var tokens = object["tokens"] as? [String: Any] ?? [:]
        tokens["id_token"] = credentials.idToken
        tokens["access_token"] = credentials.accessToken
        tokens["refresh_token"] = credentials.refreshToken
        tokens["account_id"] = accountID ?? NSNull()
        object["tokens"] = tokens
        object["auth_mode"] = "chatgpt"
        if object["OPENAI_API_KEY"] == nil { object["OPENAI_API_KEY"] = NSNull() }
        object["last_refresh"] = formatRFC3339(now)
        guard var data = try? JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]) else {
            throw ServiceError(.invalidInput, "cannot encode \(url.path)")
        }
        data.append(0x0A)
        defer { data.zeroize() }
        do {
            try PrivateFile.write(SecretBytes(copying: data), to: url)
        } catch {
            throw ServiceError(.invalidInput, error.message)
        }
        return url
    }

    /// RFC 3339 in UTC with microseconds, as Codex writes `last_refresh`.
    static func formatRFC3339(_ date: Date) -> String {
        let seconds = date.timeIntervalSince1970
        let whole = floor(seconds)
        let micros = Int(((seconds - whole) * 1_000_000).rounded(.down))
        var time = time_t(whole)
        var parts = tm()
        gmtime_r(&time, &parts)
        return String(
            format: "%04d-%02d-%02dT%02d:%02d:%02d.%06dZ", parts.tm_year + 1900, parts.tm_mon + 1, parts.tm_mday,
            parts.tm_hour, parts.tm_min, parts.tm_sec, micros)
    }
}
