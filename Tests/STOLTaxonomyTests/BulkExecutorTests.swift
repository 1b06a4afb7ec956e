import Foundation
import Glibc
import STOLTaxonomy
import XCTest

/// Bulk work runs on threads of its own at a lower priority, and every job's
/// answer comes back to the task that asked, however many are in flight.
final class BulkExecutorTests: XCTestCase {
    func testJobs_runOnThreadsOfLowerPriority() async {
        let bulk = BulkExecutor(threads: 2)
        // The process may itself run niced (a CI runner): a thread can only go lower.
        let base = getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0)
        let niceness = await bulk.run { getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0) }
        XCTAssertEqual(niceness, max(base, BulkExecutor.niceness), "a bulk thread runs at nice \(BulkExecutor.niceness)")
        let here = getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0)
        XCTAssertEqual(here, base, "the caller's thread keeps its priority")
    }

    func testManyJobsInFlight_eachAnswerReachesItsCaller() async {
        let bulk = BulkExecutor(threads: 3)
        let answers = await withTaskGroup(of: (Int, Int).self) { group in
            for value in 0..<500 {
                group.addTask { (value, await bulk.run { value * value }) }
            }
            var answers: [Int: Int] = [:]
            for await (value, square) in group { answers[value] = square }
            return answers
        }
        XCTAssertEqual(answers.count, 500)
        XCTAssertTrue(answers.allSatisfy { $0.value == $0.key * $0.key })
    }
}
