import ChappieCore
import ChappieService
import ChappieTestSupport
import Foundation
import Testing

@Suite("AccountBinding: the nearest .chappie-account, and the ones another user could change")
struct AccountBindingTests {
    private func tree() throws -> (root: URL, below: URL) {
        let root = try TestTokens.temporaryDirectory("chappie-binding")
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: root.path)
        let below = root.appendingPathComponent("a/b")
        try FileManager.default.createDirectory(at: below, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
        return (root, below)
    }

    private func bind(_ text: String, in directory: URL, mode: Int = 0o644) throws -> URL {
        let file = directory.appendingPathComponent(AccountBinding.fileName)
        try Data(text.utf8).write(to: file)
        try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: file.path)
        return file
    }

    @Test("The nearest file from the directory up wins; none is no binding")
    func nearest() throws {
        let (root, below) = try tree()
        defer { try? FileManager.default.removeItem(at: root) }
        #expect(AccountBinding.nearest(from: below).binding == nil)
        let outer = try bind("outer\n", in: root)
        let inner = try bind("  inner  \n", in: root.appendingPathComponent("a"))
        let found = try #require(try AccountBinding.nearest(from: below).binding?.get())
        #expect(found.name.rawValue == "inner")
        #expect(found.file == inner)
        try FileManager.default.removeItem(at: inner)
        #expect(try AccountBinding.nearest(from: below).binding?.get().file == outer)
    }

    @Test("Passed over with a warning: another user's file, one others can write, one in a directory others can write, a link, a FIFO")
    func untrusted() throws {
        let (root, below) = try tree()
        defer { try? FileManager.default.removeItem(at: root) }
        let fallback = try bind("fallback\n", in: root)
        let directory = root.appendingPathComponent("a")
        func passedOver(_ needle: String) throws {
            let search = AccountBinding.nearest(from: below)
            #expect(try search.binding?.get().file == fallback)
            #expect(search.warnings.contains { $0.contains(needle) }, "\(search.warnings)")
        }
        let file = try bind("near\n", in: directory, mode: 0o666)
        try passedOver("can be written by other users")
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: file.path)
        // Another user's (uid 1): chown works here as the tests run as root; skipped otherwise.
        if getuid() == 0 {
            #expect(chown(file.path, 1, 1) == 0)
            try passedOver("belongs to another user")
            #expect(chown(file.path, 0, 0) == 0)
        }
        try FileManager.default.setAttributes([.posixPermissions: 0o777], ofItemAtPath: directory.path)
        try passedOver("in a directory other users can write")
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: directory.path)
        try FileManager.default.removeItem(at: file)
        try FileManager.default.createSymbolicLink(at: file, withDestinationURL: fallback)
        try passedOver("symbolic link")
        try FileManager.default.removeItem(at: file)
        #expect(mkfifo(file.path, 0o644) == 0)
        try passedOver("not a regular file")
    }

    @Test(
        "No working directory (removed, too deep) binds nothing; a byte-order mark is no part of a name; bind sets the mode before the file is in place"
    )
    func edges() throws {
        #expect(AccountBinding.nearest(from: URL(fileURLWithPath: "")).binding == nil)
        let (root, below) = try tree()
        defer { try? FileManager.default.removeItem(at: root) }
        _ = try bind("\u{FEFF}work\r\n", in: root)
        #expect(try AccountBinding.nearest(from: below).binding?.get().name.rawValue == "work")
        let written = try AccountBinding.write(try AccountName("home"), in: below)
        #expect((try FileManager.default.attributesOfItem(atPath: written.path)[.posixPermissions] as? Int) == 0o644)
        #expect(try String(contentsOf: written, encoding: .utf8) == "home\n")
        // Only the file itself is left behind.
        #expect(try FileManager.default.contentsOfDirectory(atPath: below.path) == [AccountBinding.fileName])
    }

    @Test("A file that holds no name, or too much, is an error naming it")
    func notAName() throws {
        let (root, below) = try tree()
        defer { try? FileManager.default.removeItem(at: root) }
        let file = try bind("not a name!\n", in: root)
        guard case .failure(.notAName(let named, _))? = AccountBinding.nearest(from: below).binding else {
            Issue.record("no error")
            return
        }
        #expect(named == file)
        _ = try bind(String(repeating: "a", count: 300), in: root)
        guard case .failure(.notAName)? = AccountBinding.nearest(from: below).binding else {
            Issue.record("a 300-byte file was read as a name")
            return
        }
    }
}
