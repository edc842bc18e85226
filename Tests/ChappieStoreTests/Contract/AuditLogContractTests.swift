import ChappieCore
import ChappieStore
import Foundation
import Testing

@Suite("Contract: the audit log (AuditLog), on every backend")
struct AuditLogContractTests {
    @Test("Each change leaves its kind of entry, newest first, naming the account even after it is removed", arguments: StoreBackend.allCases)
    func changesAreLogged(_ backend: StoreBackend) async throws {
        try await backend.withStore { contract in
            let store = try await contract.open()
            let account = try await store.add(Identity("log@example.com", marker: "l"), name: "log")
            try await store.rename(named("log"), to: named("logged"))
            _ = try await store.activate(named("logged"))
            try await store.recordEvent(.mirrorSkipped, account: try await store.account(id: account.id), detail: "a note")
            try await store.recordEvent(.usagePolled, account: nil, detail: "about the store")
            try await store.remove(named("logged"))
            let events = try await store.events(limit: 100)
            let kinds = events.map(\.kind)
            let expected: [AuditEventKind] = [.removed, .usagePolled, .mirrorSkipped, .switched, .renamed, .signedIn]
            #expect(Array(kinds.prefix(expected.count)) == expected.map(\.rawValue))
            #expect(events.map(\.at) == events.map(\.at).sorted(by: >))
            #expect(events[0].accountName == "logged")
            #expect(events[1].accountName == nil)
            // A shared store may add where it happened (the team pool names the machine).
            #expect(events[1].detail.hasPrefix("about the store"))
            #expect(events[2].detail.hasPrefix("a note"))
            #expect(events.first { $0.kind == AuditEventKind.renamed.rawValue }?.detail.contains("log") == true)
        }
    }

    @Test("The limit caps the entries and keeps the newest", arguments: StoreBackend.allCases)
    func limit(_ backend: StoreBackend) async throws {
        try await backend.withStore { contract in
            let store = try await contract.open()
            for index in 0..<5 { try await store.recordEvent(.usagePolled, account: nil, detail: "entry \(index)") }
            let newest = try await store.events(limit: 2)
            #expect(newest.count == 2)
            #expect(newest[0].detail.hasPrefix("entry 4"))
            #expect(newest[1].detail.hasPrefix("entry 3"))
            #expect(try await store.events().count >= 5)
        }
    }
}
