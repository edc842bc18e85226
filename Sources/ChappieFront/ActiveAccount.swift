/// `chappie accounts current` when no name, `$CHAPPIE_ACCOUNT` or directory binding chooses: the
/// active account's name, from the store read as the full binary opens it (``OpenedStore``: the
/// key checked, so that a store the full binary could not open is its to explain).
struct ActiveAccount {
    let directory: DataDirectory

    /// The name; `nil` when the full binary must answer: no active account, a store to hand on, or
    /// a row the full binary would not decode as it is (it reads the whole row, ``AccountRow``).
    func name() -> String? {
        guard let store = OpenedStore(directory), !store.hasMoves, let id = store.activeID,
            let row = store.database.rows("SELECT \(AccountRow.columns) FROM accounts WHERE id = ?", [.integer(id)])?.first
        else { return nil }
        return AccountRow(row)?.name
    }
}
