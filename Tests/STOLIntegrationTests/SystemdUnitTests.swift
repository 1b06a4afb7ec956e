import Foundation
import STOLTestFixtures
import XCTest

/// The shipped unit files, checked by systemd's own tools (the system test checks
/// them again against the installed layout).
final class SystemdUnitTests: XCTestCase {
    private let analyze = "/usr/bin/systemd-analyze"
    private let directory = StackHarness.repositoryRoot + "/systemd"

    private func units() throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: directory)
            .filter { $0.hasSuffix(".service") || $0.hasSuffix(".socket") || $0.hasSuffix(".target") }.sorted()
    }

    func testUnitFiles_passSystemdAnalyzeVerifyWithoutComplaints() throws {
        try requireExecutable(analyze, debianPackage: "systemd")
        let units = try units()
        XCTAssertEqual(units.count, 9, "4 sockets, 4 services, stol.target: \(units)")
        let result = try StackHarness.run(analyze, ["verify", "--man=no"] + units.map { directory + "/" + $0 })
        // verify exits 0 on unknown keys: any line but the missing installed binaries is a failure.
        let complaints = (result.stdout + result.stderr).split(separator: "\n")
            .filter { !$0.contains("is not executable") && !$0.contains("No such file or directory") }
        XCTAssertEqual(complaints, [], "systemd-analyze verify: \(complaints)")
    }

    /// `systemd-analyze security --offline=true`: every service at or under 1.0 ("SAFE").
    func testEveryService_scoresSafe_atMostOnePointZero() throws {
        try requireExecutable(analyze, debianPackage: "systemd")
        let services = try units().filter { $0.hasSuffix(".service") }
        XCTAssertEqual(services.count, 4)
        for service in services {
            let result = try StackHarness.run(analyze, ["security", "--offline=true", directory + "/" + service])
            let line = (result.stdout + result.stderr).split(separator: "\n").first { $0.contains("Overall exposure level") } ?? ""
            let score = line.split(separator: ":").last?.split(separator: " ").first.flatMap { Double($0) }
            print("systemd-analyze security --offline=true: \(line.replacingOccurrences(of: "→ ", with: ""))")
            XCTAssertNotNil(score, "\(service): no score in \(result.stdout) \(result.stderr)")
            XCTAssertLessThanOrEqual(score ?? 10, 1.0, "\(service) is exposed: \(line)")
        }
    }
}
