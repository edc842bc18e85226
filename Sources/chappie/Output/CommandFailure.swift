import ArgumentParser
import ChappieCore
import ChappieService

/// A library error turned into a message and an exit code (``FailureDescription``).
struct CommandFailure: Error {
    let message: String
    let exitCode: ExitCode
    /// The service's own words, when the message is a person's (``FailureDescription/detail``).
    var detail: String?

    init(message: String, exitCode: ExitCode, detail: String? = nil) {
        self.message = message
        self.exitCode = exitCode
        self.detail = detail
    }

    /// The failure for an error chappie's libraries throw, naming the account it concerns where
    /// known; `nil` for others (argument-parser's own).
    init?(_ error: any Error, account: AccountName? = nil) {
        guard let description = FailureDescription(error, account: account) else { return nil }
        self.init(message: description.message, exitCode: ExitCode(description.exitCode), detail: description.detail)
    }

    /// Runs `body` for one account: a library error it throws becomes a failure naming the account.
    /// `account` is asked only then (finding the active one costs a store read a success never needs).
    static func about<T>(_ account: () async -> AccountName?, _ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let error where !(error is CommandFailure) {
            // The account is looked up (it may take opening the store) only for a message that names it.
            let name = FailureDescription.namesAccount(error) ? await account() : nil
            throw CommandFailure(error, account: name) ?? error
        }
    }
}
