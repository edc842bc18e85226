import ChappieTestSupport
import Foundation
import Testing

@Suite("The built chappie and chappie-emulator binaries, run as a user runs them", .tags(.slow))
struct DoctorEndToEndTests {
    private func chappie(_ arguments: [String], environment: [String: String?] = [:]) async throws -> ProcessResult {
        try await ChappieRunner(home: nil)(arguments, environment: environment)
    }

    private func temporaryHome(mode: Int = 0o700) throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("chappie-e2e-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true, attributes: [.posixPermissions: mode])
        return url
    }

    @Test("chappie --version prints the version")
    func version() async throws {
        let result = try await chappie(["--version"])
        #expect(result.status == 0)
        #expect(result.stdout.trimmingCharacters(in: .whitespacesAndNewlines).wholeMatch(of: /\d+\.\d+\.\d+/) != nil)
    }

    @Test("doctor against the emulator process: every check passes, as a table and as JSON")
    func doctorHealthy() async throws {
        let emulator = try await EmulatorProcess()
        let home = try temporaryHome()
        defer { try? FileManager.default.removeItem(at: home) }
        let table = try await chappie(["doctor", "--home", home.path, "--issuer", emulator.issuer, "--backend", emulator.backend])
        #expect(table.status == 0, "\(table.stdout)\(table.stderr)")
        #expect(table.stdout.contains("All checks passed."))
        #expect(table.stdout.contains("libsodium"))
        let json = try await chappie(["doctor", "--json", "--home", home.path, "--issuer", emulator.issuer, "--backend", emulator.backend])
        #expect(json.status == 0)
        let document = JSONDocument(Data(json.stdout.utf8))
        #expect(document.string("dataDirectory", "path") == home.path)
        #expect(document.string("dataDirectory", "mode") == "700")
        #expect(document.int("endpoints", 0, "status") == 200)
        #expect(document.int("endpoints", 1, "status") == 401)
        #expect(document.array("libraries")?.count == 3)
        let verbose = try await chappie(["doctor", "--verbose", "--home", home.path, "--issuer", emulator.issuer, "--backend", emulator.backend])
        #expect(verbose.status == 0)
        #expect(verbose.stderr.contains("probe answered"))
        #expect(!table.stderr.contains("probe answered"))
        #expect(await emulator.stop() == 0)
    }

    @Test("doctor with services that do not answer exits 69 and says so")
    func doctorUnreachable() async throws {
        // A port held closed for the run: nothing, not another test's emulator, answers there.
        let issuer = "http://127.0.0.1:\(try closedLoopbackPort())"
        let result = try await chappie(["doctor", "--home", try temporaryHome().path, "--issuer", issuer, "--backend", issuer + "/backend-api"])
        #expect(result.status == 69)
        #expect(result.stdout.contains("UNREACHABLE"))
        #expect(result.stdout.contains("could not connect"))
    }

    @Test("doctor finds a data directory others can read, exits 78 and says how to fix it")
    func doctorPermissions() async throws {
        let emulator = try await EmulatorProcess()
        let home = try temporaryHome(mode: 0o755)
        defer { try? FileManager.default.removeItem(at: home) }
        let result = try await chappie(["doctor", "--home", home.path, "--issuer", emulator.issuer, "--backend", emulator.backend])
        #expect(result.status == 78)
        #expect(result.stdout.contains("chmod 700 \(home.path)"))
        await emulator.stop()
    }

    @Test("Bad --issuer and --backend values are usage errors (exit 2) with the rule in the message")
    func badURLs() async throws {
        for (option, value, phrase) in [
            ("--issuer", "ftp://auth.example", "absolute http(s) URL"),
            ("--backend", "http://chatgpt.example/backend-api", "plain http"),
            ("--issuer", "not a url", "absolute http(s) URL"),
        ] {
            let result = try await chappie(["doctor", option, value])
            #expect(result.status == 2)
            #expect(result.stderr.contains(phrase), "\(result.stderr)")
        }
        #expect(try await chappie(["doctor", "--no-such-flag"]).status == 2)
    }

    @Test("libcurl's proxy environment is honoured: a dead proxy breaks doctor, NO_PROXY bypasses it")
    func proxyEnvironment() async throws {
        let emulator = try await EmulatorProcess()
        let home = try temporaryHome()
        defer { try? FileManager.default.removeItem(at: home) }
        let arguments = ["doctor", "--home", home.path, "--issuer", emulator.issuer, "--backend", emulator.backend]
        let dead = "http://127.0.0.1:\(try closedLoopbackPort())"
        let proxied = try await chappie(arguments, environment: ["http_proxy": dead, "NO_PROXY": nil, "no_proxy": nil])
        #expect(proxied.status == 69)
        let bypassed = try await chappie(arguments, environment: ["http_proxy": dead, "NO_PROXY": "127.0.0.1", "no_proxy": nil])
        #expect(bypassed.status == 0, "\(bypassed.stdout)")
        await emulator.stop()
    }

    @Test("chappie-emulator stops on SIGTERM and refuses a non-loopback address")
    func emulatorProcess() async throws {
        let emulator = try await EmulatorProcess(arguments: ["--access-token-ttl", "60"])
        #expect(await emulator.stop() == 0)
        let refused = try await runProcess(try BuiltProducts.executable("chappie-emulator"), ["--host", "0.0.0.0"])
        #expect(refused.status != 0)
        #expect(refused.stderr.contains("loopback"))
    }

    @Test("The shipped chappie binary does not link Hummingbird (only the emulator does)")
    func noHummingbirdInCLI() throws {
        let chappie = try Data(contentsOf: try BuiltProducts.executable("chappie"), options: .mappedIfSafe)
        let emulator = try Data(contentsOf: try BuiltProducts.executable("chappie-emulator"), options: .mappedIfSafe)
        let marker = Data("11Hummingbird".utf8)  // in every mangled Swift symbol of the module
        #expect(emulator.range(of: marker) != nil)
        #expect(chappie.range(of: marker) == nil)
    }
}
