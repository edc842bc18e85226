import ChappieTestSupport
import Foundation
import Testing

@Suite("Messages say what happened in plain words, name the account and what to do; status notes go stale", .tags(.slow))
struct MessagesEndToEndTests {
    /// Words of libraries and system calls no message may show.
    static let internals = ["errno", "bind(", "Couldn't connect", "descriptor:", "NIOCore", "IOError", "NAME"]

    static func expectPlain(_ text: String, sourceLocation: SourceLocation = #_sourceLocation) {
        for word in internals { #expect(!text.contains(word), "\(word) in: \(text)", sourceLocation: sourceLocation) }
    }

    @Test("The issuer down: refresh says it could not connect, that to try again, and how long the current token serves; sign-in says it too")
    func serviceDown() async throws {
        let testbed = try await ChappieTestbed.start()
        try await whileRunning(testbed) {
            #expect(try await testbed.chappie(["accounts", "add", "work"]).status == 0)
            // The service goes away.
            await testbed.emulator.stop()
            let closed = try #require(URL(string: testbed.emulator.issuer)?.port)
            // Held at once, where it can be, so that another test's emulator does not answer on it.
            holdLoopbackPort(closed)
            let refresh = try await testbed.chappie(["refresh", "work"])
            #expect(refresh.status == 75)
            #expect(refresh.stderr.contains("work: FAILED: "), "\(refresh.stderr)")
            #expect(refresh.stderr.contains("could not connect to 127.0.0.1 port \(closed): nothing answered"), "\(refresh.stderr)")
            #expect(refresh.stderr.contains("Try again later. Its current token stays valid until"), "\(refresh.stderr)")
            Self.expectPlain(refresh.stderr)

            let signIn = try await testbed.chappie(["accounts", "add", "home"])
            #expect(signIn.status == 75)
            #expect(signIn.stderr.contains("could not connect to 127.0.0.1 port \(closed)"), "\(signIn.stderr)")
            Self.expectPlain(signIn.stderr)
        }
    }

    @Test("--http on a port another program holds: one plain sentence, exit 1")
    func portInUse() async throws {
        let testbed = try await ChappieTestbed.start()
        try await whileRunning(testbed) {
            // The emulator's own port is one another program listens on.
            let port = try #require(URL(string: testbed.emulator.issuer)?.port)
            let daemon = try await testbed.chappie(["daemon", "--http", "127.0.0.1:\(port)"])
            #expect(daemon.status != 0)
            #expect(
                daemon.stderr.contains("--http: cannot listen on 127.0.0.1 port \(port): another program listens there; choose another port"),
                "\(daemon.stderr)")
            Self.expectPlain(daemon.stderr)
        }
    }

    @Test("status drops a poll's failure note once a later poll of the account works, and cuts a long note at a word")
    func staleNotes() async throws {
        let testbed = try await ChappieTestbed.start()
        try await whileRunning(testbed) {
            #expect(try await testbed.chappie(["accounts", "add", "work"]).status == 0)
            _ = try await testbed.control(
                "/_emulator/faults", method: "POST", body: #"{"kind":"status","status":503,"path":"/backend-api/wham/usage"}"#)
            #expect(try await testbed.chappie(["usage", "poll", "work"]).status == 75)
            let failing = try await testbed.chappie(["status"])
            let line = try #require(failing.stdout.split(separator: "\n").first { $0.contains("work") })
            #expect(line.contains("usage poll failed"), "\(failing.stdout)")
            // A narrow terminal: the note is cut at a word, marked, and the line fits.
            let narrow = try await testbed.chappie(["status"], environment: ["COLUMNS": "60"])
            let cut = try #require(narrow.stdout.split(separator: "\n").first { $0.contains("work") })
            #expect(cut.count <= 60 && cut.hasSuffix("…"), "\(cut)")
            #expect(cut.dropLast().last?.isLetter == true, "cut after a word: \(cut)")
            #expect(try await testbed.chappie(["usage", "poll", "work"]).status == 0)
            let fine = try await testbed.chappie(["status"])
            #expect(!fine.stdout.contains("usage poll failed"), "\(fine.stdout)")
        }
    }
}
