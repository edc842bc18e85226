// swift-tools-version:6.2
import PackageDescription

/// Settings every chappie target shares (see docs/style.md in the steering repo).
let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

// Linux only: the daemon's socket reads its peer's credentials with Glibc's SO_PEERCRED, and the
// store's file locks and the shims are tested on Debian only. No `platforms:` is claimed for Apple
// systems; building there stops at a compile-time error naming this (see README, Requirements).
let package = Package(
    name: "chappie",
    products: [
        .library(name: "Chappie", targets: ["Chappie"]),
        // The team pool for SDK users who want it (StoreOptions.poolBackend = TeamPool()).
        .library(name: "ChappiePool", targets: ["ChappiePool"]),
        .library(name: "ChappieEmulator", targets: ["ChappieEmulator"]),
        // The front binary, and the helper it hands every command it does not serve itself
        // (installed as PREFIX/libexec/chappie/chappie-full; docs/architecture.md, "Two binaries").
        .executable(name: "chappie", targets: ["chappie"]),
        .executable(name: "chappie-full", targets: ["chappie-full"]),
        .executable(name: "chappie-emulator", targets: ["chappie-emulator"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.35.2"),
        // The emulator's TLS: a certificate authority and a server certificate made at start-up.
        .package(url: "https://github.com/apple/swift-certificates.git", from: "1.21.1"),
        .package(url: "https://github.com/apple/swift-asn1.git", from: "1.7.4"),
        // WebSocket framing, ping/pong, close handshake and permessage-deflate (WSCore, WSCompression).
        .package(url: "https://github.com/hummingbird-project/swift-websocket.git", .upToNextMinor(from: "1.6.2")),
        .package(url: "https://github.com/adam-fowler/compress-nio.git", from: "1.5.0"),
        .package(url: "https://github.com/groue/GRDB.swift.git", from: "7.10.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1", traits: []),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        // The daemon's /metrics: swift-metrics' API, exposed in Prometheus' text format.
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        // The team pool's store (PostgreSQL).
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
        // RSA signatures of the issuer's tokens (docs/security.md, "Signatures").
        .package(url: "https://github.com/apple/swift-crypto.git", from: "4.5.2"),
        // Tests only: an independent CSV parser to read back what chappie writes.
        .package(url: "https://github.com/swiftcsv/SwiftCSV.git", from: "0.10.0"),
    ],
    targets: [
        // C libraries from Debian, reached through typed shims.
        .systemLibrary(
            name: "CSodium",
            pkgConfig: "libsodium",
            providers: [.apt(["libsodium-dev"])]
        ),
        // libcurl's headers (libcurl4-openssl-dev) at build time; the library itself is loaded with
        // dlopen on the first request (see Sources/CCurl/include/ccurl.h), never linked.
        .target(name: "CCurl", linkerSettings: [.linkedLibrary("dl")]),
        // The CLI's signal handler, which must be async-signal-safe (Sources/CSignals/include/csignals.h).
        .target(name: "CSignals"),
        // prctl and O_TMPFILE, which Swift cannot reach (Sources/CProcess/include/cprocess.h).
        .target(name: "CProcess"),
        // The front binary's read-only path reads the store with SQLite's C API (GRDB links the same library).
        .systemLibrary(
            name: "CSQLite",
            pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"])]
        ),
        .systemLibrary(
            name: "CZstd",
            pkgConfig: "libzstd",
            providers: [.apt(["libzstd-dev"])]
        ),

        // Libraries, in import order: Core ← Net, Vault ← Store ← Chappie ← Service.
        .target(name: "ChappieBuild", swiftSettings: swiftSettings),
        // Text as chappie shows it (tables, relative times, plan names, the headroom rule), without
        // Foundation: both binaries show the same, and the front binary does not link Foundation.
        .target(name: "ChappieText", swiftSettings: swiftSettings),
        // The system calls both binaries share, without Foundation: best-effort writes to the
        // standard streams, the daemon's socket client and who may listen there, who may write a path,
        // and the strict JSON reader both read a daemon's reply with.
        .target(name: "ChappieSystem", swiftSettings: swiftSettings),
        // The store's format, without Foundation: its migrations (generated from migrations/ by
        // scripts/embed-migrations.sh) and its sealing labels, which both binaries read alike.
        .target(name: "ChappieStoreFormat", swiftSettings: swiftSettings),
        .target(
            name: "ChappieCore", dependencies: ["ChappieBuild", "ChappieText", "ChappieStoreFormat", "ChappieSystem"], swiftSettings: swiftSettings),
        // What the front binary does itself: the standard library, Glibc, SQLite and libsodium only,
        // never Foundation (scripts/check-imports.py; the front binary's link is checked by the tests).
        .target(
            name: "ChappieFront",
            dependencies: ["ChappieBuild", "ChappieText", "ChappieSystem", "ChappieStoreFormat", "CSQLite", "CSodium", "CProcess"],
            swiftSettings: swiftSettings),
        .target(
            name: "ChappieNet",
            dependencies: [
                "ChappieCore", "ChappieSystem", "CCurl",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "WSCore", package: "swift-websocket"),
                .product(name: "WSCompression", package: "swift-websocket"),
            ],
            swiftSettings: swiftSettings
        ),
        .target(name: "ChappieVault", dependencies: ["ChappieCore", "ChappieSystem", "CSodium", "CProcess"], swiftSettings: swiftSettings),
        .target(
            name: "ChappieStore",
            dependencies: [
                "ChappieCore", "ChappieVault", "ChappieSystem", "ChappieStoreFormat", .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        // The daemon's socket protocol and its client. No NIO, NIOSSL or PostgresNIO: a lean front end
        // for `token` and `accounts list` is made of this and the store (scripts/check-imports.py).
        .target(
            name: "ChappieDaemonClient",
            dependencies: ["ChappieCore", "ChappieStore", "ChappieSystem"],
            swiftSettings: swiftSettings
        ),
        // The team pool's backend (docs/team-pool.md): the one target that links PostgresNIO.
        .target(
            name: "ChappiePool",
            dependencies: [
                "ChappieCore", "ChappieVault", "ChappieStore", "ChappieStoreFormat", .product(name: "Logging", package: "swift-log"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "Chappie",
            dependencies: [
                "ChappieCore", "ChappieText", "ChappieNet", "ChappieVault", "ChappieStore", .product(name: "Logging", package: "swift-log"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
            ],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "ChappieService",
            dependencies: [
                "Chappie", "ChappieNet", "ChappiePool", "ChappieStore", "ChappieVault", "ChappieCore", "ChappieText", "ChappieDaemonClient",
                "ChappieSystem", "CProcess",
                .product(name: "Logging", package: "swift-log"),
                // The daemon's Unix socket (DaemonSocketServer).
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOExtras", package: "swift-nio-extras"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ],
            swiftSettings: swiftSettings
        ),

        // Every decoder of outside input behind one entry (make fuzz; the property tests).
        .target(
            name: "ChappieFuzzing",
            dependencies: [
                "Chappie", "ChappieService", "ChappieNet", "ChappieCore", "ChappieDaemonClient", "ChappieFront", "ChappieSystem",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOExtras", package: "swift-nio-extras"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
            ],
            swiftSettings: swiftSettings
        ),

        // The stand-in for auth.openai.com and chatgpt.com/backend-api. Imports no chappie library.
        .target(
            name: "ChappieEmulator",
            dependencies: [
                "CSodium", "CZstd",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "NIOHTTPTypesHTTP1", package: "swift-nio-extras"),
                .product(name: "WSCore", package: "swift-websocket"),
                .product(name: "WSCompression", package: "swift-websocket"),
                .product(name: "CompressNIO", package: "compress-nio"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),

        // Executables. `chappie` is the front: it serves the everyday reads (ChappieFront) and execs
        // `chappie-full` with the same arguments for everything else. `chappie-full` parses and prints
        // only: it reaches the store through ChappieService (never ChappieStore or ChappieVault), and
        // does not link Hummingbird.
        .executableTarget(
            name: "chappie",
            dependencies: ["ChappieFront"],
            path: "Sources/chappie-front",
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "chappie-full",
            dependencies: [
                "ChappieService", "Chappie", "ChappieCore", "ChappieText", "ChappieSystem", "ChappieDaemonClient", "CSignals", "CProcess",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            path: "Sources/chappie",
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "chappie-emulator",
            dependencies: [
                "ChappieEmulator",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "chappie-example-host-tools",
            dependencies: ["Chappie"],
            path: "Examples/HostTools",
            swiftSettings: swiftSettings
        ),
        // The SDK written as the seed documents' snippets write it (docs/sdk.md, "Examples").
        .executableTarget(
            name: "chappie-example-seed-snippets",
            dependencies: ["Chappie"],
            path: "Examples/SeedSnippets",
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "chappie-bench",
            dependencies: [
                "ChappieNet", "ChappieEmulator", "ChappieStore", "ChappieVault", "ChappieCore", "Chappie", "ChappieService", "ChappieDaemonClient",
                // The tests' PostgreSQL server, for the team pool's rows.
                "ChappieTestSupport",
                .product(name: "GRDB", package: "GRDB.swift"),
            ],
            path: "Benchmarks/chappie-bench",
            swiftSettings: swiftSettings
        ),

        // Tests.
        .target(
            name: "ChappieTestSupport",
            dependencies: ["ChappieEmulator", "ChappieNet", "ChappieVault", "ChappieCore", .product(name: "GRDB", package: "GRDB.swift")],
            path: "Tests/ChappieTestSupport",
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "ChappieNetTests",
            dependencies: ["ChappieNet", "ChappieEmulator", "ChappieTestSupport"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "ChappieEmulatorTests",
            dependencies: [
                "ChappieEmulator", "ChappieNet", "ChappieTestSupport", "CSodium", "CZstd",
                .product(name: "CompressNIO", package: "compress-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "ChappieFrontTests",
            dependencies: [
                "ChappieFront", "ChappieCore", "ChappieText", "ChappieStore", "ChappieVault", "ChappieFuzzing", "ChappieSystem", "ChappieStoreFormat",
                "ChappieTestSupport",
                .product(name: "GRDB", package: "GRDB.swift"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "ChappieCoreTests",
            dependencies: ["ChappieCore", "ChappieText", "ChappieTestSupport"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "ChappieVaultTests",
            dependencies: ["ChappieVault", "ChappieTestSupport"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "ChappieStoreTests",
            dependencies: [
                "ChappieStore", "ChappiePool", "ChappieVault", "ChappieCore", "ChappieStoreFormat", "ChappieTestSupport",
                .product(name: "GRDB", package: "GRDB.swift"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "ChappieTests",
            dependencies: [
                "Chappie", "ChappiePool", "ChappieStore", "ChappieVault", "ChappieNet", "ChappieEmulator", "ChappieTestSupport",
                .product(name: "GRDB", package: "GRDB.swift"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "ChappieServiceTests",
            dependencies: [
                "ChappieService", "ChappieStore", "ChappieVault", "ChappieCore", "Chappie", "ChappieTestSupport", "ChappieEmulator",
                "ChappieDaemonClient", "ChappieNet", "ChappieFuzzing", "ChappieSystem", .product(name: "SwiftCSV", package: "SwiftCSV"),
            ],
            swiftSettings: swiftSettings
        ),
        // The command line's own output (charts, tables), tested without running the binary.
        .testTarget(
            name: "chappieTests",
            dependencies: ["chappie-full", "ChappieCore"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "EndToEndTests",
            dependencies: [
                "ChappieTestSupport", "ChappieEmulator", "ChappieNet", "ChappieStore", "ChappieVault", "ChappieCore",
                .product(name: "GRDB", package: "GRDB.swift"),
            ],
            swiftSettings: swiftSettings
        ),
    ]
)

// `make fuzz` only (CHAPPIE_FUZZ=1, its own scratch path): the libFuzzer entry, built with
// `--sanitize fuzzer --sanitize address`. Without libFuzzer's own `main` it could not link, so an
// ordinary build does not see it.
if Context.environment["CHAPPIE_FUZZ"] != nil {
    package.products.append(.executable(name: "chappie-fuzz", targets: ["chappie-fuzz"]))
    package.targets.append(
        .executableTarget(
            name: "chappie-fuzz", dependencies: ["ChappieFuzzing"], path: "Fuzz/chappie-fuzz",
            swiftSettings: swiftSettings + [.unsafeFlags(["-parse-as-library"])]))
}
