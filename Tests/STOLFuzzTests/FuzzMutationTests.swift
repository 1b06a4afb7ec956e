import Foundation
import STOLFuzzTargets
import XCTest

/// `make test`'s fuzzing: every target runs 2,000 mutations of its committed inputs
/// (a fixed seed: the same inputs every run, `STOL_FUZZ_RUNS` and `STOL_FUZZ_SEED` to
/// change them) through the entry point libFuzzer calls, in the ordinary debug build.
///
/// Not libFuzzer: no coverage feedback and no AddressSanitizer; `make fuzz` builds
/// both (README, "Fuzzing"). This runs in the build the other tests use because the
/// sanitized build of its own took a third of `make test`'s CPU on this 2-core machine
/// (425 of about 1,300 CPU-seconds, measured 2026-11-28), over the 10-minute target.
/// An input that breaks an invariant is saved, with how to replay it.
final class FuzzMutationTests: XCTestCase {
    static let runs = Int(ProcessInfo.processInfo.environment["STOL_FUZZ_RUNS"] ?? "") ?? 2000
    static let seed = UInt64(ProcessInfo.processInfo.environment["STOL_FUZZ_SEED"] ?? "") ?? 1

    func testFrameDecoder_mutationsOfItsInputsKeepItsInvariants() throws { try mutate(FrameDecoderFuzzTarget.self) }
    func testTaxonomy_mutationsOfItsInputsKeepItsInvariants() throws { try mutate(TaxonomyFuzzTarget.self) }
    func testFavorites_mutationsOfItsInputsKeepItsInvariants() throws { try mutate(FavoritesFuzzTarget.self) }
    func testImport_mutationsOfItsInputsKeepItsInvariants() throws { try mutate(ImportCoordinatorFuzzTarget.self) }
    func testVerifier_mutationsOfItsInputsKeepItsInvariants() throws { try mutate(VerifierFuzzTarget.self) }

    /// The mutator changes what it is given, within the target's size, the same way for one seed.
    func testTheMutator_changesInputsWithinTheSize_andRepeatsForASeed() {
        let input = [UInt8](repeating: 7, count: 64)
        var first = ByteMutator(seed: 9), second = ByteMutator(seed: 9)
        let a = (0..<200).map { _ in first.mutate(input, maximumSize: 70) }
        let b = (0..<200).map { _ in second.mutate(input, maximumSize: 70) }
        XCTAssertEqual(a, b, "one seed, one sequence")
        XCTAssertTrue(a.allSatisfy { $0.count <= 70 })
        XCTAssertGreaterThan(Set(a).count, 150, "most mutations differ")
        XCTAssertTrue(a.contains { $0.count < 64 } && a.contains { $0.count > 64 }, "bytes erased and inserted")
    }

    /// The libFuzzer executables pass each target's size limit, unless the command line has one.
    func testTheLibFuzzerCommandLine_getsTheTargetsMaximumInputSize_unlessGivenOne() {
        XCTAssertEqual(FuzzRunner.libFuzzerArguments(VerifierFuzzTarget.self, ["fuzz-verifier", "-runs=5", "corpus"]),
                       ["fuzz-verifier", "-max_len=65536", "-runs=5", "corpus"])
        XCTAssertEqual(FuzzRunner.libFuzzerArguments(TaxonomyFuzzTarget.self, ["fuzz-taxonomy", "-max_len=100"]),
                       ["fuzz-taxonomy", "-max_len=100"])
    }

    private func mutate<T: FuzzTarget>(_ type: T.Type) throws {
        let inputs = try FuzzRegressionTests.committedInputs(T.self).map(\.bytes)
        XCTAssertGreaterThan(inputs.count, 0, "no committed inputs for \(T.name)")
        let target = try T.make()
        let started = Date()
        if let found = FuzzRunner.mutationRun(T.self, target: target, inputs: inputs, count: Self.runs, seed: Self.seed) {
            let path = FileManager.default.temporaryDirectory.appendingPathComponent("\(T.name)-finding-\(UInt32(truncatingIfNeeded: found.input.hashValue))").path
            try Data(found.input).write(to: URL(fileURLWithPath: path))
            XCTFail("""
                \(T.name): an invariant broke: \(found.failure). The input is in \(path); replay it with \
                `swift build --package-path Tools --product \(T.name) && Tools/.build/debug/\(T.name) \(path)`, \
                and once fixed commit it to Tests/fuzz/regressions/\(T.name)/.
                """)
            return
        }
        print("\(T.name): \(Self.runs) mutations of \(inputs.count) inputs (seed \(Self.seed)) in \(String(format: "%.1f", Date().timeIntervalSince(started))) s, every invariant held")
    }
}
