import ChappieText

/// `chappie accounts current` when no name, `$CHAPPIE_ACCOUNT` or directory binding chooses: the
/// active account's name, from the store read as the full binary opens it (``OpenedStore``: the
/// key checked, so that a store the full binary could not open is its to explain).
struct ActiveAccount {
    let directory: DataDirectory

    /// The name; `nil` when the full binary must answer: no active account, a store to hand on, or
    /// a row the full binary would not decode as it is (it reads the whole row).
    func name() -> String? {
        guard let store = OpenedStore(directory), !store.hasMoves, let id = store.activeID,
            let row = store.database.rows(
                "SELECT name, uuid, status, email, plan, access_expires_at, codex_home, reserve_percent FROM accounts WHERE id = ?",
                [.integer(id)])?.first,
            let name = row[0].text, FrontRequest.isAccountName(name), let uuid = row[1].text, UUIDText.isUUID(uuid, lowercaseOnly: true),
            let status = row[2].text, ["ok", "reauth_required", "disabled"].contains(status), row[3].optionalText != nil,
            row[4].optionalText != nil, let expires = row[5].optionalText, expires.map({ AccountsTable.databaseTime($0) != nil }) ?? true,
            row[6].optionalText != nil
        else { return nil }
        switch row[7] {
        case .null, .integer, .real: return name
        default: return nil
        }
    }
}
