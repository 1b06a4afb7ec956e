import Foundation
import XCTest

/// The shipped unit files, checked by systemd's own parser.
final class SystemdUnitTests: XCTestCase {
    func testUnitFiles_passSystemdAnalyzeVerifyWithoutComplaints() throws {
        let analyze = "/usr/bin/systemd-analyze"
        try XCTSkipUnless(FileManager.default.isExecutableFile(atPath: analyze), "systemd-analyze not installed")
        let directory = StackHarness.repositoryRoot + "/systemd"
        let units = try FileManager.default.contentsOfDirectory(atPath: directory)
            .filter { $0.hasSuffix(".service") || $0.hasSuffix(".socket") }.sorted()
        XCTAssertEqual(units.count, 8)
        let result = try StackHarness.run(analyze, ["verify", "--man=no"] + units.map { directory + "/" + $0 })
        // verify exits 0 on unknown keys: any line but the missing installed binaries is a failure.
        let complaints = (result.stdout + result.stderr).split(separator: "\n")
            .filter { !$0.contains("is not executable") && !$0.contains("No such file or directory") }
        XCTAssertEqual(complaints, [], "systemd-analyze verify: \(complaints)")
    }
}
