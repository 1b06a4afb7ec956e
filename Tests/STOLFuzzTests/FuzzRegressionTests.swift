import Foundation
import STOLFuzzTargets
import XCTest

/// Every committed input of every fuzz target — its seed corpus and its
/// regressions (`Tests/fuzz/regressions/<target>/`, inputs that once crashed or
/// broke an invariant) — replayed through the same entry point libFuzzer calls,
/// in the ordinary build: a finding, once fixed, stays fixed.
final class FuzzRegressionTests: XCTestCase {
    static let fuzzDirectory = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("fuzz").path

    func testFrameDecoder_everyCommittedInputKeepsItsInvariants() throws { try replay(FrameDecoderFuzzTarget.self) }
    func testTaxonomy_everyCommittedInputKeepsItsInvariants() throws { try replay(TaxonomyFuzzTarget.self) }
    func testFavorites_everyCommittedInputKeepsItsInvariants() throws { try replay(FavoritesFuzzTarget.self) }
    func testImport_everyCommittedInputKeepsItsInvariants() throws { try replay(ImportCoordinatorFuzzTarget.self) }
    func testVerifier_everyCommittedInputKeepsItsInvariants() throws { try replay(VerifierFuzzTarget.self) }

    /// The committed inputs of a target: its seed corpus and its regressions, by path.
    static func committedInputs<T: FuzzTarget>(_ type: T.Type) throws -> [(path: String, bytes: [UInt8])] {
        let folders = ["corpus", "regressions"].map { fuzzDirectory + "/\($0)/" + T.name }
            .filter { FileManager.default.fileExists(atPath: $0) }
        return try FuzzRunner.inputFiles(folders).map { ($0, try [UInt8](Data(contentsOf: URL(fileURLWithPath: $0)))) }
    }

    private func replay<T: FuzzTarget>(_ type: T.Type) throws {
        let inputs = try Self.committedInputs(T.self)
        XCTAssertGreaterThan(inputs.count, 0, "no committed inputs for \(T.name)")
        let target = try T.make()
        for input in inputs {
            XCTAssertNoThrow(try target.run(input.bytes), input.path)
        }
        print("\(T.name): \(inputs.count) committed inputs replayed")
    }
}
