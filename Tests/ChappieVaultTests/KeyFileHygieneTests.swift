import ChappieTestSupport
import ChappieVault
import Foundation
import Testing

@Suite("Vault hygiene: key files that are links or someone else's, secrets taken out of the environment")
struct KeyFileHygieneTests {
    @Test("A key file reached through a symbolic link is refused, except from systemd's credentials directory")
    func symlinkRefused() throws {
        let folder = try TestTokens.temporaryDirectory("chappie-keyfile")
        defer { try? FileManager.default.removeItem(at: folder) }
        let real = folder.appendingPathComponent("real.key")
        let key = SecretKey.generate()
        try KeyFile.write(key, to: real)
        let link = folder.appendingPathComponent("link.key")
        try FileManager.default.createSymbolicLink(at: link, withDestinationURL: real)
        #expect(throws: VaultError.self) { _ = try KeyFile.read(link) }
        do {
            _ = try KeyFile.read(link)
        } catch {
            #expect(error.message.contains("symbolic link"))
        }
        #expect(try KeyFile.read(link, trustingLocation: true).id == key.id)
        #expect(try KeyFile.read(real).id == key.id)
    }

    @Test("A key file owned by another user is refused, naming the owner")
    func foreignOwnerRefused() throws {
        let folder = try TestTokens.temporaryDirectory("chappie-keyfile")
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("other.key")
        try KeyFile.write(SecretKey.generate(), to: file)
        // Only root can give a file away; as another user the file cannot be made foreign.
        guard geteuid() == 0 else { return }
        #expect(chown(file.path, 65534, 65534) == 0)
        do {
            _ = try KeyFile.read(file)
            Issue.record("a key file owned by uid 65534 was accepted")
        } catch {
            #expect(error.message.contains("belongs to user 65534"))
        }
        #expect(throws: Never.self) { _ = try KeyFile.read(file, trustingLocation: true) }
    }

    @Test("A secret variable is read once into SecretBytes and removed from the environment")
    func secretEnvironment() {
        let name = "CHAPPIE_TEST_SECRET_\(UUID().uuidString.replacingOccurrences(of: "-", with: "_"))"
        setenv(name, "correct horse battery staple", 1)
        let secret = SecretEnvironment.take(name)
        #expect(secret?.constantTimeEquals(SecretBytes(utf8: "correct horse battery staple")) == true)
        #expect(getenv(name) == nil)
        #expect(ProcessInfo.processInfo.environment[name] == nil)
        #expect(SecretEnvironment.take(name) == nil)
        #expect(!"\(secret!)".contains("horse"))
    }
}
