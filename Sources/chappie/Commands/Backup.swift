import ChappieSystem
import ChappieText
import ArgumentParser
import ChappieCore
import ChappieService
import Foundation

extension ChappieCommand {
    /// `chappie backup FILE`.
    struct Backup: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "backup",
            abstract: "Write every account, its tokens and the settings to one file sealed under a passphrase.",
            discussion: """
                The file (mode 0600) is sealed with XChaCha20-Poly1305 under a key derived from the \
                passphrase with Argon2id; see backup.md in share/doc/chappie for its format. The passphrase is asked twice \
                on a terminal, or read from --passphrase-file FILE (mode 0600) or $CHAPPIE_BACKUP_PASSPHRASE. \
                A backup is for moving or recovering a store: keep using one store only, since two stores \
                holding the same accounts would redeem the same refresh tokens.
                """)

        @Argument(help: "The file to write.") var file: String
        @Flag(help: "Include the usage history.") var usage = false
        @Flag(help: "Replace FILE if it exists.") var force = false
        @Option(help: ArgumentHelp("Read the passphrase from this file's first line (mode 0600).", valueName: "file")) var passphraseFile: String?
        @OptionGroup var global: GlobalOptions

        func run() async throws {
            let summary = try await global.services().backups.backup(
                to: expandedPath(file), passphrase: .init(file: passphraseFile.map(expandedPath)), usage: usage, replacing: force)
            if let warning = summary.passphraseWarning { StandardStream.error.write("warning: \(warning)\n") }
            if global.json { return try JSONOutput.print(summary) }
            print(
                "Wrote \(summary.file): \(summary.accounts) accounts, \(summary.settings) settings"
                    + (usage ? ", \(summary.usageReadings) usage readings." : "."))
        }
    }

    /// `chappie restore FILE`.
    struct Restore: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "restore",
            abstract: "Merge a backup into this store, never replacing newer tokens.",
            discussion: """
                Accounts are matched by ChatGPT account and user id. One this store lacks is added (unless \
                its name is taken by another account: then it is skipped, and said so); one it has is \
                updated only when the backup's tokens are newer (last refresh). Settings this store lacks \
                are taken, but codex-home: a path of the machine the backup came from, which this store \
                must not write. A wrong passphrase or a damaged file changes nothing. Then use only this store \
                for those accounts: the store the backup came from would redeem the same refresh tokens.
                """)

        @Argument(help: "The backup file.") var file: String
        @Option(help: ArgumentHelp("Read the passphrase from this file's first line (mode 0600).", valueName: "file")) var passphraseFile: String?
        @OptionGroup var global: GlobalOptions

        func run() async throws {
            let summary = try await global.services().backups.restore(
                from: expandedPath(file), passphrase: .init(file: passphraseFile.map(expandedPath)))
            if global.json { return try JSONOutput.print(summary) }
            for entry in summary.accounts {
                print(
                    "\(entry.outcome.rawValue): \(TerminalText.sanitized(entry.name))"
                        + (entry.reason.map { " (\(TerminalText.sanitized($0)))" } ?? ""))
            }
            print(
                "\(summary.names(.added).count) added, \(summary.names(.updated).count) updated, \(summary.names(.skipped).count) skipped"
                    + (summary.settingsApplied.isEmpty ? "" : "; settings taken: \(summary.settingsApplied.joined(separator: ", "))")
                    + (summary.usageReadingsAdded > 0 ? "; \(summary.usageReadingsAdded) usage readings added" : "") + ".")
            for leftOut in summary.settingsLeftOut { StandardStream.error.write("note: left out \(TerminalText.sanitized(leftOut))\n") }
            if !summary.names(.added).isEmpty || !summary.names(.updated).isEmpty {
                StandardStream.error.write(
                    """
                    note: use these accounts from this store only from now on; the store the backup came from \
                    holds the same refresh tokens, and a second redemption signs an account out.\n
                    """)
            }
        }
    }
}
