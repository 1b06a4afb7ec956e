import Foundation
import XCTest

/// The thin client stays thin: `stol-client` speaks the transport (framing,
/// `FrameSocket`, peer credentials) and links none of the server side: no
/// NIOPosix event loops, no NIOExtras, no ServiceLifecycle, no libsystemd, no
/// STOLServer. Checked on the built binary and, under `make test`, on the
/// installed (stripped) one: Swift keeps the mangled names of the modules whose
/// types a binary uses in its metadata, which stripping leaves in place.
final class ThinClientLinkTests: XCTestCase {
    /// Mangled module prefixes as they appear in Swift type metadata.
    private static let serverModules = ["8NIOPosix", "9NIOExtras", "16ServiceLifecycle", "10STOLServer"]

    private func binaries(_ name: String, installedUnder directory: String) -> [String] {
        var found = [StackHarness.binDirectory + "/" + name]
        if let root = ProcessInfo.processInfo.environment["STOL_INSTALL_ROOT"] {
            found.append(root + directory + "/" + name)
        }
        return found.filter { FileManager.default.fileExists(atPath: $0) }
    }

    private func mentions(_ path: String, _ needle: String) throws -> Bool {
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        return data.range(of: Data(needle.utf8)) != nil
    }

    func testClient_linksNoServerModuleAndNoLibsystemd() throws {
        let clients = binaries("stol-client", installedUnder: "/usr/bin")
        XCTAssertFalse(clients.isEmpty)
        for client in clients {
            for module in Self.serverModules {
                XCTAssertFalse(try mentions(client, module), "\(client) contains the server module \(module)")
            }
            XCTAssertTrue(try mentions(client, "13STOLTransport"), "\(client): expected the transport module")
            let ldd = try StackHarness.run("/usr/bin/ldd", [client])
            XCTAssertEqual(ldd.status, 0, ldd.stderr)
            XCTAssertFalse(ldd.stdout.contains("libsystemd"), "\(client) links libsystemd:\n\(ldd.stdout)")
        }
    }

    /// The control: the same check finds the server modules in a daemon, so a
    /// client that pulled them in would be caught.
    func testDaemon_doesContainTheServerModules_soTheCheckCanFail() throws {
        let daemons = binaries("stol-taxonomyd", installedUnder: "/usr/libexec/stol")
        XCTAssertFalse(daemons.isEmpty)
        for daemon in daemons {
            XCTAssertTrue(try mentions(daemon, "8NIOPosix"), daemon)
            XCTAssertTrue(try mentions(daemon, "16ServiceLifecycle"), daemon)
            let ldd = try StackHarness.run("/usr/bin/ldd", [daemon])
            XCTAssertTrue(ldd.stdout.contains("libsystemd"), ldd.stdout)
        }
    }
}
