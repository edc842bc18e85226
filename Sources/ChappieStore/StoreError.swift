public import ChappieCore

/// A failure of the account store. Messages name accounts and files, never secrets or SQL arguments.
public struct StoreError: ChappieFailure {
    /// What kind of failure.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private let name: String
        private init(_ name: String) { self.name = name }

        /// The key does not open this store's key check.
        public static let wrongKey = Code("wrong key")
        /// The store was set up with a key that cannot be found now.
        public static let missingKey = Code("missing key")
        /// The database file is not a chappie database, or is damaged.
        public static let corrupt = Code("corrupt database")
        /// The database was written by a newer chappie.
        public static let newerSchema = Code("newer database")
        /// No account has that name.
        public static let notFound = Code("no such account")
        /// Another account already has that name.
        public static let nameTaken = Code("name taken")
        /// One account's sealed credentials do not open.
        public static let credentialUnreadable = Code("credentials unreadable")
        /// A file or directory could not be created or changed.
        public static let io = Code("file error")
        /// The account is held elsewhere in the team pool (its Codex home on another machine).
        public static let inUseElsewhere = Code("in use elsewhere")
        /// The account is being moved to the team pool by a `pool migrate` that did not finish:
        /// its tokens are not used in this store.
        public static let moving = Code("moving to the pool")
        /// The team pool's address cannot be used (not a postgres:// URL, an unknown option, an
        /// unreadable password file or root certificate).
        public static let poolAddress = Code("store address")
        /// The team pool's database cannot be reached now, or took too long to answer: try again later.
        public static let unavailable = Code("store unavailable")
        /// Any other database failure (busy beyond the timeout, disk full, …).
        public static let database = Code("database error")

        /// A short name of the code.
        public var description: String { name }
    }

    /// What kind of failure.
    public let code: Code
    /// What happened and what to do.
    public let message: String
    /// The error underneath (the database driver's, a system call's), when there is one.
    public let underlying: (any Error & Sendable)?

    /// Creates an error.
    public init(_ code: Code, _ message: String, underlying: (any Error & Sendable)? = nil) {
        self.code = code
        self.message = message
        self.underlying = underlying
    }

    /// Whether the cause is the configuration or the key (exit code 78).
    public var isConfigurationProblem: Bool {
        [.wrongKey, .missingKey, .corrupt, .newerSchema, .io, .poolAddress, .moving].contains(code)
    }

    /// The key or the set-up to fix, a database to try again later, or a failure to look into.
    public var recovery: ChappieErrorRecovery {
        isConfigurationProblem ? .permanent(.fixConfiguration) : code == .unavailable ? .retry(.now) : .permanent(.inspectCause)
    }
}

extension StoreError {
    /// A sign-in or import under `name` returned another ChatGPT account or user than the one of
    /// that name: refused, since taking it would store someone else's login under a known name.
    package static func signedInAsAnother(_ name: AccountName, holder: String?, signedIn: String?) -> StoreError {
        StoreError(
            .nameTaken,
            "another account is already named \(name) (\(holder ?? "no e-mail")), and these tokens are of another ChatGPT user (\(signedIn ?? "no e-mail")); "
                + "nothing was stored: sign in as \(holder ?? "that account") to renew \(name), or choose another name")
    }
}
