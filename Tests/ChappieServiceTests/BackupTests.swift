import ChappieService
import ChappieStore
import ChappieTestSupport
import ChappieVault
import Foundation
import Testing

@Suite("Backup files whose contents are not usable")
struct BackupTests {
    /// A backup sealed under "pass" from a JSON payload, as another (or a damaged) chappie might write it.
    private func sealedBackup(accounts: [[String: Any]], in directory: URL) throws -> URL {
        let payload: [String: Any] = [
            "version": 1, "createdAt": "2026-11-23T00:00:00Z", "chappieVersion": "test", "accounts": accounts, "settings": [:],
        ]
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        let decoded = try decoder.decode(BackupFile.Payload.self, from: JSONSerialization.data(withJSONObject: payload))
        let file = directory.appendingPathComponent("odd.backup")
        try BackupFile.seal(decoded, passphrase: .init(utf8: "pass")).write(to: file)
        return file
    }

    private func entry(name: String, idToken: String) -> [String: Any] {
        ["name": name, "idToken": idToken, "accessToken": "at", "refreshToken": "rt", "createdAt": "2026-11-23T00:00:00Z"]
    }

    @Test(
        "An odd account name or an id_token that is not a JWT is refused before anything is written",
        arguments: [
            ("../evil", TestTokens.idToken(email: "a@example.com", accountID: "acct-a", userID: "user-a")),
            ("fine", "not-a-jwt"),
        ])
    func unusableEntry(name: String, idToken: String) async throws {
        let home = try TestTokens.temporaryDirectory("chappie-backup")
        defer { try? FileManager.default.removeItem(at: home) }
        let opened = try await StoreOpener.open(StoreOptions(home: home.path, environment: ["HOME": home.path]))
        let services = BackupService(store: opened.local!, signatures: .offline)
        let good = entry(name: "good", idToken: TestTokens.idToken(email: "g@example.com", accountID: "acct-g", userID: "user-g"))
        let file = try sealedBackup(accounts: [good, entry(name: name, idToken: idToken)], in: home)
        let passphrase = home.appendingPathComponent("passphrase")
        try Data("pass\n".utf8).write(to: passphrase)
        chmod(passphrase.path, 0o600)

        await #expect { _ = try await services.restore(from: file, passphrase: .init(file: passphrase)) } throws: { error in
            (error as? ServiceError)?.message.contains("not usable. Nothing was changed") == true
        }
        #expect(try await opened.local!.accounts().isEmpty, "the good entry before it was not written either")
    }
}
