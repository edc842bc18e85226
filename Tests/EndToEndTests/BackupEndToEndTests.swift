import ChappieTestSupport
import Foundation
import Testing

@Suite("chappie backup and restore, across stores with different keys", .tags(.slow))
struct BackupEndToEndTests {
    static func entry(_ name: String, in summary: JSONDocument) -> [String: Any]? {
        (summary.array("accounts") as? [[String: Any]])?.first { $0["account"] as? String == name }
    }

    @Test(
        "A round trip adds accounts, settings and usage; newer tokens are never replaced; a name clash is skipped; a wrong passphrase or damaged file changes nothing"
    )
    func roundTrip() async throws {
        let testbed = try await ChappieTestbed.start()
        try await whileRunning(testbed) {
            let other = try TestTokens.temporaryDirectory("chappie-restore")
            let third = try TestTokens.temporaryDirectory("chappie-clash")
            defer {
                try? FileManager.default.removeItem(at: other)
                try? FileManager.default.removeItem(at: third)
            }
            let secret: [String: String?] = [
                "CHAPPIE_BACKUP_PASSPHRASE": "correct horse battery staple", "CHAPPIE_PASSPHRASE": nil, "CHAPPIE_KEY_FILE": nil,
            ]
            func chappie(_ home: URL, _ arguments: [String], _ environment: [String: String?] = secret) async throws -> ProcessResult {
                try await ChappieRunner(home: home, emulator: testbed.emulator)(arguments, environment: environment)
            }
            let source = testbed.home
            #expect(try await chappie(source, ["accounts", "add", "work"]).status == 0)
            #expect(try await chappie(source, ["accounts", "add", "home"]).status == 0)
            #expect(try await chappie(source, ["usage"]).status == 0)
            #expect(try await chappie(source, ["config", "set", "codex-home", "/tmp/codex-of-source"]).status == 0)
            let token = try await chappie(source, ["token", "work"]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)

            let file = other.appendingPathComponent("moved.backup")
            #expect(try await chappie(source, ["backup", source.appendingPathComponent("chappie.sqlite").path]).stderr.contains("chappie's own"))
            let written = try await chappie(source, ["backup", file.path, "--usage", "--json"])
            #expect(written.status == 0, "\(written.stderr)")
            #expect(JSONDocument(Data(written.stdout.utf8)).int("accounts") == 2)
            #expect((JSONDocument(Data(written.stdout.utf8)).int("usageReadings") ?? 0) >= 2)
            #expect(try FileManager.default.attributesOfItem(atPath: file.path)[.posixPermissions] as? Int == 0o600)
            let sealed = try Data(contentsOf: file)
            #expect(sealed.starts(with: Data("chappie-backup 1\n".utf8)))
            #expect(sealed.range(of: Data(token.utf8)) == nil, "no token in clear")
            #expect(sealed.range(of: Data("work".utf8)) == nil, "no account name in clear")

            // A wrong passphrase, or a damaged file, changes nothing.
            var wrong = secret
            wrong["CHAPPIE_BACKUP_PASSPHRASE"] = "wrong"
            let refused = try await chappie(other, ["restore", file.path], wrong)
            #expect(refused.status == 1)
            #expect(refused.stderr.contains("the passphrase is wrong or the file is damaged"))
            var damaged = sealed
            damaged[damaged.count - 5] ^= 0x01
            let damagedFile = other.appendingPathComponent("damaged.chappie")
            try damaged.write(to: damagedFile)
            #expect(try await chappie(other, ["restore", damagedFile.path]).status == 1)
            // A header changed so that it still parses (a space) does not open either: it is bound to the ciphertext.
            var header = sealed
            header.insert(0x20, at: header.firstIndex(of: UInt8(ascii: "{"))! + 1)
            try header.write(to: damagedFile)
            #expect(try await chappie(other, ["restore", damagedFile.path]).stderr.contains("the passphrase is wrong or the file is damaged"))
            try Data("chappie-backup 1\n{not json\n".utf8).write(to: damagedFile)
            #expect(try await chappie(other, ["restore", damagedFile.path]).stderr.contains("header is not readable"))
            #expect(JSONDocument(Data(try await chappie(other, ["accounts", "list", "--json"]).stdout.utf8)).array()?.isEmpty == true)

            // The round trip, into a store with its own key.
            let restored = try await chappie(other, ["restore", file.path, "--json"])
            #expect(restored.status == 0, "\(restored.stderr)")
            let summary = JSONDocument(Data(restored.stdout.utf8))
            #expect(summary.string("accounts", 0, "outcome") == "added")
            #expect(summary.string("accounts", 1, "outcome") == "added")
            // codex-home is the source machine's: left out, and said so.
            #expect(summary.array("settingsApplied")?.isEmpty == true)
            #expect((summary.array("settingsLeftOut")?.first as? String)?.hasPrefix("codex-home (/tmp/codex-of-source)") == true)
            #expect((summary.int("usageReadingsAdded") ?? 0) >= 2)
            #expect(try await chappie(other, ["token", "work"]).stdout.trimmingCharacters(in: .whitespacesAndNewlines) == token)
            #expect(!(try await chappie(other, ["config", "get", "codex-home"]).stdout.contains("/tmp/codex-of-source")))
            #expect(try await chappie(other, ["log", "--json"]).stdout.contains("\"restored\""))
            let keyOfSource = try Data(contentsOf: source.appendingPathComponent("chappie.key"))
            #expect(try Data(contentsOf: other.appendingPathComponent("chappie.key")) != keyOfSource, "two stores, two keys")

            // Newer tokens here are never replaced by the backup's; the same tokens are skipped.
            #expect(try await chappie(other, ["refresh", "work"]).status == 0)
            let again = JSONDocument(Data(try await chappie(other, ["restore", file.path, "--json"]).stdout.utf8))
            #expect(Self.entry("work", in: again)?["outcome"] as? String == "skipped")
            #expect((Self.entry("work", in: again)?["reason"] as? String)?.contains("newer tokens") == true)
            #expect((Self.entry("home", in: again)?["reason"] as? String)?.contains("same tokens") == true)
            #expect(again.int("usageReadingsAdded") == 0, "readings already there are not added twice")

            // Newer tokens in the backup replace older ones.
            #expect(try await chappie(source, ["refresh", "home"]).status == 0)
            let exists = try await chappie(source, ["backup", file.path])
            #expect(exists.status == 1)
            #expect(exists.stderr.contains("pass --force"))
            #expect(try await chappie(source, ["backup", file.path, "--force"]).status == 0)
            let newer = JSONDocument(Data(try await chappie(other, ["restore", file.path, "--json"]).stdout.utf8))
            #expect(Self.entry("home", in: newer)?["outcome"] as? String == "updated")
            #expect(Self.entry("work", in: newer)?["outcome"] as? String == "skipped")
            #expect(try await chappie(other, ["token", "home"]).status == 0)

            // A name taken by another account is reported and skipped.
            #expect(try await chappie(third, ["accounts", "add", "work"]).status == 0)
            let clash = try await chappie(third, ["restore", file.path])
            #expect(clash.status == 0, "\(clash.stderr)")
            #expect(clash.stdout.contains("skipped: work (the name is taken here"))
            #expect(clash.stdout.contains("added: home"))

            // A passphrase file others can read is refused; a private one works.
            let passphraseFile = third.appendingPathComponent("passphrase")
            try Data("correct horse battery staple\n".utf8).write(to: passphraseFile)
            chmod(passphraseFile.path, 0o644)
            let open = try await chappie(third, ["restore", file.path, "--passphrase-file", passphraseFile.path], ["CHAPPIE_BACKUP_PASSPHRASE": nil])
            #expect(open.status == 78, "\(open.stderr)")
            chmod(passphraseFile.path, 0o600)
            let fromFile = try await chappie(
                third, ["restore", file.path, "--passphrase-file", passphraseFile.path], ["CHAPPIE_BACKUP_PASSPHRASE": nil])
            #expect(fromFile.status == 0, "\(fromFile.stderr)")
            // A pipe works as well (`--passphrase-file <(pass show …)`); here a FIFO that a shell writes.
            let fifo = third.appendingPathComponent("passphrase.fifo")
            #expect(mkfifo(fifo.path, 0o600) == 0)
            let writer = try ChildProcess(URL(fileURLWithPath: "/bin/sh"), ["-c", "printf 'correct horse battery staple\\n' > '\(fifo.path)'"])
            let fromPipe = try await chappie(third, ["restore", file.path, "--passphrase-file", fifo.path], ["CHAPPIE_BACKUP_PASSPHRASE": nil])
            #expect(fromPipe.status == 0, "\(fromPipe.stderr)")
            // Had chappie not read it, the writer would wait for a reader: give it one, so it ends.
            if writer.isRunning { try? FileHandle(forReadingAtPath: fifo.path)?.close() }
            await writer.waitUntilExit()
            // A first line longer than 4096 bytes is refused, not cut to another passphrase.
            try Data((String(repeating: "x", count: 5000) + "\n").utf8).write(to: passphraseFile)
            let long = try await chappie(third, ["restore", file.path, "--passphrase-file", passphraseFile.path], ["CHAPPIE_BACKUP_PASSPHRASE": nil])
            #expect(long.status == 78)
            #expect(long.stderr.contains("longer than 4096 bytes"))
            // Without any passphrase and no terminal: a clear refusal.
            let none = try await chappie(third, ["restore", file.path], ["CHAPPIE_BACKUP_PASSPHRASE": nil])
            #expect(none.status != 0)
            #expect(none.stderr.contains("--passphrase-file"))
        }
    }
}
