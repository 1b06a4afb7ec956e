import Foundation
import STOLModel
import STOLTestFixtures
import XCTest

/// The activation state as the taxonomy server reads it (``ActivationState/read(path:)``):
/// a missing, damaged or hostile file never makes it serve a database nobody activated.
final class ActivationStateTests: XCTestCase {
    private func state(_ text: String?) throws -> ActivationState {
        let path = try makeTemporaryDirectory(self) + "/activation.json"
        if let text { XCTAssertTrue(FileManager.default.createFile(atPath: path, contents: Data(text.utf8))) }
        return ActivationState.read(path: path)
    }

    func testAnActivatedRelease_serves_andDeactivatedItStaysRecorded() throws {
        let active = try state(#"{"useReferenceDB": true, "defaultRelease": "2024.9.7"}"#)
        XCTAssertEqual(active, ActivationState(useReferenceDB: true, defaultRelease: "2024.9.7"))
        XCTAssertEqual(active.servingRelease, "2024.9.7")
        let deactivated = try state(#"{"useReferenceDB": false, "defaultRelease": "2024.9.7"}"#)
        XCTAssertNil(deactivated.servingRelease, "the bundled database serves")
        XCTAssertEqual(deactivated.defaultRelease, "2024.9.7", "kept for the next activate without a name")
    }

    func testAFileOfOlderBuilds_withoutARelease_isTheLegacyReference() throws {
        let legacy = try state(#"{"useReferenceDB": true}"#)
        XCTAssertTrue(legacy.useReferenceDB)
        XCTAssertNil(legacy.servingRelease)
    }

    func testMissingDamagedOrForeign_isTheBundledDatabase() throws {
        for text in [nil, "", "{", "[]", #"{"useReferenceDB": "yes"}"#, "\u{0}\u{1}", #"{"defaultRelease": "2024.9.7"}"#] {
            let read = try state(text)
            XCTAssertEqual(read, ActivationState(useReferenceDB: false), "\(text.debugDescription)")
        }
    }

    func testAReleaseNameThatCouldLeaveTheReleasesDirectory_isNoName() throws {
        for hostile in ["../../etc/passwd", "a/b", "bundled", ""] {
            let read = try state(#"{"useReferenceDB": true, "defaultRelease": "\#(hostile)"}"#)
            XCTAssertTrue(read.useReferenceDB)
            XCTAssertNil(read.defaultRelease, hostile)
        }
    }
}
