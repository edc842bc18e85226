import ArgumentParser
import Foundation
import Chappie
import ChappieService
import ChappieStore
import ChappieVault
import Logging

/// Options every command takes.
struct GlobalOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("The data directory (default: $CHAPPIE_HOME, else $XDG_DATA_HOME/chappie).", valueName: "dir"))
    var home: String?

    @Option(name: .long, help: ArgumentHelp("The OAuth issuer (default: https://auth.openai.com).", valueName: "url"))
    var issuer: String?

    @Option(name: .long, help: ArgumentHelp("The ChatGPT backend (default: https://chatgpt.com/backend-api).", valueName: "url"))
    var backend: String?

    @Option(name: .long, help: ArgumentHelp("The key file (default: $CHAPPIE_KEY_FILE, systemd credentials, $CHAPPIE_PASSPHRASE, else a key file beside the data).", valueName: "file"))
    var keyFile: String?

    @Flag(name: .long, help: "Print JSON instead of a table.")
    var json = false

    @Flag(name: .long, help: "Log what chappie does to standard error.")
    var verbose = false

    func validate() throws {
        _ = try endpoints()
    }

    /// The services, from --issuer and --backend.
    func endpoints() throws -> ChappieEndpoints {
        do {
            return try ChappieEndpoints(issuer: issuer, backend: backend)
        } catch {
            throw ValidationError(error.description)
        }
    }

    /// The data directory, from --home and the environment.
    var location: StoreLocation { storeOptions.location }

    /// Where the store is and where its key comes from.
    var storeOptions: StoreOptions {
        StoreOptions(
            home: home, keyFile: keyFile, interactive: PassphrasePrompt.isInteractive,
            passphrase: EnvironmentPassphrases.passphrase, newPassphrase: EnvironmentPassphrases.newPassphrase)
    }

    /// Opens and unlocks the store.
    func openStore() throws -> StoreOpener.Opened {
        try StoreOpener.open(storeOptions)
    }

    /// A logger on standard error: debug with --verbose, warnings otherwise.
    func makeLogger() -> Logger {
        var logger = Logger(label: "chappie") { label in StreamLogHandler.standardError(label: label) }
        logger.logLevel = verbose ? .debug : .warning
        return logger
    }
}

/// A path typed by the user (`~` expanded) as a file URL.
func expandedPath(_ text: String) -> URL {
    URL(fileURLWithPath: (text as NSString).expandingTildeInPath)
}

/// The passphrases given in the environment, taken out of it once, when chappie starts.
enum EnvironmentPassphrases {
    static let passphrase = SecretEnvironment.take("CHAPPIE_PASSPHRASE")
    static let newPassphrase = SecretEnvironment.take("CHAPPIE_NEW_PASSPHRASE")

    /// Takes both now, before anything reads the environment.
    static func take() {
        _ = (passphrase, newPassphrase)
    }
}
