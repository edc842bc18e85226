import ChappieStore
import PostgresNIO

/// What a failure of PostgresNIO or the server means to chappie: a ``StoreError`` with the server's
/// message and SQL state, never a query's values or the password.
extension PoolDatabase {
    /// A store error for any failure of PostgresNIO (or a ``StoreError`` as it is): the server's
    /// message and SQL state, never the query's values or the password.
    static func storeError(_ error: any Error, address: PoolAddress, doing what: String, nothingChanged: Bool = false) -> StoreError {
        if let error = error as? StoreError { return error }
        let tail = nothingChanged ? "; nothing was changed" : ""
        if error is CancellationError { return StoreError(.database, "\(what) was cancelled\(tail)") }
        // withTransaction's wrapper: the body's own error (a StoreError as it is), else why BEGIN,
        // COMMIT or ROLLBACK failed. A failed COMMIT may have applied nothing, or (the connection
        // lost after the server committed) everything: the message cannot promise which.
        if let error = error as? PostgresTransactionError {
            if let cause = error.closureError { return storeError(cause, address: address, doing: what, nothingChanged: nothingChanged) }
            if let cause = error.commitError { return storeError(cause, address: address, doing: what + " (committing)") }
            if let cause = error.beginError { return storeError(cause, address: address, doing: what, nothingChanged: nothingChanged) }
        }
        // Some of PostgresNIO's paths report its older error type.
        if let error = error as? PostgresError {
            switch error {
            case .server(let response):
                return serverError(
                    state: response.fields[.sqlState] ?? "?", message: response.fields[.message], address: address, doing: what, tail: tail)
            case .connectionClosed:
                return StoreError(.unavailable, "\(what) failed: the connection to the pool \(address) was closed; try again later\(tail)")
            case .protocol:
                return StoreError(.database, "\(what) failed (a protocol error)\(tail)")
            }
        }
        guard let error = error as? PSQLError else { return StoreError(.database, "\(what) failed (\(type(of: error)))\(tail)") }
        if let state = error.serverInfo?[.sqlState] {
            return serverError(state: state, message: error.serverInfo?[.message], address: address, doing: what, tail: tail)
        }
        switch error.code {
        case .connectionError, .serverClosedConnection, .clientClosedConnection, .uncleanShutdown, .poolClosed:
            // The socket's own reason (refused, no route, a timeout) says which: it holds no secret.
            let reason = error.underlying.map { " (\(String(describing: $0).prefix(200)))" } ?? ""
            return StoreError(.unavailable, "\(what) failed: the pool \(address) cannot be reached now\(reason); try again later\(tail)")
        case .sslUnsupported:
            return StoreError(.poolAddress, "the pool \(address) does not offer TLS, and the address requires it (sslmode)")
        case .failedToAddSSLHandler, .receivedUnencryptedDataAfterSSLRequest:
            return StoreError(.poolAddress, "the TLS connection to the pool \(address) failed; check sslmode and sslrootcert")
        case .authMechanismRequiresPassword, .unsupportedAuthMechanism, .saslError:
            return StoreError(
                .poolAddress,
                "the pool \(address) wants a password chappie does not have or cannot use (\(error.code)); see team-pool.md in share/doc/chappie")
        default:
            return StoreError(.database, "\(what) failed (\(error.code))\(tail)")
        }
    }

    /// A store error for what the server answered: its message and SQL state (never the query's
    /// values: a message does not carry them; the detail, which can, is not used).
    private static func serverError(state: String, message: String?, address: PoolAddress, doing what: String, tail: String) -> StoreError {
        let message = message ?? "no message"
        switch PostgresError.Code(raw: state) {
        case .lockNotAvailable, .queryCanceled, .serializationFailure, .deadlockDetected, .tooManyConnections, .adminShutdown,
            .crashShutdown, .cannotConnectNow, .connectionException, .connectionDoesNotExist, .connectionFailure:
            // Lock timeout, statement cancelled (statement_timeout), serialisation failure, deadlock,
            // too many connections, the server shutting down or starting: all pass.
            return StoreError(.unavailable, "\(what) failed for now (\(message), SQLSTATE \(state)); try again later\(tail)")
        case .invalidAuthorizationSpecification, .invalidPassword:
            return StoreError(.poolAddress, "the pool \(address) refused the login (\(message)); check the user and password")
        case .invalidCatalogName:
            return StoreError(
                .poolAddress, "the pool \(address) has no such database (\(message)); create it first (team-pool.md in share/doc/chappie)")
        case .insufficientPrivilege:
            return StoreError(
                .database, "the pool's role may not do this (\(message)); grant it the rights team-pool.md (in share/doc/chappie) lists\(tail)")
        default:
            return StoreError(.database, "\(what) failed (\(message), SQLSTATE \(state))\(tail)")
        }
    }
}
