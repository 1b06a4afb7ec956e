import Foundation
#if canImport(XCTest)
import XCTest
#endif

/// SplitMix64: a tiny deterministic generator, so that random test data and
/// random fault moments can be reproduced from the seed a test prints.
public struct SplitMix64: RandomNumberGenerator, Sendable {
    public let seed: UInt64
    private var state: UInt64

    public init(seed: UInt64) {
        self.seed = seed
        state = seed
    }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// The one source of seeds for randomised tests: `STOL_TEST_SEED` when it is set
/// (to replay a run), a fresh seed otherwise, printed with the test's name either
/// way, so that every failure can be replayed.
public enum TestSeed {
    /// The variable that replays a run.
    public static let variable = "STOL_TEST_SEED"

    /// The seed for `test` (a test's name), printed as
    /// `seed 1234 for testX (rerun with STOL_TEST_SEED=1234)`.
    public static func make(for test: String) -> UInt64 {
        let given = ProcessInfo.processInfo.environment[variable].flatMap { UInt64($0) }
        let seed = given ?? UInt64.random(in: 1...UInt64(UInt32.max))
        print("seed \(seed) for \(test) (rerun with \(variable)=\(seed))")
        return seed
    }

    #if canImport(XCTest)
    /// The seed for the running test case.
    public static func make(for testCase: XCTestCase) -> UInt64 { make(for: testCase.name) }
    #endif
}

extension SplitMix64 {
    #if canImport(XCTest)
    /// A generator seeded from ``TestSeed`` for the running test case (the seed is printed).
    public init(for testCase: XCTestCase) {
        self.init(seed: TestSeed.make(for: testCase))
    }
    #endif

    /// A generator for one part of a test (a thread, a round) derived from this one's seed,
    /// so that one printed seed replays every part.
    public func derived(_ part: Int) -> SplitMix64 {
        var mixer = SplitMix64(seed: seed &+ UInt64(truncatingIfNeeded: part) &* 0x9E37_79B9_7F4A_7C15)
        return SplitMix64(seed: mixer.next())
    }
}
