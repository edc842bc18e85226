import ChappieSystem
import Glibc

/// A Codex home's `auth.json`, as far as the front binary looks at it: whether it may hold tokens
/// other than the store's, which the full binary then compares and may adopt.
struct CodexLogin {
    let home: String

    /// `true` unless the file is absent or holds the same refresh token as `refreshToken`.
    func mayHoldOtherTokens(than refreshToken: String) -> Bool {
        let file = home + "/auth.json"
        var info = stat()
        guard lstat(file, &info) == 0 else { return errno != ENOENT }
        guard info.st_mode & S_IFMT == S_IFREG, let bytes = DataDirectory.contents(of: file, limit: 1 << 20),
            let stored = JSONValue.parse(bytes)?["tokens"]?["refresh_token"]?.string
        else { return true }
        return stored != refreshToken
    }
}
