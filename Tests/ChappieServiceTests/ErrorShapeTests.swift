import ChappieCore
import ChappieDaemonClient
import ChappieService
import ChappieStore
import ChappieVault
import Testing

@Suite("One error shape: the libraries' errors carry a code, a message, a cause and a recovery, mapped to an exit code in one place")
struct ErrorShapeTests {
    struct Cause: Error {}

    static let cases: [(any ChappieFailure, Int32)] = [
        (StoreError(.wrongKey, "w"), 78), (StoreError(.poolAddress, "p"), 78), (StoreError(.moving, "m"), 78),
        (StoreError(.unavailable, "u"), 75), (StoreError(.notFound, "n"), 1), (StoreError(.credentialUnreadable, "c"), 1),
        (StoreError(.database, "d", underlying: Cause()), 1),
        (VaultError(.keyFile, "k"), 78), (VaultError(.passphraseUnavailable, "p"), 78), (VaultError(.writeFailed, "f"), 1),
        (ServiceError(.configuration, "c"), 78), (ServiceError(.unavailable, "u"), 75), (ServiceError(.signInRequired, "s"), 77),
        (ServiceError(.invalidInput, "i"), 1), (ServiceError(.cancelled, "x"), 1), (ServiceError(.failed, "f"), 1),
    ]

    @Test("Each library error's exit code comes from its recovery, as docs/errors.md lists them")
    func exitCodesFollowRecovery() throws {
        for (error, exitCode) in Self.cases {
            let described = try #require(FailureDescription(error))
            #expect(described.exitCode == exitCode, "\(type(of: error)) \(error.message)")
            #expect(described.exitCode == error.recovery.exitCode)
            #expect(described.message == error.message)
            #expect("\(error)" == error.message, "the description is the message alone, never the cause")
        }
    }

    @Test("The cause is kept underneath, never shown")
    func causeIsKept() {
        let error = StoreError(.database, "writing the store failed", underlying: Cause())
        #expect(error.underlying is Cause)
        #expect(error.description == "writing the store failed")
    }

    @Test("A daemon's refusal keeps the daemon's own exit code and message")
    func daemonRefusal() throws {
        var reply = DaemonReply.failure("sign work in again", exitCode: 77)
        reply.ok = false
        let described = try #require(FailureDescription(DaemonRefusal(reply, otherwise: "")))
        #expect(described == FailureDescription(message: "sign work in again", exitCode: 77))
    }
}
