import Foundation
import Glibc
import STOLTestFixtures
import XCTest

/// What a lab's files do to the batch commands (issue 34), through the real client and
/// `stol-taxonomyd`: thousands of long names are cut into requests the protocol allows,
/// never refused whole; a query too long for any request is answered in its place; an
/// endless line is refused with bounded memory; and a failed read or write is never exit 0.
final class BatchLimitsIntegrationTests: XCTestCase {
    private var stack: StackHarness!

    override func setUpWithError() throws {
        stack = try StackHarness()
        try stack.start(.taxonomy)
    }

    override func tearDown() {
        stack = nil
    }

    /// 3,000 influenza-like names of 74 to 90 bytes (none of them in the curated database),
    /// with the lion, the tiger and Felidae among them: 240 KB, four times what one
    /// request may carry, and 3 requests by count alone.
    private func longNames() -> [String] {
        var random = SplitMix64(for: self)
        return (0..<3000).map { number in
            switch number % 500 {
            case 7: "Panthera leo"
            case 8: "Panthera tigris"
            case 9: "Felidae"
            default:
                "Influenza A virus (A/swine/Iowa/A0\(100_000 + number)/2019(H1N1)) segment \(number % 8 + 1)"
                    + String(repeating: "x", count: Int.random(in: 0...16, using: &random))
            }
        }
    }

    private func lines(_ text: String) -> [String] {
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        if lines.last == "" { lines.removeLast() }
        return lines
    }

    func testThousandsOfLongNames_areAnsweredLineByLine_byEveryBatchCommand() throws {
        // Wait for the in-memory indexes (a request on the whole tree waits for them): before,
        // a name is looked up by a scan of every name, thousands of times too slow for this test.
        XCTAssertEqual(try stack.client(["lineage", "--ranks", "all", "--no-header"], input: "9689\n").status, 0)
        let names = longNames()
        let input = names.joined(separator: "\n") + "\n"
        let known = ["Panthera leo", "Panthera tigris", "Felidae"]

        let lineage = try stack.client(["lineage", "--no-header"], input: input)
        XCTAssertEqual(lineage.status, 3, "the unknown names are not found, nothing fails whole: \(lineage.stderr.prefix(300))")
        let lineageLines = lines(lineage.stdout)
        XCTAssertEqual(lineageLines.count, names.count, "one line per name")
        for (name, line) in zip(names, lineageLines) {
            let fields = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
            XCTAssertEqual(fields.first, name)
            XCTAssertEqual(known.contains(name) ? Int64(fields[1]) != nil : fields[1] == "NOT_FOUND", true, line)
        }

        let name2id = try stack.client(["name2id", "--no-header"], input: input)
        XCTAssertEqual(name2id.status, 3, String(name2id.stderr.prefix(300)))
        let name2idLines = lines(name2id.stdout)
        XCTAssertEqual(name2idLines.map { String($0.prefix { $0 != "\t" }) }, names)
        XCTAssertEqual(name2idLines.filter { $0.contains("\tunique\t") }.count, 18, "the 18 known names: \(name2idLines.prefix(10))")

        let filter = try stack.client(["filter", "--rank", "species", "--discard-noranks"], input: input)
        XCTAssertEqual(filter.status, 3, String(filter.stderr.prefix(300)))
        XCTAssertEqual(lines(filter.stdout), names.filter { $0.hasPrefix("Panthera") }, "the species, in input order")

        let pairs = names.map { "\($0)\t9689" }.joined(separator: "\n") + "\n"
        let compare = try stack.client(["compare", "--batch", "--no-header"], input: pairs)
        XCTAssertEqual(compare.status, 3, String(compare.stderr.prefix(300)))
        XCTAssertEqual(lines(compare.stdout).map { String($0.prefix { $0 != "\t" }) }, names)

        let sets = names.map { "\($0),9689" }.joined(separator: "\n") + "\n"
        let lca = try stack.client(["lca", "--no-header"], input: sets)
        XCTAssertEqual(lca.status, 3, String(lca.stderr.prefix(300)))
        XCTAssertEqual(lines(lca.stdout).map { String($0.prefix { $0 != "\t" }) }, (1...names.count).map(String.init))

        // The tree needs all taxa in one answer: the names are resolved first, then sent as ids.
        let tree = try stack.client(["tree", "--taxa", "--format", "newick"], input: input)
        XCTAssertEqual(tree.status, 3, String(tree.stderr.prefix(300)))
        let byIDs = try stack.client(["tree", "--taxa", "--format", "newick"], input: "9689\n9694\n9681\n")
        XCTAssertEqual(byIDs.status, 0, byIDs.stderr)
        XCTAssertEqual(tree.stdout, byIDs.stdout, "the same tree as from the known names' ids")
        XCTAssertTrue(tree.stderr.contains("not found (2982): Influenza A virus"), String(tree.stderr.prefix(300)))
    }

    func testTreeTaxa_namesResolvedByTheClient_answerAsTheServerResolvedThem() throws {
        // Ids first in the not-found list, then names, each in input order, as induced_tree lists them.
        let input = "lion\n424242\n9694\nNosuchname\n  Panthera onca \n0\nHomo sapiens\n424243\nFelidae\n"
        let named = try stack.client(["tree", "--taxa", "--format", "jsonl"], input: input)
        XCTAssertEqual(named.status, 3, named.stderr)
        let notFound = try XCTUnwrap(lines(named.stdout).last)
        XCTAssertEqual(notFound, #"{"not_found":["424242","0","424243","Nosuchname"]}"#)
        let ids = try stack.client(["tree", "--taxa", "--format", "jsonl"], input: "9689\n9694\n9690\n9606\n9681\n")
        XCTAssertEqual(ids.status, 0, ids.stderr)
        XCTAssertEqual(lines(named.stdout).dropLast(), lines(ids.stdout)[...], "names give the tree of their ids")
        XCTAssertTrue(named.stderr.contains("not found (4): 424242, 0, 424243, Nosuchname"), named.stderr)
    }

    func testAQueryTooLongForAnyRequest_isAnErrorLineInItsPlace_andTheOthersAreAnswered() throws {
        // 65,520 bytes: a line the reader takes, a query no request can carry beside its envelope.
        let long = String(repeating: "x", count: 65_520)
        let result = try stack.client(["lineage", "--no-header"], input: "9689\n\(long)\n9694\n")
        XCTAssertEqual(result.status, 3, result.stderr)
        let output = lines(result.stdout)
        XCTAssertEqual(output.count, 3)
        XCTAssertTrue(output[0].hasPrefix("9689\t9689\t"), output[0])
        XCTAssertTrue(output[1].hasPrefix(long + "\tINVALID_REQUEST\tline 2: too large to send: 65524 bytes, and a request carries at most "),
                      String(output[1].suffix(200)))
        XCTAssertTrue(output[1].hasSuffix(" besides its envelope (65536 bytes in all)"), String(output[1].suffix(200)))
        XCTAssertTrue(output[2].hasPrefix("9694\t9694\t"), output[2])
    }

    func testAnEndlessLine_isRefusedAtItsLimit_withBoundedMemory_neverExitZero() throws {
        // The issue's input: /dev/zero, one line without end. readLine() grew it to 2.1 GB.
        let zero = try ChildProcess.run(StackHarness.binDirectory + "/stol-client", ["lineage"],
                                        environment: ["STOL_RUNTIME_DIR": stack.runtimeDirectory], stdin: .readWrite("/dev/zero"))
        XCTAssertEqual(zero.status, 65, zero.stderr)
        XCTAssertTrue(zero.stderr.contains("standard input, line 1: longer than 65536 bytes"), zero.stderr)
        XCTAssertTrue(lines(zero.stdout).allSatisfy { $0.hasPrefix("# release") }, "only the header: \(zero.stdout.prefix(200))")

        // Lines before the long one are answered; nothing after it is read.
        let long = String(repeating: "x", count: 70_000)
        let cut = try stack.client(["lineage", "--no-header"], input: "9689\n9694\n\(long)\n9606\n")
        XCTAssertEqual(cut.status, 65, cut.stderr)
        XCTAssertEqual(lines(cut.stdout).map { String($0.prefix { $0 != "\t" }) }, ["9689", "9694"])
        XCTAssertTrue(cut.stderr.contains("line 3: longer than 65536 bytes"), cut.stderr)
        for command in [["name2id"], ["filter"], ["compare", "--batch"], ["lca"], ["tree", "--taxa"]] {
            let result = try stack.client(command, input: "9689\t9694\n\(long)\n")
            XCTAssertEqual(result.status, 65, "\(command): \(result.stderr)")
            XCTAssertTrue(result.stderr.contains("line 2: longer than 65536 bytes"), "\(command): \(result.stderr)")
        }
        let annotate = try ChildProcess.run(StackHarness.binDirectory + "/stol-client", ["annotate"],
                                            environment: ["STOL_RUNTIME_DIR": stack.runtimeDirectory], stdin: .readWrite("/dev/zero"))
        XCTAssertEqual(annotate.status, 65, annotate.stderr)
        XCTAssertTrue(annotate.stderr.contains("standard input is longer than 268435456 bytes"), annotate.stderr)
    }

    func testAFailedRead_isExitOne_neverTheEndOfTheInput() throws {
        let directory = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        XCTAssertGreaterThanOrEqual(directory, 0)
        defer { close(directory) }
        let result = try ChildProcess.run(StackHarness.binDirectory + "/stol-client", ["lineage"],
                                          environment: ["STOL_RUNTIME_DIR": stack.runtimeDirectory], stdin: .descriptor(directory))
        XCTAssertEqual(result.status, 1, result.stderr)
        XCTAssertTrue(result.stderr.contains("cannot read standard input: Is a directory"), result.stderr)
    }

    func testAFailedWrite_isExitOne_forBatchesAndForSingleAnswers() throws {
        let directory = try makeTemporaryDirectory(self, prefix: "stolfull")
        for (arguments, input) in [(["lineage"], "9689\n"), (["taxon", "9689"], ""), (["tree", "--taxa"], "9689\n9694\n")] {
            let child = try ChildProcess.spawn(StackHarness.binDirectory + "/stol-client", arguments,
                                               environment: ["STOL_RUNTIME_DIR": stack.runtimeDirectory],
                                               stdin: input.isEmpty ? .null : .readWrite(try file(input, in: directory)),
                                               stdout: .file("/dev/full"), stderr: .file(directory + "/err", truncate: true))
            let status = child.wait(timeoutSeconds: 60)
            let stderr = (try? String(contentsOfFile: directory + "/err", encoding: .utf8)) ?? ""
            XCTAssertEqual(status, 1, "\(arguments): \(stderr)")
            XCTAssertTrue(stderr.contains("cannot write standard output: No space left on device"), "\(arguments): \(stderr)")
        }
    }

    private func file(_ text: String, in directory: String) throws -> String {
        let path = directory + "/in"
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        return path
    }
}
