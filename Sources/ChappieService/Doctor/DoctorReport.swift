/// What `chappie doctor` found: library versions, the data directory, and whether the services answer.
public struct DoctorReport: Sendable, Codable, Equatable {
    /// A C library chappie runs on.
    public struct Library: Sendable, Codable, Equatable {
        /// Its name, such as `libcurl`.
        public var name: String
        /// Its version at run time, or `missing`.
        public var version: String
        /// Anything worth knowing (TLS library, HTTP/2 support).
        public var detail: String?
        /// Why it cannot be loaded (libcurl is loaded on first use), or `nil` when it is there.
        public var problem: String?
    }

    /// The data directory and its permissions.
    public struct DataDirectory: Sendable, Codable, Equatable {
        /// The absolute path.
        public var path: String
        /// Whether it exists yet (it is created 0700 on first use).
        public var exists: Bool
        /// Its permission bits in octal, such as `700`.
        public var mode: String?
        /// What is wrong and how to fix it, if anything.
        public var problem: String?
    }

    /// One remote service and how it answered.
    public struct Endpoint: Sendable, Codable, Equatable {
        /// `issuer` or `backend`.
        public var name: String
        /// The URL that was probed.
        public var url: String
        /// Whether an HTTP response came back.
        public var reachable: Bool
        /// Its status code, when one came back.
        public var status: Int?
        /// How long the probe took, in milliseconds.
        public var milliseconds: Int
        /// Why it is not reachable, or what was odd about the answer.
        public var problem: String?
    }

    /// chappie's own version.
    public var version: String
    /// libsodium, libcurl and SQLite.
    public var libraries: [Library]
    /// The data directory.
    public var dataDirectory: DataDirectory
    /// The issuer and the backend.
    public var endpoints: [Endpoint]
    /// The team pool's database, when the options select one (`nil` for the local store).
    public var pool: Pool?

    /// The team pool's database.
    public struct Pool: Sendable, Codable, Equatable {
        /// Its address, without a password.
        public var address: String
        /// This machine's name in it.
        public var machine: String
        /// Whether it answered.
        public var reachable: Bool
        /// The server's version, when it answered.
        public var serverVersion: String?
        /// How many of this chappie's migrations it has, and how many there are.
        public var migrationsApplied: Int?
        /// How many migrations this chappie has.
        public var migrationsKnown: Int
        /// What is wrong, if anything.
        public var problem: String?
    }

    /// Whether every check passed.
    public var isHealthy: Bool {
        libraries.allSatisfy { $0.problem == nil } && dataDirectory.problem == nil && endpoints.allSatisfy { $0.reachable && $0.problem == nil }
            && pool?.problem == nil
    }
}
