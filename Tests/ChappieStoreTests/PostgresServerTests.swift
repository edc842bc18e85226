import ChappieTestSupport
import Foundation
import Testing

@Suite("The test support's PostgreSQL server (Debian's postgresql, in a temporary directory)")
struct PostgresServerTests {
    @Test("A server starts on a socket of its own, answers as PostgreSQL 15 or later, keeps what it is given, and is gone after stop")
    func startsAndStops() async throws {
        let server = try await PostgresServer.start()
        let version = try await server.psql("SHOW server_version_num")
        #expect(version.status == 0, "\(version.stderr)")
        #expect((Int(version.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0) >= 150_000)
        #expect(try await server.psql("CREATE TABLE pool (name text PRIMARY KEY)").status == 0)
        #expect(try await server.psql("INSERT INTO pool VALUES ('a'), ('b')").status == 0)
        #expect(
            try await server.psql("SELECT string_agg(name, ',' ORDER BY name) FROM pool").stdout.trimmingCharacters(in: .whitespacesAndNewlines)
                == "a,b")
        // Only the socket: no TCP port was opened.
        #expect(try await server.psql("SHOW listen_addresses").stdout.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty)
        #expect(FileManager.default.fileExists(atPath: server.socketPath))
        await server.stop()
        #expect(!FileManager.default.fileExists(atPath: server.directory.path))
    }

    @Test("Two servers at once do not meet: each has its own directory and data")
    func twoServers() async throws {
        let first = try await PostgresServer.start()
        let second = try await PostgresServer.start()
        #expect(first.socketPath != second.socketPath)
        #expect(try await first.psql("CREATE TABLE only_in_first (x int)").status == 0)
        #expect(try await second.psql("SELECT to_regclass('only_in_first') IS NULL").stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "t")
        await first.stop()
        await second.stop()
    }
}
