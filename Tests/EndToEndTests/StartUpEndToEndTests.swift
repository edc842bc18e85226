import ChappieTestSupport
import Foundation
import Testing

@Suite("Start-up: libcurl stays out of a process until it makes a request", .tags(.slow))
struct StartUpEndToEndTests {
    @Test("The chappie binary does not link libcurl (it links libsodium and SQLite)")
    func noLibcurlAtStart() async throws {
        let needed = try await runProcess(URL(fileURLWithPath: "/usr/bin/readelf"), ["-d", try BuiltProducts.executable("chappie").path])
        #expect(needed.status == 0)
        let libraries = needed.stdout.split(separator: "\n").filter { $0.contains("(NEEDED)") }
        #expect(libraries.contains { $0.contains("libsodium") })
        #expect(libraries.contains { $0.contains("libsqlite3") })
        #expect(!libraries.contains { $0.contains("libcurl") }, "\(libraries)")
    }

    @Test(
        "Without libcurl: accounts list works, doctor says MISSING and exits non-zero, a sign-in fails saying what to install",
        .enabled(if: canMountPrivately, "needs root and unshare -m to hide libcurl"))
    func withoutLibcurl() async throws {
        let setup = try await ChappieTestbed.start(emulatorArguments: ["--auto-approve", "--auto-approve-delay", "0", "--device-code-interval", "1"])
        try await whileRunning(setup) {
            #expect(try await setup.chappie(["accounts", "add", "a"]).status == 0)
            let chappie = try BuiltProducts.executable("chappie").path
            // The libcurl.so.4 this machine's own curl (same architecture) is linked with.
            let curl = try await runProcess(URL(fileURLWithPath: "/usr/bin/ldd"), ["/usr/bin/curl"])
            let entry = try #require(curl.stdout.split(separator: "\n").first { $0.contains("libcurl.so.4 ") })
            let path = try #require(entry.components(separatedBy: " => ").last?.components(separatedBy: " (").first)
            let library = URL(fileURLWithPath: path.trimmingCharacters(in: .whitespaces)).resolvingSymlinksInPath().path
            func hidden(_ arguments: [String]) async throws -> ProcessResult {
                let command = ([chappie] + arguments + setup.service).map { "'\($0)'" }.joined(separator: " ")
                return try await runProcess(
                    URL(fileURLWithPath: "/usr/bin/unshare"), ["-m", "sh", "-c", "mount --bind /dev/null '\(library)' && exec \(command)"])
            }
            let list = try await hidden(["accounts", "list", "--json"])
            #expect(list.status == 0, "\(list.stderr)")
            #expect(JSONDocument(Data(list.stdout.utf8)).string(0, "name") == "a")
            let doctor = try await hidden(["doctor"])
            #expect(doctor.status != 0)
            #expect(doctor.stdout.contains("MISSING"))
            #expect(doctor.stdout.contains("apt-get install libcurl4"))
            let add = try await hidden(["accounts", "add", "b"])
            #expect(add.status != 0)
            #expect(add.stderr.contains("libcurl could not be loaded"), "\(add.stderr)")
            #expect(!add.stderr.contains("Fatal error"))
            #expect(try await setup.chappie(["accounts", "list", "--json"]).stdout.contains("\"a\""))
        }
    }
}
