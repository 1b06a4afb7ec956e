import STOLClientKit
import STOLModel
import STOLProtocol
import STOLTestFixtures
import SwiftProtobuf
import XCTest

/// ``BatchQueue``, the bookkeeping of every batch command: batches cut by count and by
/// encoded size (issue 34), a query too large for any request set apart, and the lines
/// answered without the server (blank lines, comments, Kraken's `0`, refusals) in their
/// places among the answers of pipelined requests, whatever the window and the cuts.
final class BatchQueueTests: XCTestCase {
    typealias Queue = BatchQueue<String, LineageInputLine.Local>

    /// ``ServiceClient/runBatches``'s order, acted out: up to `window` batches in flight,
    /// answers taken oldest first, more input read whenever there is room and no batch is ready.
    /// Returns the output lines and the batches sent.
    private func simulate(_ input: [String], limits: BatchLimits, window: Int = 4, answersLate: Bool = false,
                          file: StaticString = #filePath, line: UInt = #line) -> (output: [String], sent: [[String]]) {
        var queue = Queue(limits: limits)
        var output: [String] = []
        var lines = input.enumerated()[...]
        var sent: [[String]] = []
        var inFlight: [[String]] = []
        var exhausted = false
        let writer = LineageTSV(ids: false)
        func local(_ slot: LineageInputLine.Local) { output.append(LineageInputLine.tsv(slot, writer)) }
        func next() -> [String]? {
            while queue.readyCount == 0 && !exhausted {
                guard let (number, text) = lines.popFirst() else {
                    exhausted = true
                    queue.finish()
                    break
                }
                switch LineageInputLine(text) {
                case .query(let query):
                    let bytes = ProtobufSize.string(field: 1, query)
                    if !queue.add(query: query, bytes: bytes) {
                        let refusal = BatchRefusal(line: number + 1, size: bytes, limit: limits.bytes)
                        if let now = queue.add(local: .refused(LineageInputLine.refusedResult(query, refusal))) { local(now) }
                    }
                case .local(let slot):
                    if let now = queue.add(local: slot) { local(now) }
                }
            }
            return queue.send()
        }
        while true {
            while inFlight.count < window, let batch = next() {
                inFlight.append(batch)
                sent.append(batch)
                XCTAssertEqual(queue.inFlightCount, inFlight.count, file: file, line: line)
                if answersLate { break }
            }
            guard !inFlight.isEmpty else { break }
            let queries = inFlight.removeFirst()
            guard let batch = queue.answered() else {
                XCTFail("a batch in flight", file: file, line: line)
                break
            }
            XCTAssertEqual(batch.queries, queries, file: file, line: line)
            batch.walk(answer: { output.append("answer " + queries[$0]) }, local: local)
        }
        XCTAssertNil(queue.answered(), file: file, line: line)
        XCTAssertEqual(queue.buildingCount, 0, file: file, line: line)
        return (output, sent)
    }

    private func expected(_ input: [String], limit: Int) -> [String] {
        let writer = LineageTSV(ids: false)
        return input.enumerated().map { number, line in
            switch LineageInputLine(line) {
            case .query(let query):
                let bytes = ProtobufSize.string(field: 1, query)
                return bytes <= limit ? "answer " + query
                    : writer.line(LineageInputLine.refusedResult(query, BatchRefusal(line: number + 1, size: bytes, limit: limit)))
            case .local(let slot): return LineageInputLine.tsv(slot, writer)
            }
        }
    }

    func testLinesAnsweredHere_comeOutInPlace_whateverTheCutsAndTheRequestsInFlight() {
        var random = SplitMix64(for: self)
        let kinds = ["", "  ", "# comment", "0", " 0 "]
        for round in 0..<400 {
            let count = Int.random(in: 0...60, using: &random)
            let passThrough = Double.random(in: 0...1, using: &random)
            let input = (0..<count).map { position in
                Double.random(in: 0..<1, using: &random) < passThrough
                    ? kinds.randomElement(using: &random)! + (position % 7 == 0 ? " \(position)" : "")
                    : String(repeating: "x", count: Int.random(in: 0...30, using: &random)) + String(position + 1)
            }
            let limits = BatchLimits(queries: Int.random(in: 1...8, using: &random), bytes: Int.random(in: 8...80, using: &random))
            for late in [false, true] {
                let (output, sent) = simulate(input, limits: limits, answersLate: late)
                XCTAssertEqual(output.count, input.count, "round \(round): one line out per line in")
                XCTAssertEqual(output, expected(input, limit: limits.bytes), "round \(round), \(limits), input \(input)")
                for batch in sent {
                    XCTAssertFalse(batch.isEmpty, "no request without a query")
                    XCTAssertLessThanOrEqual(batch.count, limits.queries)
                    XCTAssertLessThanOrEqual(batch.map { ProtobufSize.string(field: 1, $0) }.reduce(0, +), limits.bytes)
                }
            }
        }
    }

    func testABatchIsCut_onlyWhenFull_orWhenTheNextQueryWouldTakeItOverTheBytes() {
        var random = SplitMix64(for: self)
        for _ in 0..<200 {
            let limits = BatchLimits(queries: Int.random(in: 1...20, using: &random), bytes: Int.random(in: 40...400, using: &random))
            let input = (0..<Int.random(in: 1...200, using: &random)).map { _ in
                String(repeating: "q", count: Int.random(in: 1...36, using: &random))
            }
            let (_, sent) = simulate(input, limits: limits)
            XCTAssertEqual(Array(sent.joined()), input, "every query sent once, in order")
            for (batch, after) in zip(sent, sent.dropFirst()) {
                let bytes = batch.map { ProtobufSize.string(field: 1, $0) }.reduce(0, +)
                let next = ProtobufSize.string(field: 1, after[0])
                XCTAssertTrue(batch.count == limits.queries || bytes + next > limits.bytes,
                              "a batch of \(batch.count) queries, \(bytes) bytes, closed though \(next) more bytes fit \(limits)")
            }
        }
    }

    func testAQueryTooLargeForAnyRequest_isSetApart_andTheOthersAreSent() {
        var queue = Queue(limits: BatchLimits(queries: 10, bytes: 20))
        XCTAssertTrue(queue.add(query: "a", bytes: 3))
        XCTAssertFalse(queue.fits(bytes: 21))
        XCTAssertFalse(queue.add(query: String(repeating: "b", count: 30), bytes: 32), "never fits: not added")
        XCTAssertEqual(queue.buildingCount, 1)
        XCTAssertTrue(queue.add(query: "c", bytes: 20), "a query of exactly the limit fits a request of its own")
        XCTAssertEqual(queue.readyCount, 1, "it did not fit beside the first: that batch was closed")
        queue.finish()
        XCTAssertEqual(queue.send(), ["a"])
        XCTAssertEqual(queue.send(), ["c"])
        XCTAssertNil(queue.send())
    }

    func testUnits_cutBatchesLikeBytes_lcaMembers() {
        var queue = BatchQueue<String, String>(limits: BatchLimits(queries: 100, bytes: 1000, units: 10))
        XCTAssertTrue(queue.add(query: "six", bytes: 5, units: 6))
        XCTAssertTrue(queue.add(query: "four", bytes: 5, units: 4))
        XCTAssertEqual(queue.readyCount, 0, "exactly 10 members fit")
        XCTAssertTrue(queue.add(query: "one", bytes: 5, units: 1))
        XCTAssertEqual(queue.readyCount, 1)
        XCTAssertFalse(queue.add(query: "eleven", bytes: 5, units: 11))
        queue.finish()
        XCTAssertEqual(queue.send(), ["six", "four"])
        XCTAssertEqual(queue.send(), ["one"])
    }

    func testLinesBeforeTheFirstQuery_withNothingInFlight_areGivenBackAtOnce_andAfterTheLast_joinIt() {
        var queue = BatchQueue<String, String>(limits: BatchLimits(queries: 2, bytes: 100))
        XCTAssertEqual(queue.add(local: "# head"), "# head")
        XCTAssertTrue(queue.add(query: "9606", bytes: 6))
        XCTAssertNil(queue.add(local: "# between"), "after a query: waits for its answer")
        XCTAssertTrue(queue.add(query: "9685", bytes: 6))
        XCTAssertEqual(queue.readyCount, 1, "full at 2 queries")
        XCTAssertNil(queue.add(local: "# after a full batch"), "joins the batch ready to be sent")
        XCTAssertEqual(queue.send(), ["9606", "9685"])
        XCTAssertNil(queue.add(local: "# after it was sent"), "joins the batch in flight")
        queue.finish()
        XCTAssertNil(queue.send(), "no query, no request")
        let batch = queue.answered()!
        var walked: [String] = []
        batch.walk(answer: { walked.append("answer \(batch.queries[$0])") }, local: { walked.append($0) })
        XCTAssertEqual(walked, ["answer 9606", "# between", "answer 9685", "# after a full batch", "# after it was sent"])
        XCTAssertEqual(queue.add(local: "# tail"), "# tail", "nothing in flight any more")
    }

    // MARK: Sizes

    func testProtobufSizes_areSwiftProtobufsEncoding() throws {
        var random = SplitMix64(for: self)
        for _ in 0..<300 {
            let queries = (0..<Int.random(in: 0...40, using: &random)).map { _ in
                String(repeating: "é", count: Int.random(in: 0...(Bool.random(using: &random) ? 100 : 9000), using: &random))
            }
            let batch = Stol_V1_LineageBatchRequest.with { $0.queries = queries }
            XCTAssertEqual((try batch.serializedBytes() as [UInt8]).count, queries.map { ProtobufSize.string(field: 1, $0) }.reduce(0, +))
            // A pair's fields are singular: never empty here (an empty one is left out, and counted as 2 bytes: a bound).
            let pairs = queries.map { query in Stol_V1_TaxonPair.with { $0.a = query + "a"; $0.b = String(query.prefix(3)) + "b" } }
            XCTAssertEqual((try Stol_V1_CompareBatchRequest.with { $0.pairs = pairs }.serializedBytes() as [UInt8]).count,
                           pairs.map { ProtobufSize.lengthDelimited(field: 1, length: ProtobufSize.string(field: 1, $0.a)
                                                                   + ProtobufSize.string(field: 2, $0.b)) }.reduce(0, +))
            let ids = queries.map { Int64($0.utf8.count) * Int64.random(in: -1_000_000_000...1_000_000_000_000, using: &random) }
            let packed = ids.map(ProtobufSize.packed).reduce(0, +)
            let taxa = (try Stol_V1_GetTaxaRequest.with { $0.taxonIds = ids }.serializedBytes() as [UInt8]).count
            XCTAssertEqual(taxa, ids.isEmpty ? 0 : ProtobufSize.lengthDelimited(field: 1, length: packed))
        }
        XCTAssertEqual(ProtobufSize.varint(0), 1)
        XCTAssertEqual(ProtobufSize.varint(127), 1)
        XCTAssertEqual(ProtobufSize.varint(128), 2)
        XCTAssertEqual(ProtobufSize.varint(.max), 10)
    }
}
