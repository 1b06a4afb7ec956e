// swift-tools-version:6.1
//
// STOL's development tools, a package apart from the one they measure and fuzz
// (../Package.swift), whose graph is then only what is installed and tested:
// - stol-bench (`make bench`): latency, throughput and memory through the real sockets;
// - the five libFuzzer targets fuzz-* (`make fuzz`; README, "Fuzzing"): built with
//   `-sanitize=fuzzer -D FUZZING` each is a libFuzzer binary, built normally a replayer
//   of the files it is given.
// They use the root package's libraries through its library products. They build in
// directories of their own (`make build-bench`, `make fuzz-seeds`: .build-tools, which
// copies stol-bench beside the products, where it finds the daemons it starts;
// Tests/fuzz/run_fuzzers.sh: .build-fuzz): SwiftPM 6.3 sharing one
// with the root package compiles swift-protobuf again at each switch between the two.

import PackageDescription

let arg: Target.Dependency = .product(name: "ArgumentParser", package: "swift-argument-parser")

/// One of the root package's libraries (its library products are named after their modules).
func stol(_ module: String) -> Target.Dependency { .product(name: module, package: "stol") }

let package = Package(
    name: "stol-tools",
    dependencies: [
        .package(name: "stol", path: ".."),
        // The root package's exact versions, for the products these tools import themselves.
        .package(url: "https://github.com/apple/swift-protobuf", exact: "1.39.0"),
        .package(url: "https://github.com/apple/swift-argument-parser", exact: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", exact: "1.16.2"),
        .package(url: "https://github.com/groue/GRDB.swift", exact: "7.10.0"),
    ],
    targets: [
        .executableTarget(name: "stol-bench", dependencies: [
            stol("STOLClientKit"), stol("STOLTaxonomy"), stol("STOLVerifier"), stol("STOLContainer"), stol("STOLFormat"),
            stol("STOLModel"), stol("STOLTransport"), stol("STOLProtocol"), stol("STOLTestFixtures"), arg,
            .product(name: "SwiftProtobuf", package: "swift-protobuf"),
            .product(name: "GRDB", package: "GRDB.swift"),
            .product(name: "Logging", package: "swift-log")]),
        .executableTarget(name: "fuzz-frame-decoder", dependencies: [stol("STOLFuzzTargets")]),
        .executableTarget(name: "fuzz-taxonomy", dependencies: [stol("STOLFuzzTargets")]),
        .executableTarget(name: "fuzz-favorites", dependencies: [stol("STOLFuzzTargets")]),
        .executableTarget(name: "fuzz-import", dependencies: [stol("STOLFuzzTargets")]),
        .executableTarget(name: "fuzz-verifier", dependencies: [stol("STOLFuzzTargets")]),
    ]
)
