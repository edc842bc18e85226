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
}
