import STOLTransport
import XCTest

/// ``RuntimePaths``: one environment variable moves the whole stack, and an empty one
/// is no setting (an unset variable in a unit file, `STOL_RUNTIME_DIR=` in a shell).
final class RuntimePathsTests: XCTestCase {
    func testInstalledLocations_withoutTheVariables() {
        let paths = RuntimePaths.fromEnvironment([:])
        XCTAssertEqual(paths, RuntimePaths(runtimeDirectory: "/run/stol", stateDirectory: "/var/lib/stol",
                                           bundledDatabase: "/usr/share/stol/bundled.sqlite"))
        XCTAssertEqual(paths.taxonomySocket, "/run/stol/taxonomy.sock")
        XCTAssertEqual(paths.favoritesSocket, "/run/stol/favorites.sock")
        XCTAssertEqual(paths.importSocket, "/run/stol/import.sock")
        XCTAssertEqual(paths.verifySocket, "/run/stol/verify.sock")
        XCTAssertEqual(paths.activationState, "/var/lib/stol/databases/activation.json")
        XCTAssertEqual(paths.releaseDatabase("2024.9.7"), "/var/lib/stol/databases/releases/2024.9.7.sqlite")
        XCTAssertEqual(paths.legacyReferenceDatabase, "/var/lib/stol/databases/reference.sqlite")
        XCTAssertEqual(paths.stagingDirectory, "/var/lib/stol/databases/.staging")
        XCTAssertEqual(paths.favoritesDirectory, "/var/lib/stol/favorites")
    }

    func testEachVariable_movesItsPart_andAnEmptyOneIsUnset() {
        let paths = RuntimePaths.fromEnvironment(["STOL_RUNTIME_DIR": "/tmp/run", "STOL_STATE_DIR": "/tmp/state",
                                                   "STOL_BUNDLED_DB": "/tmp/b.sqlite", "OTHER": "x"])
        XCTAssertEqual(paths.socket(named: "taxonomy"), "/tmp/run/taxonomy.sock")
        XCTAssertEqual(paths.releasesDirectory, "/tmp/state/databases/releases")
        XCTAssertEqual(paths.bundledDatabase, "/tmp/b.sqlite")
        let empty = RuntimePaths.fromEnvironment(["STOL_RUNTIME_DIR": "", "STOL_STATE_DIR": "", "STOL_BUNDLED_DB": ""])
        XCTAssertEqual(empty, RuntimePaths.fromEnvironment([:]))
    }
}
