import STOLImport
import STOLSandbox
import STOLTestFixtures
import STOLTransport
import STOLVerifier
import XCTest

/// The sandbox's policy, checked without entering it (the test process must not
/// sandbox itself; the verifier binary's sandbox is probed from inside it by
/// `SandboxIntegrationTests`).
final class SandboxPolicyTests: XCTestCase {
    func testEnter_refusesAPolicyWhoseReadableRootContainsAProtectedPath_beforeChangingAnything() throws {
        let directory = try makeTemporaryDirectory(self, prefix: "stolimp")
        try FileManager.default.createDirectory(atPath: directory + "/state", withIntermediateDirectories: true)
        XCTAssertThrowsError(try Sandbox.enter(SandboxPolicy(readable: [directory], protected: [directory + "/state"]))) { error in
            guard case .policy = error as? SandboxError else { return XCTFail("\(error)") }
        }
        // Still unsandboxed: this process can create files next to it.
        XCTAssertTrue(FileManager.default.createFile(atPath: directory + "/after", contents: Data([1])))
    }

    func testVerifierPolicy_readsNoAncestorOfTheStateOrRuntimeDirectory_andWritesOnlyItsScratchFile() throws {
        let directory = try makeTemporaryDirectory(self, prefix: "stolimp")
        let scratch = try ScratchFile(directory: directory)
        // The installed place, a development checkout's (`make run`: <checkout>/state), a temporary one.
        for state in ["/var/lib/stol", Workspace.repositoryRoot + "/state", directory + "/state"] {
            let paths = RuntimePaths(runtimeDirectory: "/run/stol", stateDirectory: state, bundledDatabase: "/usr/share/stol/bundled.sqlite")
            let policy = VerifierSandbox.policy(paths: paths, scratch: scratch)
            for root in policy.readable + policy.readWritable {
                XCTAssertFalse(state.hasPrefix(root + "/") || state == root, "\(root) would expose \(state)")
                XCTAssertFalse("/run/stol".hasPrefix(root + "/"), "\(root) would expose the sockets")
            }
            XCTAssertEqual(policy.readWritable, ["/dev/null"])
            XCTAssertEqual(policy.readWritableDescriptors, [scratch.descriptor])
            XCTAssertEqual(policy.protected, [state, "/run/stol"])
        }
    }
}
