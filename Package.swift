// swift-tools-version:6.1
//
// STOL — Species: Tree of Life, as a multi-process Linux service.
// One library target per concern; the six product executables (the four daemons,
// stol-client and stol-pipeline) are thin wiring. The other executables are not
// products: stol-bench (`make bench`) and the five fuzz-* targets (`make fuzz`).
// See README.md ("Architecture") for the map of targets to processes.

import PackageDescription

let arg: Target.Dependency = .product(name: "ArgumentParser", package: "swift-argument-parser")

let package = Package(
    name: "stol",
    products: [
        .executable(name: "stol-taxonomyd", targets: ["stol-taxonomyd"]),
        .executable(name: "stol-favoritesd", targets: ["stol-favoritesd"]),
        .executable(name: "stol-importd", targets: ["stol-importd"]),
        .executable(name: "stol-verifyd", targets: ["stol-verifyd"]),
        .executable(name: "stol-client", targets: ["stol-client"]),
        .executable(name: "stol-pipeline", targets: ["stol-pipeline"]),
    ],
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
    ],
    targets: [
        // MARK: System libraries and the one C shim
        .systemLibrary(name: "CSodium", pkgConfig: "libsodium", providers: [.apt(["libsodium-dev"])]),
        .systemLibrary(name: "CZlib", providers: [.apt(["zlib1g-dev"])]),
        /// zstd: a delta's frame is decompressed against its base (zstd's --patch-from).
        .systemLibrary(name: "CZstd", pkgConfig: "libzstd", providers: [.apt(["libzstd-dev"])]),
        .systemLibrary(name: "CSystemd", pkgConfig: "libsystemd", providers: [.apt(["libsystemd-dev"])]),
        /// glibc's malloc.h: `malloc_trim`, to give a released database's memory back.
        .systemLibrary(name: "CMalloc"),
        /// SCM_RIGHTS, SO_PEERCRED and friends: macros Swift cannot import.
        .target(name: "CSTOLSocket"),
        /// Landlock system calls and libseccomp (Debian libseccomp-dev) for the verifier's self-sandbox.
        .target(name: "CSTOLSandbox", linkerSettings: [.linkedLibrary("seccomp")]),
        /// A SQLite VFS that reads a database from an open descriptor (the verifier's unnamed scratch file).
        .target(name: "CSTOLSQLite", linkerSettings: [.linkedLibrary("sqlite3")]),

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
        /// What only daemons run: the two framed servers, connection limits, socket
        /// activation, sd_notify and the watchdog, logging, and the daemon skeleton
        /// (shared options, entry point, exit codes).
        .target(
            name: "STOLServer",
            dependencies: [
                "STOLTransport", "STOLProtocol", "STOLSandbox", "CSTOLSocket", "CSystemd", arg,
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
        /// The `.stol` container: header layout, digest, signature, gzip.
        .target(name: "STOLFormat", dependencies: ["CSodium", "CZlib", "CZstd", "STOLFileSystem"]),
        /// A process sandboxing itself: no_new_privs, Landlock, seccomp.
        .target(name: "STOLSandbox", dependencies: ["CSTOLSandbox"]),

        // MARK: One library per concern
        .target(name: "STOLTaxonomy", dependencies: ["STOLModel", "STOLProtocol", "STOLTransport", "STOLFileSystem", "CMalloc",
                                                     .product(name: "GRDB", package: "GRDB.swift"),
                                                     .product(name: "GRDBSQLite", package: "GRDB.swift"),
                                                     .product(name: "Logging", package: "swift-log")]),
        .target(name: "STOLFavorites", dependencies: ["STOLProtocol", "STOLTransport",
                                                      .product(name: "Logging", package: "swift-log"),
                                                      .product(name: "GRDB", package: "GRDB.swift"),
                                                      .product(name: "ServiceLifecycle", package: "swift-service-lifecycle")]),
        /// The import coordinator, the verifier and its sandbox policy, the reference database store.
        .target(name: "STOLImport", dependencies: ["STOLFormat", "STOLProtocol", "STOLTransport", "STOLModel",
                                                   "STOLFileSystem", "STOLSandbox", "CSTOLSandbox", "CSTOLSQLite",
                                                   .product(name: "GRDBSQLite", package: "GRDB.swift"),
                                                   .product(name: "Logging", package: "swift-log")]),
        .target(name: "STOLPipeline", dependencies: ["STOLModel", "STOLFormat",
                                                     .product(name: "GRDB", package: "GRDB.swift"),
                                                     .product(name: "GRDBSQLite", package: "GRDB.swift"),
                                                     .product(name: "Logging", package: "swift-log")]),
        /// The client's one call path: it speaks the transport, never runs a server.
        .target(name: "STOLClientKit", dependencies: ["STOLProtocol", "STOLTransport", "STOLModel",
                                                      .product(name: "SwiftProtobuf", package: "swift-protobuf")]),

        // MARK: Thin executables
        .executableTarget(name: "stol-taxonomyd", dependencies: ["STOLTaxonomy", "STOLServer", arg]),
        .executableTarget(name: "stol-favoritesd", dependencies: ["STOLFavorites", "STOLServer", arg]),
        .executableTarget(name: "stol-importd", dependencies: ["STOLImport", "STOLServer", "STOLTransport", arg]),
        .executableTarget(name: "stol-verifyd", dependencies: ["STOLImport", "STOLServer", "STOLTransport", arg]),
        .executableTarget(name: "stol-client", dependencies: ["STOLClientKit", "STOLModel", "STOLProtocol", "STOLTransport", arg,
                                                              .product(name: "SwiftProtobuf", package: "swift-protobuf")]),
        .executableTarget(name: "stol-pipeline", dependencies: ["STOLPipeline", "STOLFormat", "STOLModel", arg,
                                                                .product(name: "GRDB", package: "GRDB.swift"),
                                                                .product(name: "Logging", package: "swift-log")]),
        /// `make bench`: latency, throughput and memory through the real sockets.
        .executableTarget(name: "stol-bench", dependencies: [
            "STOLClientKit", "STOLTaxonomy", "STOLImport", "STOLFormat", "STOLModel", "STOLTransport",
            "STOLProtocol", "STOLTestFixtures", arg,
            .product(name: "SwiftProtobuf", package: "swift-protobuf"),
            .product(name: "GRDB", package: "GRDB.swift"),
            .product(name: "Logging", package: "swift-log")]),

        // MARK: Tests
        /// The one test-support kit: fixtures and data sets, seeded random (`STOL_TEST_SEED`),
        /// short temporary directories, `ChildProcess` (posix_spawn), waiting for an event;
        /// also the scratch directories and children of the fuzz targets and stol-bench. What
        /// needs XCTest is under `#if canImport(XCTest)`, so the static release build of
        /// stol-bench (`make build`), which has no XCTest, links the rest.
        .target(name: "STOLTestFixtures", dependencies: ["STOLModel", "STOLFormat", "CZlib",
                                                       .product(name: "GRDB", package: "GRDB.swift"),
                                                       .product(name: "Logging", package: "swift-log")],
                path: "Tests/STOLTestFixtures"),
        .testTarget(name: "STOLServerTests", dependencies: [
            "STOLServer", "STOLTransport", "STOLProtocol", "CSTOLSocket", "STOLTestFixtures",
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOEmbedded", package: "swift-nio"),
            .product(name: "NIOTestUtils", package: "swift-nio"),
            .product(name: "Logging", package: "swift-log"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            .product(name: "SwiftProtobuf", package: "swift-protobuf"),
        ]),
        /// The client's own code without a server: its JSON lines against swift-protobuf's encoder.
        .testTarget(name: "STOLClientKitTests", dependencies: ["STOLClientKit", "STOLProtocol", "STOLModel", "STOLTestFixtures",
                                                               .product(name: "SwiftProtobuf", package: "swift-protobuf")]),
        .testTarget(name: "STOLPipelineTests", dependencies: ["STOLTestFixtures", "STOLPipeline", "STOLModel",
                                                              .product(name: "GRDB", package: "GRDB.swift"),
                                                              .product(name: "Logging", package: "swift-log")]),
        .testTarget(name: "STOLTaxonomyTests", dependencies: ["STOLTestFixtures", "STOLTaxonomy", "STOLPipeline", "STOLProtocol", "STOLTransport", "STOLModel",
                                                              .product(name: "Logging", package: "swift-log"),
                                                              .product(name: "GRDB", package: "GRDB.swift")]),
        .testTarget(name: "STOLFavoritesTests", dependencies: ["STOLFavorites", "STOLProtocol", "STOLServer", "STOLTransport", "STOLTestFixtures",
                                                               .product(name: "GRDB", package: "GRDB.swift"),
                                                               .product(name: "Logging", package: "swift-log"),
                                                               .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                                                               .product(name: "SwiftProtobuf", package: "swift-protobuf")]),
        .testTarget(name: "STOLImportTests", dependencies: ["STOLImport", "STOLFormat", "STOLProtocol", "STOLServer", "STOLTransport", "CSTOLSocket",
                                                            "STOLSandbox", "STOLModel", "STOLFileSystem", "STOLTestFixtures",
                                                            "STOLPipeline",
                                                            .product(name: "GRDB", package: "GRDB.swift"),
                                                            .product(name: "Logging", package: "swift-log")]),
        .testTarget(name: "STOLIntegrationTests", dependencies: ["STOLProtocol", "STOLServer", "STOLTransport", "STOLFormat", "STOLModel",
                                                                 "STOLTestFixtures",
                                                                 .product(name: "SwiftProtobuf", package: "swift-protobuf"),
                                                                 .product(name: "GRDB", package: "GRDB.swift")]),

        // MARK: Fuzzing (README, "Fuzzing")
        /// The fuzz targets: one type per target, each running one input through the
        /// code a daemon runs on untrusted bytes and checking its invariants. Shared by
        /// the libFuzzer executables, their replayers and the regression tests.
        .target(name: "STOLFuzzTargets", dependencies: [
            "STOLServer", "STOLTransport", "STOLProtocol", "STOLModel", "STOLTaxonomy", "STOLFavorites", "STOLImport", "STOLFormat",
            "STOLPipeline", "STOLTestFixtures", "CSTOLSandbox",
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOEmbedded", package: "swift-nio"),
            .product(name: "SwiftProtobuf", package: "swift-protobuf"),
            .product(name: "GRDB", package: "GRDB.swift"),
            .product(name: "Logging", package: "swift-log")],
                path: "Tests/fuzz/STOLFuzzTargets"),
        /// One executable per target: built with `-sanitize=fuzzer -D FUZZING` (`make fuzz`)
        /// it is a libFuzzer binary; built normally, a replayer of the files it is given.
        .executableTarget(name: "fuzz-frame-decoder", dependencies: ["STOLFuzzTargets"], path: "Tests/fuzz/fuzzers/fuzz-frame-decoder"),
        .executableTarget(name: "fuzz-taxonomy", dependencies: ["STOLFuzzTargets"], path: "Tests/fuzz/fuzzers/fuzz-taxonomy"),
        .executableTarget(name: "fuzz-favorites", dependencies: ["STOLFuzzTargets"], path: "Tests/fuzz/fuzzers/fuzz-favorites"),
        .executableTarget(name: "fuzz-import", dependencies: ["STOLFuzzTargets"], path: "Tests/fuzz/fuzzers/fuzz-import"),
        .executableTarget(name: "fuzz-verifier", dependencies: ["STOLFuzzTargets"], path: "Tests/fuzz/fuzzers/fuzz-verifier"),
        .testTarget(name: "STOLFuzzTests", dependencies: ["STOLFuzzTargets", "STOLProtocol"]),
    ]
)

