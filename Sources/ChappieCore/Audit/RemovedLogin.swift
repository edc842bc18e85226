/// How a `removed` entry of the audit log names the ChatGPT login it removed: by its ChatGPT
/// account and user ids, which are not secrets. `accounts switch` reads it back to recognise a
/// Codex login chappie wrote for an account removed since, and replaces it without `--force`.
package enum RemovedLogin {
    /// The `removed` entry's detail: `note` (what else happened, such as the revocation), then the login.
    package static func detail(_ info: ChappieAccountInfo, note: String) -> String {
        let login = "login \(marker(info))"
        return note.isEmpty ? login : "\(note); \(login)"
    }

    /// Whether a `removed` entry's detail names this login.
    package static func names(_ info: ChappieAccountInfo, in detail: String) -> Bool {
        guard info.accountID != nil || info.userID != nil else { return false }
        return detail.contains("login \(marker(info))")
    }

    private static func marker(_ info: ChappieAccountInfo) -> String {
        "chatgpt-account=\(info.accountID ?? "-") chatgpt-user=\(info.userID ?? "-")"
    }
}
