import Foundation
import XCTest

/// The link graph follows the privilege boundary (issue 22): `stol-importd`, the
/// trusted coordinator, links no parser of untrusted bytes (the container with its
/// gzip, the verifier with its database checks); `stol-verifyd`, the sandboxed
/// parser, links no coordinator, no swift-nio server, no swift-service-lifecycle and
/// no libsystemd. Checked like ``ThinClientLinkTests``, on the built binaries and,
/// under `make test`, on the installed (stripped) ones: Swift keeps the mangled
/// names of the modules and types a binary uses in its metadata. `make
/// check-modules` checks the release build symbol by symbol (`Tests/tools/check_binaries.py`).
final class PrivilegeBoundaryLinkTests: XCTestCase {
    private func binaries(_ name: String) -> [String] {
        var found = [StackHarness.binDirectory + "/" + name]
        if let root = ProcessInfo.processInfo.environment["STOL_INSTALL_ROOT"] {
            found.append(root + "/usr/libexec/stol/" + name)
        }
        return found.filter { FileManager.default.fileExists(atPath: $0) }
    }

    private func mentions(_ path: String, _ needle: String) throws -> Bool {
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        return data.range(of: Data(needle.utf8)) != nil
    }

    private func libraries(_ path: String) throws -> String {
        let ldd = try StackHarness.run("/usr/bin/ldd", [path])
        XCTAssertEqual(ldd.status, 0, ldd.stderr)
        return ldd.stdout
    }

    func testVerifier_linksNoCoordinatorNoServerStackAndNoLibsystemd() throws {
        let verifiers = binaries("stol-verifyd")
        XCTAssertFalse(verifiers.isEmpty)
        for verifier in verifiers {
            for name in ["10STOLImport", "17ImportCoordinator", "22ReferenceDatabaseStore", "10STOLServer", "8NIOPosix",
                         "9NIOExtras", "16ServiceLifecycle"] {
                XCTAssertFalse(try mentions(verifier, name), "\(verifier) contains \(name)")
            }
            XCTAssertTrue(try mentions(verifier, "12STOLVerifier"), "\(verifier): expected the verifier's module")
            XCTAssertFalse(try libraries(verifier).contains("libsystemd"), "\(verifier) links libsystemd")
        }
    }

    func testCoordinator_linksNoParserOfUntrustedBytes() throws {
        let coordinators = binaries("stol-importd")
        XCTAssertFalse(coordinators.isEmpty)
        for coordinator in coordinators {
            for name in ["13STOLContainer", "8StolFileO", "12GzipInflater", "12STOLVerifier", "14DatabaseChecks",
                         "15VerifierService"] {
                XCTAssertFalse(try mentions(coordinator, name), "\(coordinator) contains \(name)")
            }
            XCTAssertTrue(try mentions(coordinator, "17ImportCoordinator"), "\(coordinator): expected the coordinator")
            XCTAssertFalse(try libraries(coordinator).contains("libz.so"), "\(coordinator) links zlib")
        }
    }

    /// The control: the same checks find what they look for where it is, so a
    /// binary that pulled it in would be caught.
    func testTheOtherSide_holdsWhatEachCheckLooksFor_soTheChecksCanFail() throws {
        for verifier in binaries("stol-verifyd") {
            XCTAssertTrue(try mentions(verifier, "13STOLContainer"), verifier)
            XCTAssertTrue(try mentions(verifier, "14DatabaseChecks"), verifier)
            XCTAssertTrue(try libraries(verifier).contains("libz.so"), verifier)
        }
        for coordinator in binaries("stol-importd") {
            XCTAssertTrue(try mentions(coordinator, "10STOLImport"), coordinator)
            XCTAssertTrue(try mentions(coordinator, "16ServiceLifecycle"), coordinator)
            XCTAssertTrue(try libraries(coordinator).contains("libsystemd"), coordinator)
        }
    }
}
