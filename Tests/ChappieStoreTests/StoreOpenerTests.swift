import ChappieCore
import ChappieStore
import ChappieTestSupport
import ChappieVault
import Foundation
import Testing

@Suite("Opening the store with the key from its source, and rotating it")
struct StoreOpenerTests {
    private func addAccount(_ store: any AccountStore, marker: String) async throws {
        _ = try await store.save(
            info: ChappieAccountInfo(email: "\(marker)@example.com", userID: "u-\(marker)", accountID: "a-\(marker)", plan: .pro),
            credentials: Credentials(idToken: "id", accessToken: "access-\(marker)", refreshToken: "refresh-\(marker)"),
            accessTokenExpiresAt: nil, refreshedAt: nil, name: nil, event: .imported)
    }

    @Test("A new store gets a 0600 default key file; later opens use it")
    func defaultKeyFile() async throws {
        let home = try TestTokens.temporaryDirectory("chappie-open")
        defer { try? FileManager.default.removeItem(at: home) }
        let options = StoreOptions(home: home.path, environment: [:])
        let first = try await StoreOpener.open(options)
        #expect(first.source == .defaultKeyFile(home.appendingPathComponent("chappie.key")))
        try await addAccount(first.store, marker: "k")
        let keyFile = home.appendingPathComponent("chappie.key")
        #expect((try FileManager.default.attributesOfItem(atPath: keyFile.path)[.posixPermissions] as? NSNumber)?.intValue == 0o600)
        let second = try await StoreOpener.open(options)
        #expect(second.store.key.id == first.store.key.id)
        // Without the key file the store is not silently given a new key.
        try FileManager.default.removeItem(at: keyFile)
        await #expect { _ = try await StoreOpener.open(options) } throws: { error in
            (error as? StoreError)?.code == .missingKey
        }
        #expect(!FileManager.default.fileExists(atPath: keyFile.path))
    }

    @Test("Without --home the data and the key live in the XDG directories")
    func xdgLocations() async throws {
        let root = try TestTokens.temporaryDirectory("chappie-xdg")
        defer { try? FileManager.default.removeItem(at: root) }
        let environment = [
            "HOME": root.path, "XDG_DATA_HOME": root.appendingPathComponent("data").path,
            "XDG_CONFIG_HOME": root.appendingPathComponent("config").path,
        ]
        let opened = try await StoreOpener.open(StoreOptions(environment: environment))
        #expect(opened.local!.location.directory.path == root.appendingPathComponent("data/chappie").path)
        #expect(FileManager.default.fileExists(atPath: root.appendingPathComponent("config/chappie/chappie.key").path))
    }

    @Test("A passphrase store opens with the same passphrase only")
    func passphrase() async throws {
        let home = try TestTokens.temporaryDirectory("chappie-pass")
        defer { try? FileManager.default.removeItem(at: home) }
        let created = try await StoreOpener.open(StoreOptions(home: home.path, environment: ["CHAPPIE_PASSPHRASE": "correct horse"]))
        #expect(created.source == .passphrase(fromEnvironment: true))
        try await addAccount(created.store, marker: "p")
        #expect(!FileManager.default.fileExists(atPath: home.appendingPathComponent("chappie.key").path))
        let again = try await StoreOpener.open(StoreOptions(home: home.path, environment: ["CHAPPIE_PASSPHRASE": "correct horse"]))
        #expect(again.store.key.id == created.store.key.id)
        await #expect { _ = try await StoreOpener.open(StoreOptions(home: home.path, environment: ["CHAPPIE_PASSPHRASE": "wrong horse"])) } throws: {
            error in
            (error as? StoreError)?.code == .wrongKey
        }
        // No passphrase and no terminal: a clear configuration error, and no key file is created.
        await #expect { _ = try await StoreOpener.open(StoreOptions(home: home.path, environment: [:])) } throws: { error in
            (error as? VaultError)?.code == .passphraseUnavailable
        }
        #expect(!FileManager.default.fileExists(atPath: home.appendingPathComponent("chappie.key").path))
    }

    @Test("A key-file store refuses a passphrase, and another key file")
    func wrongSource() async throws {
        let home = try TestTokens.temporaryDirectory("chappie-src")
        defer { try? FileManager.default.removeItem(at: home) }
        try await addAccount(try await StoreOpener.open(StoreOptions(home: home.path, environment: [:])).local!, marker: "s")
        await #expect { _ = try await StoreOpener.open(StoreOptions(home: home.path, environment: ["CHAPPIE_PASSPHRASE": "x"])) } throws: { error in
            (error as? StoreError)?.code == .wrongKey
        }
        let other = home.appendingPathComponent("other.key")
        try KeyFile.write(SecretKey.generate(), to: other)
        await #expect { _ = try await StoreOpener.open(StoreOptions(home: home.path, keyFile: other.path, environment: [:])) } throws: { error in
            (error as? StoreError)?.code == .wrongKey
        }
    }

    @Test("Rotation with a key file: the new key is in place and opens everything")
    func rotateKeyFile() async throws {
        let home = try TestTokens.temporaryDirectory("chappie-rot")
        defer { try? FileManager.default.removeItem(at: home) }
        let options = StoreOptions(home: home.path, environment: [:])
        let opened = try await StoreOpener.open(options)
        for index in 0..<3 { try await addAccount(opened.local!, marker: "r\(index)") }
        let outcome = try await KeyRotation.rotate(opened, options: options)
        #expect(outcome.oldKeyID != outcome.newKeyID)
        #expect(!FileManager.default.fileExists(atPath: home.appendingPathComponent("chappie.key.new").path))
        let reopened = try await StoreOpener.open(options)
        #expect(reopened.local!.key.id == outcome.newKeyID)
        var refreshTokens: [String] = []
        for account in try await reopened.local!.accounts() { refreshTokens.append(try await reopened.local!.credentials(for: account).refreshToken) }
        #expect(refreshTokens.sorted() == ["refresh-r0", "refresh-r1", "refresh-r2"])
    }

    @Test("Rotation with a passphrase uses CHAPPIE_NEW_PASSPHRASE")
    func rotatePassphrase() async throws {
        let home = try TestTokens.temporaryDirectory("chappie-rotp")
        defer { try? FileManager.default.removeItem(at: home) }
        let options = StoreOptions(home: home.path, environment: ["CHAPPIE_PASSPHRASE": "old one", "CHAPPIE_NEW_PASSPHRASE": "new one"])
        let opened = try await StoreOpener.open(options)
        try await addAccount(opened.local!, marker: "pp")
        _ = try await KeyRotation.rotate(opened, options: options)
        let reopened = try await StoreOpener.open(StoreOptions(home: home.path, environment: ["CHAPPIE_PASSPHRASE": "new one"]))
        #expect(try await reopened.local!.credentials(for: try await reopened.local!.account(named: AccountName("pp"))).refreshToken == "refresh-pp")
        await #expect(throws: (any Error).self) {
            try await StoreOpener.open(StoreOptions(home: home.path, environment: ["CHAPPIE_PASSPHRASE": "old one"]))
        }
    }

    @Test("A crash after the commit but before the rename: the next open finishes the swap")
    func crashAfterCommit() async throws {
        let home = try TestTokens.temporaryDirectory("chappie-crash1")
        defer { try? FileManager.default.removeItem(at: home) }
        let options = StoreOptions(home: home.path, environment: [:])
        let opened = try await StoreOpener.open(options)
        try await addAccount(opened.local!, marker: "c1")
        let keyFile = home.appendingPathComponent("chappie.key")
        let newKey = SecretKey.generate()
        try KeyFile.write(newKey, to: KeyRotation.pendingURL(for: keyFile))
        _ = try await opened.local!.rotateKey(to: newKey, passphraseKDF: nil)
        // (the process dies here, before renaming chappie.key.new)
        let reopened = try await StoreOpener.open(options)
        #expect(reopened.local!.key.id == newKey.id)
        #expect(try KeyFile.read(keyFile).id == newKey.id)
        #expect(!FileManager.default.fileExists(atPath: KeyRotation.pendingURL(for: keyFile).path))
        #expect(try await reopened.local!.credentials(for: try await reopened.local!.account(named: AccountName("c1"))).refreshToken == "refresh-c1")
    }

    @Test("A crash before the commit: the old key stays, the unused new key is discarded")
    func crashBeforeCommit() async throws {
        let home = try TestTokens.temporaryDirectory("chappie-crash2")
        defer { try? FileManager.default.removeItem(at: home) }
        let options = StoreOptions(home: home.path, environment: [:])
        let opened = try await StoreOpener.open(options)
        try await addAccount(opened.local!, marker: "c2")
        let keyFile = home.appendingPathComponent("chappie.key")
        try KeyFile.write(SecretKey.generate(), to: KeyRotation.pendingURL(for: keyFile))
        let reopened = try await StoreOpener.open(options)
        #expect(reopened.local!.key.id == opened.local!.key.id)
        #expect(!FileManager.default.fileExists(atPath: KeyRotation.pendingURL(for: keyFile).path))
    }

    @Test("Rotation is refused for a systemd credential, which chappie cannot rewrite")
    func systemdCredential() async throws {
        let home = try TestTokens.temporaryDirectory("chappie-sd")
        let credentials = try TestTokens.temporaryDirectory("chappie-creds")
        defer {
            try? FileManager.default.removeItem(at: home)
            try? FileManager.default.removeItem(at: credentials)
        }
        try KeyFile.write(SecretKey.generate(), to: credentials.appendingPathComponent("chappie.key"))
        let options = StoreOptions(home: home.path, environment: ["CREDENTIALS_DIRECTORY": credentials.path])
        let opened = try await StoreOpener.open(options)
        #expect(opened.source == .systemdCredential(credentials.appendingPathComponent("chappie.key")))
        await #expect { _ = try await KeyRotation.rotate(opened, options: options) } throws: { error in
            (error as? VaultError)?.code == .keyFile
        }
    }
}
