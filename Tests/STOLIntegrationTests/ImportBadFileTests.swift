import Foundation
import Glibc
import STOLTestFixtures
import XCTest

/// Every file of the bad corpus (`StolCorpus`: truncations, each header field
/// changed, another key, a signed wrong schema version, a gzip bomb of more than
/// 4 GiB, trailing garbage, a second gzip member, a body that is not gzip, a gzip
/// of a text file, a corrupt SQLite, a table, column or index missing, a too-new
/// schema …) through the real client, importd and a fresh sandboxed verifier:
/// each ends with its typed error and exit status, and the state directory —
/// with an active reference database installed before — stays byte for byte.
final class ImportBadFileTests: XCTestCase {
    func testEveryBadFile_endsWithItsTypedError_andChangesNothing() throws {
        let stack = try StackHarness()
        try stack.startImportStack()
        let (good, _) = try stack.signedDatabase(name: "installed")
        XCTAssertEqual(try stack.client(["db", "import", "--activate", good]).status, 0)
        let before = stack.stateSnapshot()
        XCTAssertNotNil(before["databases/releases/unknown.sqlite"])

        let cases = try StolCorpus.cases(database: stack.database, key: StackHarness.signingKey, scratch: stack.root)
        XCTAssertGreaterThanOrEqual(cases.count, 30)
        for (index, corpusCase) in cases.enumerated() {
            let file = try stack.writeFile(corpusCase.bytes, name: "bad-\(index).stol")
            // The gzip bomb inflates 4 GiB before the verifier stops it: minutes for a debug
            // build on two loaded cores (make test's), where 60 s killed the client once.
            let result = try stack.client(["db", "import", "--json", file], timeoutSeconds: 600)
            XCTAssertEqual(StackHarness.errorCode(result), corpusCase.serviceCode ?? corpusCase.code,
                           "\(corpusCase.name): \(result.stdout) \(result.stderr)")
            XCTAssertEqual(result.status, 7, "\(corpusCase.name): a verification failure exits 7")
            XCTAssertEqual(stack.stateSnapshot(), before, "\(corpusCase.name) changed the state directory")
            unlink(file)
        }
        // Two that the client opens but no verifier gets: a directory, and a file over 2 GiB (sparse).
        let directory = stack.root + "/a-directory.stol"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let notAFile = try stack.client(["db", "import", "--json", directory])
        XCTAssertEqual(StackHarness.errorCode(notAFile), "FILE_UNREADABLE", notAFile.stdout)
        let huge = stack.root + "/huge.stol"
        XCTAssertTrue(FileManager.default.createFile(atPath: huge, contents: Data(stolMagicForTests)))
        XCTAssertEqual(truncate(huge, 2 * 1024 * 1024 * 1024 + 1), 0)
        let tooLarge = try stack.client(["db", "import", "--json", huge])
        XCTAssertEqual(StackHarness.errorCode(tooLarge), "FILE_TOO_LARGE", tooLarge.stdout)
        XCTAssertEqual(stack.stateSnapshot(), before)
        XCTAssertEqual(stack.stagingFiles, [])
        XCTAssertEqual(try stack.importStatus()["reference_active"] as? Bool, true, "the reference still serves")
        print("bad-file corpus: \(cases.count + 2) files refused through the real client and daemons; state unchanged")
    }
}

let stolMagicForTests: [UInt8] = Array("STOL".utf8) + [0] + Array("DB".utf8) + [1]
