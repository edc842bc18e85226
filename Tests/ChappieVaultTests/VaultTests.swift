import ChappieVault
import Foundation
import Testing

@Suite("Vault: sealing, keys, key files and sources")
struct VaultTests {
    private func temporaryDirectory() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("chappie-vault-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        return url
    }

    @Test("Sealed values open with the same key and associated data, and only then")
    func sealAndOpen() throws {
        let key = SecretKey.generate()
        let secret = SecretBytes(utf8: "rt_super_secret_refresh_token")
        let box = SealedBox.seal(secret, key: key, associatedData: "account=1")
        #expect(box.nonce.count == 24)
        #expect(box.ciphertext.count == secret.count + 16)
        #expect(box.ciphertext.range(of: Data("super_secret".utf8)) == nil)
        #expect(try box.open(key: key, associatedData: "account=1").constantTimeEquals(secret))
        #expect(throws: VaultError.self) { try box.open(key: SecretKey.generate(), associatedData: "account=1") }
        #expect(throws: VaultError.self) { try box.open(key: key, associatedData: "account=2") }
        var tampered = box
        tampered.ciphertext[3] ^= 0x01
        #expect(throws: VaultError.self) { try tampered.open(key: key, associatedData: "account=1") }
        var badNonce = box
        badNonce.nonce[0] ^= 0x80
        #expect(throws: VaultError.self) { try badNonce.open(key: key, associatedData: "account=1") }
        #expect(throws: VaultError.self) { try SealedBox(nonce: Data(count: 3), ciphertext: Data(count: 2)).open(key: key, associatedData: "") }
    }

    @Test("Each seal draws a new nonce")
    func freshNonces() {
        let key = SecretKey.generate()
        let secret = SecretBytes(utf8: "same")
        let first = SealedBox.seal(secret, key: key, associatedData: "x")
        let second = SealedBox.seal(secret, key: key, associatedData: "x")
        #expect(first.nonce != second.nonce)
        #expect(first.ciphertext != second.ciphertext)
    }

    @Test("Secret bytes never print their contents; key ids name keys without revealing them")
    func noLeaks() throws {
        let secret = SecretBytes(utf8: "hunter2")
        #expect(!"\(secret)".contains("hunter2"))
        let key = SecretKey.generate()
        #expect(key.id.count == 16)
        #expect(try SecretKey(bytes: key.bytes).id == key.id)
        #expect(SecretKey.generate().id != key.id)
        // Known answer: BLAKE2b-64 of 32 zero bytes (its second byte, 0x0d, needs its leading zero).
        #expect(try SecretKey(bytes: SecretBytes(copying: Data(count: 32))).id == "c50d124a8aaf41a1")
        #expect(throws: VaultError.self) { try SecretKey(bytes: SecretBytes(copying: [1, 2, 3])) }
    }

    @Test("Argon2id gives the same key for the same passphrase and parameters, another for another salt")
    func passphraseKDF() throws {
        let kdf = PassphraseKDF.fresh()
        #expect(kdf.algorithm == "argon2id13")
        #expect(kdf.salt.count == 16)
        let a = try kdf.deriveKey(from: SecretBytes(utf8: "correct horse"))
        let b = try kdf.deriveKey(from: SecretBytes(utf8: "correct horse"))
        #expect(a.id == b.id)
        #expect(try kdf.deriveKey(from: SecretBytes(utf8: "correct horsf")).id != a.id)
        #expect(try PassphraseKDF.fresh().deriveKey(from: SecretBytes(utf8: "correct horse")).id != a.id)
        var broken = kdf
        broken.algorithm = "scrypt"
        #expect(throws: VaultError.self) { try broken.deriveKey(from: SecretBytes(utf8: "x")) }
        let decoded = try JSONDecoder().decode(PassphraseKDF.self, from: JSONEncoder().encode(kdf))
        #expect(decoded == kdf)
    }

    @Test("Key files: written 0600 as base64, read back; raw 32 bytes also accepted")
    func keyFileRoundTrip() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = directory.appendingPathComponent("sub/chappie.key")
        let key = SecretKey.generate()
        try KeyFile.write(key, to: url)
        let attributes = try FileManager.default.attributesOfItem(atPath: url.path)
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
        let parent = try FileManager.default.attributesOfItem(atPath: url.deletingLastPathComponent().path)
        #expect((parent[.posixPermissions] as? NSNumber)?.intValue == 0o700)
        #expect(try KeyFile.read(url).id == key.id)
        let raw = directory.appendingPathComponent("raw.key")
        _ = FileManager.default.createFile(atPath: raw.path, contents: key.bytes.unprotectedData(), attributes: [.posixPermissions: 0o600])
        #expect(try KeyFile.read(raw).id == key.id)
    }

    @Test("A key file others can read is refused with the chmod that fixes it")
    func openKeyFileRefused() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = directory.appendingPathComponent("chappie.key")
        try KeyFile.write(SecretKey.generate(), to: url)
        for mode in [0o644, 0o640, 0o604] {
            chmod(url.path, mode_t(mode))
            do {
                _ = try KeyFile.read(url)
                Issue.record("mode \(String(mode, radix: 8)) was accepted")
            } catch {
                #expect(error.code == .keyFile)
                #expect(error.message.contains("chmod 600 \(url.path)"))
            }
        }
    }

    @Test("Missing and malformed key files get clear errors", arguments: ["", "not base64!", "c2hvcnQ=", String(repeating: "A", count: 100)])
    func badKeyFiles(_ contents: String) throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = directory.appendingPathComponent("chappie.key")
        _ = FileManager.default.createFile(atPath: url.path, contents: Data(contents.utf8), attributes: [.posixPermissions: 0o600])
        #expect(throws: VaultError.self) { try KeyFile.read(url) }
        #expect(throws: VaultError.self) { try KeyFile.read(directory.appendingPathComponent("missing.key")) }
    }

    @Test("Key sources are chosen in the documented order")
    func sourceOrder() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        _ = FileManager.default.createFile(atPath: directory.appendingPathComponent("chappie.key").path, contents: Data())
        let fallback = URL(fileURLWithPath: "/nowhere/chappie.key")
        func choose(_ flag: String?, _ environment: [String: String], prompt: Bool = false, prefer: Bool = false) -> KeySource {
            KeySource.choose(keyFile: flag, environment: environment, defaultKeyFile: fallback, canPrompt: prompt, preferPassphrase: prefer)
        }
        let all = ["CHAPPIE_KEY_FILE": "/env.key", "CREDENTIALS_DIRECTORY": directory.path, "CHAPPIE_PASSPHRASE": "p"]
        #expect(choose("/flag.key", all) == .keyFile(URL(fileURLWithPath: "/flag.key")))
        #expect(choose(nil, all) == .keyFile(URL(fileURLWithPath: "/env.key")))
        var rest = all
        rest["CHAPPIE_KEY_FILE"] = nil
        #expect(choose(nil, rest) == .systemdCredential(directory.appendingPathComponent("chappie.key")))
        rest["CREDENTIALS_DIRECTORY"] = "/no/such/dir"
        #expect(choose(nil, rest) == .passphrase(fromEnvironment: true))
        #expect(choose(nil, [:]) == .defaultKeyFile(fallback))
        #expect(choose(nil, [:], prompt: true, prefer: true) == .passphrase(fromEnvironment: false))
        #expect(choose(nil, [:], prompt: false, prefer: true) == .defaultKeyFile(fallback))
    }
}
