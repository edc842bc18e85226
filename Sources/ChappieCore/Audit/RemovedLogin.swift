/// How a `removed` entry of the audit log names the ChatGPT login it removed: by its ChatGPT
/// account and user ids, which are not secrets. `accounts switch` reads it back to recognise a
/// Codex login chappie wrote for an account removed since, and replaces it without `--force`.
package enum RemovedLogin {
    /// The `removed` entry's detail: `note` (what else happened, such as the revocation), then the login.
    package static func detail(_ info: ChappieAccountInfo, note: String) -> String {
        let login = "login \(marker(info))"
        return note.isEmpty ? login : "\(note); \(login)"
    }

    /// Whether a `removed` entry's detail names this login (its end: an id that only begins with
    /// the login's is another; a team pool adds the machine after it, in parentheses).
    package static func names(_ info: ChappieAccountInfo, in detail: String) -> Bool {
        guard info.accountID != nil || info.userID != nil else { return false }
        let login = "login \(marker(info))"
        return detail.hasSuffix(login) || detail.contains(login + " (on ")
    }

    private static func marker(_ info: ChappieAccountInfo) -> String {
        "chatgpt-account=\(info.accountID ?? "-") chatgpt-user=\(info.userID ?? "-")"
    }
}
