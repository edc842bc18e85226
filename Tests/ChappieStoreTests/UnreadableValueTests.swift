import ChappieCore
import ChappieStore
import ChappieTestSupport
import Foundation
import GRDB
import Testing

/// A value an older chappie stored as a token claimed it (a year past 9999), or that was damaged,
/// must not make the store unreadable (issue 26, break 2).
@Suite("A stored time that does not read back fails nothing")
struct UnreadableValueTests {
    @Test(
        "Accounts with unreadable times list, open and are removed; the others are untouched",
        arguments: [
            "+292277026596-12-04 15:30:07.000", "not a date", "99999-01-01 00:00:00.000",
        ])
    func unreadableTimes(_ text: String) async throws {
        let test = try TestStore()
        defer { test.remove() }
        let odd = try await test.add("odd@example.com", marker: "odd-marker")
        try await test.add("fine@example.com", marker: "fine-marker")
        try await DatabaseQueue(path: test.databaseFile.path).write { db in
            try db.execute(
                sql: "UPDATE accounts SET access_expires_at = ?, last_refresh_at = ?, created_at = ?, updated_at = ? WHERE id = ?",
                arguments: [text, text, text, text, odd.id])
        }
        let accounts = try await test.store.accounts()
        #expect(accounts.count == 2)
        let read = try #require(accounts.first { $0.id == odd.id })
        #expect(read.accessTokenExpiresAt == nil, "unknown, so the next use refreshes it")
        #expect(read.lastRefreshAt == nil)
        #expect(try await test.store.credentials(for: read).refreshToken == "refresh-odd-marker")
        try await test.store.remove(read.name)
        #expect(try await test.store.accounts().map(\.info.email) == ["fine@example.com"])
    }
}
