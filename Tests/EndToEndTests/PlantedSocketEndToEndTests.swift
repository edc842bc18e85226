import ChappieTestSupport
import Foundation
import Testing

/// Another user's server where chappie looks for its daemon is never believed (issue 40, item 1),
/// by the front binary and the full one alike.
@Suite("A socket another user planted is never trusted", .tags(.slow))
struct PlantedSocketEndToEndTests {
    /// A server that answers every request with the reply given, for at most ten minutes. Its
    /// socket takes its name only once it listens: a connection before then would find nobody.
    static let plantedServer = """
        import os, socket, sys
        server = socket.socket(socket.AF_UNIX)
        server.bind(sys.argv[1] + ".tmp")
        server.listen(8)
        os.rename(sys.argv[1] + ".tmp", sys.argv[1])
        server.settimeout(600)
        reply = sys.argv[2].encode() + b'\\n'
        while True:
            client, _ = server.accept()
            client.settimeout(5)
            try:
                client.recv(65536)
                client.sendall(reply)
            except OSError:
                pass
            client.close()
        """

    /// The attacker's reply.
    static let attackerReply = #"{"ok":true,"token":{"name":"work","accessToken":"ATTACKER-TOKEN","fedramp":false}}"#

    /// Starts the planted server at `path` (as nobody, unless `asOtherUser` is false) and waits until it listens.
    static func plant(at path: URL, reply: String = attackerReply, asOtherUser: Bool = true) async throws -> ChildProcess {
        let python = URL(fileURLWithPath: "/usr/bin/python3")
        let server =
            asOtherUser
            ? try OtherUser.nobody.start(python, ["-c", plantedServer, path.path, reply])
            : try ChildProcess(python, ["-c", plantedServer, path.path, reply])
        while !FileManager.default.fileExists(atPath: path.path), server.isRunning { try await Task.sleep(for: .milliseconds(20)) }
        #expect(server.isRunning)
        return server
    }

    /// `token work` from both binaries, with `extra` arguments.
    static func tokens(_ testbed: ChappieTestbed, _ extra: [String] = []) async throws -> [(binary: String, result: ProcessResult)] {
        var results: [(String, ProcessResult)] = []
        for binary in ["chappie", "chappie-full"] {
            let result = try await runProcess(
                try BuiltProducts.executable(binary), ["token", "work"] + extra + testbed.service,
                environment: ["HOME": testbed.userHome.path, "CHAPPIE_KEY_FILE": nil, "CHAPPIE_PASSPHRASE": nil, "CHAPPIE_ACCOUNT": nil])
            results.append((binary, result))
        }
        return results
    }

    @Test(
        "A data directory every user can write: refused before its socket is asked, with the fix (78); nothing is read from the store either",
        .enabled(if: OtherUser.isPossible, "plants the socket as nobody"))
    func writableDataDirectory() async throws {
        let testbed = try await ChappieTestbed.start()
        try await whileRunning(testbed) {
            #expect(try await testbed.chappie(["accounts", "add", "work"]).status == 0)
            #expect(chmod(testbed.home.path, 0o777) == 0)
            let server = try await Self.plant(at: testbed.home.appendingPathComponent("chappie.sock"))
            defer { kill(server.processIdentifier, SIGKILL) }
            for (binary, result) in try await Self.tokens(testbed) {
                #expect(result.status == 78, "\(binary): \(result.stdout) \(result.stderr)")
                #expect(!result.stdout.contains("ATTACKER") && !result.stderr.contains("ATTACKER"), "\(binary)")
                #expect(result.stderr.contains("\(testbed.home.path) can be written by every user"), "\(binary): \(result.stderr)")
                #expect(result.stderr.contains("chmod go-w \(testbed.home.path)"), "\(binary): \(result.stderr)")
            }
            for arguments in [["status"], ["usage", "--cached"], ["accounts", "list"]] {
                let refused = try await testbed.chappie(arguments)
                #expect(refused.status == 78, "\(arguments): \(refused.stdout) \(refused.stderr)")
            }
            let prompt = try await testbed.chappie(["prompt"])
            #expect(prompt.status == 0 && prompt.stdout.isEmpty, "a prompt shows nothing: \(prompt.stdout)")
            // Made private again (the planted socket removed), the account works.
            kill(server.processIdentifier, SIGKILL)
            await server.waitUntilExit()
            try FileManager.default.removeItem(at: testbed.home.appendingPathComponent("chappie.sock"))
            #expect(chmod(testbed.home.path, 0o700) == 0)
            let token = try await testbed.chappie(["token", "work"])
            #expect(token.status == 0, "\(token.stderr)")
        }
    }

    @Test("A daemon reply with a key twice is no reply for either binary: the store's token is printed, not either of the reply's")
    func duplicateKeys() async throws {
        let testbed = try await ChappieTestbed.start()
        try await whileRunning(testbed) {
            #expect(try await testbed.chappie(["accounts", "add", "work"]).status == 0)
            let stored = try await testbed.chappie(["token", "work"]).stdout
            let twice = #"{"ok":true,"token":{"name":"work","accessToken":"FIRST","accessToken":"SECOND","fedramp":false}}"#
            let server = try await Self.plant(at: testbed.home.appendingPathComponent("chappie.sock"), reply: twice, asOtherUser: false)
            defer { kill(server.processIdentifier, SIGKILL) }
            for (binary, result) in try await Self.tokens(testbed) {
                #expect(result.status == 0 && result.stdout == stored, "\(binary): \(result.stdout) \(result.stderr)")
            }
        }
    }

    @Test(
        "--socket naming another user's server: its uid is named, nothing is sent, and the store is not read instead (78)",
        .enabled(if: OtherUser.isPossible, "plants the socket as nobody"))
    func foreignListener() async throws {
        let testbed = try await ChappieTestbed.start()
        try await whileRunning(testbed) {
            #expect(try await testbed.chappie(["accounts", "add", "work"]).status == 0)
            let shared = URL(fileURLWithPath: "/tmp/chappie-planted-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: shared, withIntermediateDirectories: false)
            defer { try? FileManager.default.removeItem(at: shared) }
            #expect(chown(shared.path, 65534, 65534) == 0)
            let socket = shared.appendingPathComponent("s.sock")
            let server = try await Self.plant(at: socket)
            defer { kill(server.processIdentifier, SIGKILL) }
            for (binary, result) in try await Self.tokens(testbed, ["--socket", socket.path]) {
                #expect(result.status == 78, "\(binary): \(result.stdout) \(result.stderr)")
                #expect(!result.stdout.contains("ATTACKER") && !result.stderr.contains("ATTACKER"), "\(binary)")
                #expect(result.stderr.contains("another user (uid 65534) listens at \(socket.path)"), "\(binary): \(result.stderr)")
            }
            let status = try await testbed.chappie(["status", "--socket", socket.path])
            #expect(status.status == 78, "\(status.stdout) \(status.stderr)")
        }
    }
}
