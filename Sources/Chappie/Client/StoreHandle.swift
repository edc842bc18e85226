import ChappieCore
import ChappieStore
import ChappieVault

/// The client's store, opened on its first request and kept: a passphrase store derives its key
/// (Argon2id) once per client, not once per request. A failed open is not kept, so a later request
/// tries again (after the key file is fixed, say).
actor StoreHandle {
    private let options: StoreOptions
    private var opening: Task<any AccountStore, any Error>?

    init(_ options: StoreOptions) {
        self.options = options
    }

    /// The open store.
    ///
    /// - Throws: ``ChappieClientError/credentialStoreUnavailable(_:)`` with the store's or the
    ///   vault's message (never a secret).
    func opened() async throws(ChappieClientError) -> any AccountStore {
        let task: Task<any AccountStore, any Error>
        if let opening {
            task = opening
        } else {
            let options = options
            task = Task { try await StoreOpener.open(options).store }
            opening = task
        }
        do {
            return try await task.value
        } catch {
            if opening == task { opening = nil }
            throw ChappieClientError.storeUnavailable(error)
        }
    }
}

extension ChappieClientError {
    /// A store or vault failure as the SDK's error: an account gone (removed or renamed meanwhile)
    /// is ``missingCredential``, an unreadable credential means the account must be signed in
    /// again; anything else is ``credentialStoreUnavailable(_:)``.
    static func storeUnavailable(_ error: any Error) -> ChappieClientError {
        switch error {
        case let error as ChappieClientError: error
        case let error as StoreError where error.code == .notFound: .missingCredential
        case let error as StoreError where error.code == .credentialUnreadable: .reauthenticationRequired(error.message)
        case let error as StoreError: .credentialStoreUnavailable(error.message)
        case let error as VaultError: .credentialStoreUnavailable(error.message)
        default: .credentialStoreUnavailable(String(describing: error))
        }
    }
}
