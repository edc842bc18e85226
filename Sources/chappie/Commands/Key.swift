import ArgumentParser
import ChappieService
import ChappieStore
import ChappieVault
import Foundation

extension ChappieCommand {
    /// `chappie key …`: the master key that seals every credential.
    struct Key: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show or rotate the key that seals the credentials.",
            subcommands: [Status.self, Rotate.self], defaultSubcommand: Status.self)
    }
}

extension ChappieCommand.Key {
    struct Status: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Where the key comes from, its id, and what it seals.")

        @OptionGroup var global: GlobalOptions

        struct Report: Encodable {
            var source: String
            var keyID: String
            var derivation: String?
            var credentialsSealedWithKey: Int
            var credentialsSealedWithOtherKeys: Int
            var dataDirectory: String
        }

        func run() async throws {
            let opened = try global.openStore()
            let counts = try opened.store.credentialCountsByKey()
            var derivation: String?
            if case .passphrase(let kdf, _) = opened.setup {
                derivation = "Argon2id, \(kdf.opsLimit) passes, \(kdf.memLimit >> 20) MiB"
            }
            let report = Report(
                source: opened.source.description, keyID: opened.store.key.id, derivation: derivation,
                credentialsSealedWithKey: counts[opened.store.key.id] ?? 0,
                credentialsSealedWithOtherKeys: counts.filter { $0.key != opened.store.key.id }.values.reduce(0, +),
                dataDirectory: opened.store.location.directory.path)
            if global.json {
                try JSONOutput.print(report)
                return
            }
            var table = TextTable("FIELD", "VALUE")
            table.append("source", report.source)
            table.append("key id", report.keyID)
            if let derivation { table.append("derivation", derivation) }
            table.append("credentials sealed", "\(report.credentialsSealedWithKey)")
            if report.credentialsSealedWithOtherKeys > 0 {
                table.append("sealed by other keys", "\(report.credentialsSealedWithOtherKeys) (unreadable: sign those accounts in again)")
            }
            table.append("data directory", report.dataDirectory)
            print(table.render())
        }
    }

    struct Rotate: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Reseal every credential under a new key, in one transaction.",
            discussion: """
                A key file gets a new random key (written beside it first, then moved into place once the \
                database has committed). A passphrase store asks for the new passphrase (or reads \
                CHAPPIE_NEW_PASSPHRASE). If chappie is interrupted, the old key stays valid until the \
                commit, and the next command finishes the swap after it.
                """)

        @OptionGroup var global: GlobalOptions

        func run() async throws {
            let outcome = try KeyRotation.rotate(try global.openStore(), options: global.storeOptions)
            if global.json {
                try JSONOutput.print(["oldKeyID": outcome.oldKeyID, "newKeyID": outcome.newKeyID])
            } else {
                print("Rotated the key: \(outcome.oldKeyID) → \(outcome.newKeyID). Back up the new key (docs/security.md).")
            }
        }
    }
}
