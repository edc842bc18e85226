import ChappieTestSupport
import Foundation
import Testing

@testable import ChappieService

@Suite("Which Codex session a job wrote: the rollout its processes hold open for writing, and only that")
struct JobSessionTests {
    /// A Codex home with a `sessions/2026/11/26` directory, and two rollouts in it.
    private func home() throws -> (home: URL, mine: URL, other: URL) {
        let home = try TestTokens.temporaryDirectory("chappie-sessions")
        let day = home.appendingPathComponent("sessions/2026/11/26")
        try FileManager.default.createDirectory(at: day, withIntermediateDirectories: true)
        let mine = day.appendingPathComponent("rollout-2026-11-26T10-00-00-0193f0c4-aaaa-7bbb-8ccc-000000000001.jsonl")
        let other = day.appendingPathComponent("rollout-2026-11-26T10-00-01-0193f0c4-aaaa-7bbb-8ccc-000000000002.jsonl")
        for file in [mine, other] { try Data("{}\n".utf8).write(to: file) }
        return (home, mine, other)
    }

    /// Runs `script` under sh until `ready` exists, then asks what it holds open; stops it.
    private func scan(_ script: String, home: URL, known: JobSession.Found? = nil) async throws -> [JobSession.Found] {
        let ready = home.appendingPathComponent("ready")
        // A child of the shell holds the files, so the process tree is walked too. It holds them until
        // stopped (a busy test run may take minutes to look).
        let process = try ChildProcess(URL(fileURLWithPath: "/bin/sh"), ["-c", "sh -c '\(script); touch \(ready.path); sleep 3600'; true"])
        defer {
            for pid in JobSession.descendants(of: process.processIdentifier).reversed() { kill(pid, SIGKILL) }
        }
        for _ in 0..<6000 where !FileManager.default.fileExists(atPath: ready.path) { try await Task.sleep(for: .milliseconds(10)) }
        try #require(FileManager.default.fileExists(atPath: ready.path), "the shell did not start within a minute")
        defer { unlink(ready.path) }
        return JobSession.openRollouts(of: process.processIdentifier, under: home.appendingPathComponent("sessions"), known: known)
    }

    @Test("Held for appending by a child of the job: found, by the id its name ends with")
    func writing() async throws {
        let (home, mine, _) = try home()
        defer { try? FileManager.default.removeItem(at: home) }
        let found = try await scan("exec 3>> \(mine.path)", home: home)
        #expect(found == [JobSession.Found(id: "0193f0c4-aaaa-7bbb-8ccc-000000000001", rollout: mine.path)])
    }

    @Test("Held only for reading (an rg over the sessions): not the job's")
    func reading() async throws {
        let (home, _, other) = try home()
        defer { try? FileManager.default.removeItem(at: home) }
        #expect(try await scan("exec 3< \(other.path)", home: home).isEmpty)
    }

    @Test("Two written at once: both seen, so the watch names none")
    func two() async throws {
        let (home, mine, other) = try home()
        defer { try? FileManager.default.removeItem(at: home) }
        #expect(try await scan("exec 3>> \(mine.path) 4>> \(other.path)", home: home).count == 2)
    }

    @Test("A resumed job's rollout is known wherever its file is, through a link")
    func known() async throws {
        let (home, mine, _) = try home()
        defer { try? FileManager.default.removeItem(at: home) }
        let elsewhere = try TestTokens.temporaryDirectory("chappie-other-home")
        defer { try? FileManager.default.removeItem(at: elsewhere) }
        let link = elsewhere.appendingPathComponent("rollout.jsonl")
        try FileManager.default.createSymbolicLink(at: link, withDestinationURL: mine)
        let known = JobSession.Found(id: "0193f0c4-aaaa-7bbb-8ccc-000000000001", rollout: mine.path)
        #expect(try await scan("exec 3>> \(link.path)", home: elsewhere, known: known) == [known])
    }
}
