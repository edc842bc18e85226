import ChappieCore
import ChappieStore
import Foundation
import Testing

@Suite("Contract: the store's settings (StoreSettings), on every backend")
struct StoreSettingsContractTests {
    @Test("Settings start unset, round-trip through another open, clear, and each change is logged", arguments: StoreBackend.allCases)
    func roundTrip(_ backend: StoreBackend) async throws {
        try await backend.withStore { contract in
            let store = try await contract.open()
            #expect(try await store.defaultCodexHome() == nil)
            #expect(try await store.usageRetention() == nil)
            try await store.setDefaultCodexHome("/home/u/.codex")
            try await store.setUsageRetention(86_400 * 30)
            let other = try await contract.open()
            #expect(try await other.defaultCodexHome() == "/home/u/.codex")
            #expect(try await other.usageRetention() == 86_400 * 30)
            try await other.setDefaultCodexHome(nil)
            try await other.setUsageRetention(nil)
            #expect(try await store.defaultCodexHome() == nil)
            #expect(try await store.usageRetention() == nil)
            let changes = try await store.events(limit: 10).filter { $0.kind == AuditEventKind.settingChanged.rawValue }
            #expect(changes.count == 4)
            #expect(changes.allSatisfy { $0.accountName == nil })
        }
    }

    @Test(
        "Traffic settings (originator, ca-file) start unset, round-trip through another open, are independent, and clear",
        arguments: StoreBackend.allCases)
    func trafficSettings(_ backend: StoreBackend) async throws {
        try await backend.withStore { contract in
            let store = try await contract.open()
            for setting in TrafficSetting.allCases { #expect(try await store.trafficSetting(setting) == nil) }
            try await store.setTrafficSetting(.originator, "my-harness")
            try await store.setTrafficSetting(.caFile, "/etc/company/ca.pem")
            let other = try await contract.open()
            #expect(try await other.trafficSetting(.originator) == "my-harness")
            #expect(try await other.trafficSetting(.caFile) == "/etc/company/ca.pem")
            try await other.setTrafficSetting(.originator, nil)
            #expect(try await store.trafficSetting(.originator) == nil)
            #expect(try await store.trafficSetting(.caFile) == "/etc/company/ca.pem")
            let changes = try await store.events(limit: 10).filter { $0.kind == AuditEventKind.settingChanged.rawValue }
            // The pool adds the machine to each detail: "(on NAME)".
            let expected = ["originator cleared", "ca-file = /etc/company/ca.pem", "originator = my-harness"]
            #expect(changes.count == 3)
            #expect(zip(changes, expected).allSatisfy { $0.detail.hasPrefix($1) }, "\(changes.map(\.detail))")
        }
    }

    @Test(
        "On a store machines share, the originator is everyone's and a certificate file (a local path) each machine's own",
        arguments: StoreBackend.allCases)
    func trafficSettingsAcrossMachines(_ backend: StoreBackend) async throws {
        try await backend.withStore { contract in
            let one = try await contract.open()
            try await one.setTrafficSetting(.originator, "fleet")
            try await one.setTrafficSetting(.caFile, "/etc/one/ca.pem")
            let two = try await contract.open(machine: "contract-b")
            #expect(try await two.trafficSetting(.originator) == "fleet")
            // One machine's store is one machine's: the other "machine" is the same one.
            #expect(try await two.trafficSetting(.caFile) == (backend.sharedByMachines ? nil : "/etc/one/ca.pem"))
            try await two.setTrafficSetting(.caFile, "/etc/two/ca.pem")
            #expect(try await one.trafficSetting(.caFile) == (backend.sharedByMachines ? "/etc/one/ca.pem" : "/etc/two/ca.pem"))
        }
    }
}
