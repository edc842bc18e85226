import ChappieText
import ArgumentParser
import ChappieService
import Foundation

extension ChappieCommand {
    /// `chappie key …`: the master key that seals every credential.
    struct Key: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "key",
            abstract: "Show or rotate the key that seals the credentials.",
            subcommands: [Status.self, Rotate.self], defaultSubcommand: Status.self)
    }
}

extension ChappieCommand.Key {
    struct Status: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "status", abstract: "Where the key comes from, its id, and what it seals.")

        @OptionGroup var global: GlobalOptions

        func run() async throws {
            let report = try await global.services().keys.status()
            if global.json {
                try JSONOutput.print(report)
                return
            }
            var table = TextTable("FIELD", "VALUE")
            table.append("source", report.source)
            table.append("key id", report.keyID)
            if let derivation = report.derivation { table.append("derivation", derivation) }
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
            commandName: "rotate",
            abstract: "Reseal every credential under a new key, in one transaction.",
            discussion: """
                A key file gets a new random key (written beside it first, then moved into place once the \
                database has committed). A passphrase store asks for the new passphrase (or reads \
                CHAPPIE_NEW_PASSPHRASE). If chappie is interrupted, the old key stays valid until the \
                commit, and the next command finishes the swap after it.
                """)

        @OptionGroup var global: GlobalOptions

        func run() async throws {
            let outcome = try await global.services().keys.rotate()
            if global.json {
                try JSONOutput.print(["oldKeyID": outcome.oldKeyID, "newKeyID": outcome.newKeyID])
            } else {
                print("Rotated the key: \(outcome.oldKeyID) → \(outcome.newKeyID). Back up the new key (security.md in share/doc/chappie).")
            }
        }
    }
}
