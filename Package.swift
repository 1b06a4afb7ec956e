// swift-tools-version:6.1
//
// STOL — Species: Tree of Life, as a multi-process Linux service.
// One library target per concern; the seven product executables (the four daemons,
// stol-client, stol-pipeline and stol-web) are thin wiring. This graph is what is installed and
// tested, the same for every build: the development tools (stol-bench for `make bench`,
// the five fuzz-* targets for `make fuzz`) are a package of their own, Tools/Package.swift,
// which uses the libraries below through their library products. See README.md
// ("Architecture") for the map of targets to processes.
//
// The link graph follows the privilege boundary (issue 22): stol-importd, the
// trusted coordinator, links no parser of untrusted bytes (STOLContainer's gzip
// and StolFile.verify, STOLVerifier's database checks and SQLite descriptor VFS);
// stol-verifyd, the sandboxed parser, links no coordinator, no swift-nio server,
// no swift-service-lifecycle and no libsystemd (STOLDaemon, not STOLServer).
// `make check-modules` checks the graph here and in the release binaries.

import PackageDescription

let arg: Target.Dependency = .product(name: "ArgumentParser", package: "swift-argument-parser")
/// The environment-armed test hooks (`STOL_TEST_PAUSE_AT`, `STOL_TEST_SANDBOX_PROBE`,
/// `STOL_TEST_HANG_ON_SIGUSR2`) are compiled only in debug builds (what `swift test`
/// runs) and in `make test`'s build of the tests, which passes `-DSTOL_TEST_HOOKS` to its
/// unoptimized release configuration and installs it for the systemd boot test. The release build that
/// `make install` installs has none of them, nor their variables' names.
let testHooks: [SwiftSetting] = [.define("STOL_TEST_HOOKS", .when(configuration: .debug))]

/// The libraries the development tools of Tools/Package.swift use (stol-bench, the fuzz
/// targets): library products for them alone, never installed.
let toolLibraries = ["STOLClientKit", "STOLTaxonomy", "STOLVerifier", "STOLContainer", "STOLFormat", "STOLModel",
                     "STOLTransport", "STOLProtocol", "STOLTestFixtures", "STOLFuzzTargets"]

let package = Package(
    name: "stol",
    products: [
        .executable(name: "stol-taxonomyd", targets: ["stol-taxonomyd"]),
        .executable(name: "stol-favoritesd", targets: ["stol-favoritesd"]),
        .executable(name: "stol-importd", targets: ["stol-importd"]),
        .executable(name: "stol-verifyd", targets: ["stol-verifyd"]),
        .executable(name: "stol-client", targets: ["stol-client"]),
        .executable(name: "stol-pipeline", targets: ["stol-pipeline"]),
        .executable(name: "stol-web", targets: ["stol-web"]),
    ] + toolLibraries.map { .library(name: $0, targets: [$0]) },
    // An application pins what it ships: exact versions (Package.resolved is not
    // committed; README, "Deploying on a systemd machine", says why).
    dependencies: [
        .package(url: "https://github.com/apple/swift-nio", exact: "2.101.3"),
        .package(url: "https://github.com/apple/swift-nio-extras", exact: "1.35.2"),
        .package(url: "https://github.com/apple/swift-protobuf", exact: "1.39.0"),
        .package(url: "https://github.com/apple/swift-argument-parser", exact: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", exact: "1.16.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", exact: "2.13.0"),
        .package(url: "https://github.com/groue/GRDB.swift", exact: "7.10.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", exact: "2.28.1"),
        .package(url: "https://github.com/apple/swift-http-types.git", exact: "1.8.0"),
    ],
    targets: [
        // MARK: System libraries and the one C shim
        .systemLibrary(name: "CSodium", pkgConfig: "libsodium", providers: [.apt(["libsodium-dev"])]),
        .systemLibrary(name: "CLibCrypto", pkgConfig: "libcrypto", providers: [.apt(["libssl-dev"])]),
        .systemLibrary(name: "CZlib", providers: [.apt(["zlib1g-dev"])]),
        /// zstd: a delta's frame is decompressed against its base (zstd's --patch-from).
        .systemLibrary(name: "CZstd", pkgConfig: "libzstd", providers: [.apt(["libzstd-dev"])]),
        .systemLibrary(name: "CSystemd", pkgConfig: "libsystemd", providers: [.apt(["libsystemd-dev"])]),
        /// mimalloc (Debian libmimalloc-dev), which replaces malloc in the serving daemons, and SQLite's
        /// allocator settings (`MemoryPolicy`).
        .systemLibrary(name: "CMemory", providers: [.apt(["libmimalloc-dev"])]),
        /// SCM_RIGHTS, SO_PEERCRED and friends: macros Swift cannot import.
        .target(name: "CSTOLSocket"),
        /// Landlock system calls and libseccomp (Debian libseccomp-dev) for the verifier's self-sandbox.
        .target(name: "CSTOLSandbox", linkerSettings: [.linkedLibrary("seccomp")]),
        /// Whose TCP connection it is (NETLINK_SOCK_DIAG): the web app's alone, the daemons are Unix-socket only.
        .target(name: "CSTOLWebPeer"),
        /// A SQLite VFS that reads a database from an open descriptor (the verifier's unnamed scratch file), and row
        /// deltas (the session extension's changesets; zstd streams them).
        .target(name: "CSTOLSQLite", linkerSettings: [.linkedLibrary("sqlite3"), .linkedLibrary("zstd")]),

        // MARK: Shared pieces (used by every daemon, tested once)
        /// Generated protobuf messages of the four services plus the typed error, and the
        /// model's values on the wire (provenance).
        .target(
            name: "STOLProtocol",
            dependencies: ["STOLModel", .product(name: "SwiftProtobuf", package: "swift-protobuf")]
        ),
        /// What the client and the daemons both speak: frame encoding and decoding,
        /// `FrameSocket` (blocking frames with descriptor passing), peer credentials,
        /// runtime paths. NIOCore at most (its `ByteBuffer`), so the client stays thin.
        .target(
            name: "STOLTransport",
            dependencies: [
                "STOLProtocol", "CSTOLSocket",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        /// What every daemon runs, the sandboxed verifier included: the blocking framed
        /// server (a thread per connection), connection limits, socket activation read
        /// from LISTEN_FDS (no libsystemd), logging, the heartbeat, and the daemon
        /// skeleton's start (shared options, identities, the socket, exit codes). No
        /// swift-nio server, no swift-service-lifecycle, no libsystemd.
        .target(
            name: "STOLDaemon",
            dependencies: [
                "STOLTransport", "STOLProtocol", "STOLSandbox", "CSTOLSocket", arg,
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: testHooks
        ),
        /// What only the serving daemons (taxonomy, favourites, import) run on top of
        /// STOLDaemon: the swift-nio server, the service group (`DaemonMain.run`,
        /// swift-service-lifecycle), sd_notify and the watchdog (libsystemd).
        .target(
            name: "STOLServer",
            dependencies: [
                "STOLDaemon", "STOLTransport", "STOLProtocol", "STOLSandbox", "CSTOLSocket", "CSystemd", "CMemory", arg,
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOExtras", package: "swift-nio-extras"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        /// Domain vocabulary shared by the read model and the pipeline: ranks, the schema.
        .target(name: "STOLModel"),
        /// Atomic, durable file replacement (temp file, fsync, rename, fsync of the directory).
        .target(name: "STOLFileSystem"),
        /// What the coordinator may know of the `.stol` format without parsing one: the
        /// header layout, SHA-256 (libcrypto) and Ed25519 (libsodium), key files, the size limits
        /// and the `fstat` size check, the format's errors. No zlib.
        .target(name: "STOLFormat", dependencies: ["CSodium", "CLibCrypto", "STOLFileSystem", "STOLModel"]),
        /// The `.stol` container itself: `StolFile` (verify, write) and gzip (zlib).
        /// Linked by the verifier, the pipeline and the tools, never by stol-importd.
        /// Deltas: a zstd frame against the installed base (`ZstdDelta`, `DeltaWorkspace`).
        .target(name: "STOLContainer", dependencies: ["STOLFormat", "STOLModel", "STOLFileSystem", "CZlib", "CZstd", "CSTOLSQLite"]),
        /// A process sandboxing itself: no_new_privs, Landlock, seccomp; the test-only probe.
        .target(name: "STOLSandbox", dependencies: ["CSTOLSandbox"], swiftSettings: testHooks),

        // MARK: One library per concern
        .target(name: "STOLTaxonomy", dependencies: ["STOLModel", "STOLProtocol", "STOLTransport", "STOLFileSystem", "CMemory",
                                                     .product(name: "GRDB", package: "GRDB.swift"),
                                                     .product(name: "GRDBSQLite", package: "GRDB.swift"),
                                                     .product(name: "Logging", package: "swift-log")]),
        .target(name: "STOLFavorites", dependencies: ["STOLProtocol", "STOLTransport",
                                                      .product(name: "Logging", package: "swift-log"),
                                                      .product(name: "GRDB", package: "GRDB.swift"),
                                                      .product(name: "ServiceLifecycle", package: "swift-service-lifecycle")]),
        /// What the import coordinator and the verifier share: `ImportError` and the
        /// limits, the trusted key, the test pause points, the facts of a database and
        /// the reads of its own tables (shape, provenance) through SQLite by path.
        .target(name: "STOLImportCore", dependencies: ["STOLFormat", "STOLProtocol", "STOLModel",
                                                       .product(name: "GRDBSQLite", package: "GRDB.swift")],
                swiftSettings: testHooks),
        /// The import coordinator (stol-importd): `ImportCoordinator`, the reference
        /// database store (the only writer of `ActivationState`). Never parses untrusted bytes.
        .target(name: "STOLImport", dependencies: ["STOLImportCore", "STOLFormat", "STOLProtocol", "STOLTransport", "STOLModel",
                                                   "STOLFileSystem",
                                                   .product(name: "Logging", package: "swift-log")]),
        /// The verifier (stol-verifyd): `VerifierService`, the database checks, the
        /// SQLite VFS reading its unnamed scratch file, its sandbox policy.
        .target(name: "STOLVerifier", dependencies: ["STOLImportCore", "STOLContainer", "STOLFormat", "STOLProtocol",
                                                     "STOLTransport", "STOLModel", "STOLSandbox", "CSTOLSandbox", "CSTOLSQLite",
                                                     .product(name: "GRDBSQLite", package: "GRDB.swift"),
                                                     .product(name: "Logging", package: "swift-log")]),
        .target(name: "STOLPipeline", dependencies: ["STOLModel", "STOLFormat",
                                                     .product(name: "GRDB", package: "GRDB.swift"),
                                                     .product(name: "GRDBSQLite", package: "GRDB.swift"),
                                                     .product(name: "Logging", package: "swift-log")]),
        /// The client's one call path: it speaks the transport, never runs a server.
        /// `stol-client serve`: one user's stack without root or systemd (the socket activation
        /// the units do, done by a small supervisor of the user's).
        .target(name: "STOLPrivateStack", dependencies: ["STOLTransport", "CSTOLSocket"]),
        .target(name: "STOLClientKit", dependencies: ["STOLProtocol", "STOLTransport", "STOLModel", "CZlib",
                                                      .product(name: "SwiftProtobuf", package: "swift-protobuf")]),

        /// The web app (`stol-web`): Hummingbird's HTTP/1 and router on sockets it makes or is
        /// handed, each connection's owner checked by the kernel; its pages (Assets/), compiled
        /// in; every API call one protocol request through STOLClientKit. No daemon links it.
        .target(name: "STOLWeb", dependencies: ["STOLClientKit", "STOLProtocol", "STOLTransport", "CSTOLSocket", "CSTOLWebPeer",
                                                .product(name: "Hummingbird", package: "hummingbird"),
                                                .product(name: "HummingbirdCore", package: "hummingbird"),
                                                .product(name: "HTTPTypes", package: "swift-http-types"),
                                                .product(name: "NIOCore", package: "swift-nio"),
                                                .product(name: "NIOPosix", package: "swift-nio"),
                                                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                                                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                                                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
                                                .product(name: "Logging", package: "swift-log")],
                resources: ["index.html", "app.js", "app.css", "icon.svg"].map { .embedInCode("Assets/" + $0) }),

        // MARK: Thin executables
        .executableTarget(name: "stol-taxonomyd", dependencies: ["STOLTaxonomy", "STOLServer", "STOLDaemon", arg]),
        .executableTarget(name: "stol-favoritesd", dependencies: ["STOLFavorites", "STOLServer", "STOLDaemon", arg]),
        .executableTarget(name: "stol-importd", dependencies: ["STOLImport", "STOLImportCore", "STOLServer", "STOLDaemon",
                                                               "STOLTransport", arg],
                          swiftSettings: testHooks),
        .executableTarget(name: "stol-verifyd", dependencies: ["STOLVerifier", "STOLImportCore", "STOLDaemon", "STOLTransport", arg],
                          swiftSettings: testHooks),
        .executableTarget(name: "stol-client", dependencies: ["STOLClientKit", "STOLPrivateStack", "STOLModel", "STOLProtocol", "STOLTransport",
                                                              "STOLFileSystem", arg,
                                                              .product(name: "SwiftProtobuf", package: "swift-protobuf")]),
        .executableTarget(name: "stol-web", dependencies: ["STOLWeb", "STOLTransport", "STOLModel", arg,
                                                           .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                                                           .product(name: "Logging", package: "swift-log")]),
        .executableTarget(name: "stol-pipeline", dependencies: ["STOLPipeline", "STOLTaxonomy", "STOLFormat", "STOLContainer", "STOLModel", arg,
                                                                .product(name: "GRDB", package: "GRDB.swift"),
                                                                .product(name: "Logging", package: "swift-log")]),

        // MARK: Tests
        /// The one test-support kit: fixtures and data sets, seeded random (`STOL_TEST_SEED`),
        /// short temporary directories, `ChildProcess` (posix_spawn), waiting for an event;
        /// also the scratch directories and children of the fuzz targets and stol-bench. What
        /// needs XCTest is under `#if canImport(XCTest)`, so the static release build
        /// (`make build`, `make bench`), which has no XCTest, builds the rest.
        .target(name: "STOLTestFixtures", dependencies: ["STOLModel", "STOLFormat", "STOLContainer", "STOLProtocol", "STOLTransport", "CZlib",
                                                       .product(name: "SwiftProtobuf", package: "swift-protobuf"),
                                                       .product(name: "GRDB", package: "GRDB.swift"),
                                                       .product(name: "Logging", package: "swift-log")],
                path: "Tests/STOLTestFixtures"),
        .testTarget(name: "STOLServerTests", dependencies: [
            "STOLServer", "STOLDaemon", "STOLTransport", "STOLProtocol", "CSTOLSocket", "STOLTestFixtures",
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOEmbedded", package: "swift-nio"),
            .product(name: "Logging", package: "swift-log"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            .product(name: "SwiftProtobuf", package: "swift-protobuf"),
        ]),
        /// The shared model's own code: the one tree, Newick, rank filters, release names, sorted ids.
        .testTarget(name: "STOLWebTests", dependencies: ["STOLWeb", "STOLTestFixtures", "STOLTransport",
                                                      .product(name: "Hummingbird", package: "hummingbird"),
                                                      .product(name: "Logging", package: "swift-log")]),
        .testTarget(name: "STOLModelTests", dependencies: ["STOLModel", "STOLTestFixtures"]),
        /// The transport's own code: frames encoded and decoded, FrameSocket, peer credentials,
        /// the protocol's vectors, the rate-limited log, paths, descriptors, connection watches.
        .testTarget(name: "STOLTransportTests", dependencies: [
            "STOLTransport", "STOLProtocol", "STOLTestFixtures",
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOEmbedded", package: "swift-nio"),
            .product(name: "NIOTestUtils", package: "swift-nio"),
            .product(name: "Logging", package: "swift-log"),
            .product(name: "SwiftProtobuf", package: "swift-protobuf"),
        ]),
        /// The client's own code without a server: its JSON lines against swift-protobuf's encoder, its
        /// batches (input, cuts, order) against a service a test thread plays on a real socket.
        .testTarget(name: "STOLClientKitTests", dependencies: ["STOLClientKit", "STOLProtocol", "STOLModel", "STOLTestFixtures",
                                                               "STOLTransport", "CSTOLSocket",
                                                               .product(name: "SwiftProtobuf", package: "swift-protobuf")]),
        .testTarget(name: "STOLPipelineTests", dependencies: ["STOLTestFixtures", "STOLPipeline", "STOLModel",
                                                              .product(name: "GRDB", package: "GRDB.swift"),
                                                              .product(name: "Logging", package: "swift-log")]),
        .testTarget(name: "STOLTaxonomyTests", dependencies: ["STOLTestFixtures", "STOLTaxonomy", "STOLPipeline", "STOLProtocol", "STOLTransport", "STOLModel",
                                                              .product(name: "Logging", package: "swift-log"),
                                                              .product(name: "GRDB", package: "GRDB.swift")]),
        .testTarget(name: "STOLFavoritesTests", dependencies: ["STOLFavorites", "STOLProtocol", "STOLServer", "STOLDaemon", "STOLTransport",
                                                               "STOLTestFixtures",
                                                               .product(name: "GRDB", package: "GRDB.swift"),
                                                               .product(name: "Logging", package: "swift-log"),
                                                               .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                                                               .product(name: "SwiftProtobuf", package: "swift-protobuf")]),
        .testTarget(name: "STOLImportTests", dependencies: ["STOLImport", "STOLImportCore", "STOLVerifier", "STOLFormat", "STOLContainer",
                                                            "STOLProtocol", "STOLServer", "STOLDaemon", "STOLTransport", "CSTOLSocket",
                                                            "STOLSandbox", "STOLModel", "STOLFileSystem", "STOLTestFixtures",
                                                            "STOLPipeline",
                                                            .product(name: "GRDB", package: "GRDB.swift"),
                                                            .product(name: "Logging", package: "swift-log")]),
        .testTarget(name: "STOLIntegrationTests", dependencies: ["STOLProtocol", "STOLServer", "STOLTransport", "STOLFormat", "STOLContainer", "STOLModel", "STOLClientKit", "STOLFileSystem",
                                                                 "STOLTestFixtures", "CSTOLSocket",
                                                                 .product(name: "SwiftProtobuf", package: "swift-protobuf"),
                                                                 .product(name: "GRDB", package: "GRDB.swift")]),

        // MARK: Fuzzing (README, "Fuzzing")
        /// The fuzz targets: one type per target, each running one input through the
        /// code a daemon runs on untrusted bytes and checking its invariants. Shared by
        /// the libFuzzer executables and their replayers (Tools/Sources/fuzz-*) and the
        /// regression tests.
        .target(name: "STOLFuzzTargets", dependencies: [
            "STOLServer", "STOLTransport", "STOLProtocol", "STOLModel", "STOLTaxonomy", "STOLFavorites", "STOLImport", "STOLImportCore",
            "STOLVerifier", "STOLFormat", "STOLContainer", "STOLPipeline", "STOLTestFixtures", "CSTOLSandbox",
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOEmbedded", package: "swift-nio"),
            .product(name: "SwiftProtobuf", package: "swift-protobuf"),
            .product(name: "GRDB", package: "GRDB.swift"),
            .product(name: "Logging", package: "swift-log")],
                path: "Tests/fuzz/STOLFuzzTargets"),
        .testTarget(name: "STOLFuzzTests", dependencies: ["STOLFuzzTargets", "STOLProtocol"]),
    ]
)
