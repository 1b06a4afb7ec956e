import Foundation
import GRDB
import STOLTestFixtures
import XCTest

/// `stol-client lineage` output a pipeline can trust (issue 24), through the real
/// client and `stol-taxonomyd`: one output line per input line, blank lines, comments,
/// Kraken's `0` and unknown ids included, across many pipelined requests, so that
/// `paste input output` lines up; the column names; the lineage and a `--format`
/// column in one pass; and `--format` on databases spelling NCBI's top rank either way.
final class LineageBatchOutputTests: XCTestCase {
    private var stack: StackHarness!

    override func setUpWithError() throws {
        stack = try StackHarness()
    }

    override func tearDown() {
        stack = nil
    }

    /// Runs the client with `input` as its standard input, against `stack` (default: this test's).
    private func client(_ arguments: [String], input: String, on other: StackHarness? = nil) throws -> StackHarness.Result {
        try ChildProcess.run(StackHarness.binDirectory + "/stol-client", arguments,
                             environment: ["STOL_RUNTIME_DIR": (other ?? stack).runtimeDirectory], input: input)
    }

    /// The output's lines, an empty line kept as one.
    private func lines(_ result: StackHarness.Result) -> [String] {
        guard !result.stdout.isEmpty else { return [] }
        var lines = result.stdout.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        XCTAssertEqual(lines.last, "", "the output ends with a newline")
        lines.removeLast()
        return lines
    }

    private func fields(_ line: String) -> [String] {
        line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
    }

    /// The curated database's ids, and an input of `count` lines mixing them with names,
    /// blank lines, comments, Kraken's 0 and unknown ids.
    private func mixedInput(_ count: Int, unknown: Bool = true) throws -> [String] {
        let ids = try DatabaseQueue(path: stack.database).read { db in try Int64.fetchAll(db, sql: "SELECT id FROM taxa ORDER BY id") }
        var random = SplitMix64(for: self)
        return (0..<count).map { position in
            switch Int.random(in: 0..<100, using: &random) {
            case 0..<4: ""
            case 4..<6: "  \t"
            case 6..<10: "# sample \(position)"
            case 10..<14: "0"
            case 14..<16: " 0 "
            case 16..<19 where unknown: "99999\(position)"
            case 19..<22: ["Panthera tigris", " lion", "Felidae\t"].randomElement(using: &random)!
            default: String(ids.randomElement(using: &random)!)
            }
        }
    }

    /// Line `n` of the output answers line `n` of the input: `paste input output` lines up.
    private func assertAligned(_ input: [String], _ output: [String], _ what: String,
                               file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(output.count, input.count, "\(what): one output line per input line", file: file, line: line)
        for (number, (query, answer)) in zip(input, output).enumerated() {
            let trimmed = query.trimmingCharacters(in: CharacterSet(charactersIn: " \t"))
            let expected: Bool
            if trimmed.isEmpty {
                expected = answer.isEmpty
            } else if trimmed.hasPrefix("#") {
                expected = answer == query
            } else if trimmed == "0" {
                expected = answer.hasPrefix("0\t0\tno rank\tunclassified\t")
            } else {
                let columns = fields(answer)
                expected = columns[0] == trimmed && columns.count >= 3
                    && (Int64(columns[1]) != nil || columns[1] == "NOT_FOUND" || columns[1] == "INVALID_REQUEST")
            }
            if !expected {
                XCTFail("\(what): input line \(number + 1) \(query.debugDescription) got \(answer.debugDescription)", file: file, line: line)
                return
            }
        }
    }

    func testEveryInputLine_givesOneOutputLine_inPlace_acrossManyRequestsInFlight() throws {
        try stack.start(.taxonomy)
        // More than 4 × 1000 queries: several requests of 1000 in flight at once.
        let input = try mixedInput(5200)
        XCTAssertGreaterThan(input.filter { !$0.isEmpty && !$0.hasPrefix("#") && $0.trimmingCharacters(in: .whitespaces) != "0" }.count,
                             4000)
        let text = input.joined(separator: "\n") + "\n"
        // The other options on a quarter of it (1,300 lines, two requests of 1,000 and in
        // flight together at --batch-size 7): the alignment is the same code.
        let quarter = Array(input.prefix(1300))
        for arguments in [["--no-header"], ["--no-header", "--ranks", "all"], ["--no-header", "--ids"],
                          ["--no-header", "--batch-size", "7"], ["--no-header", "--format", "{k};{g};{s}", "--keep-lineage"]] {
            let input = arguments == ["--no-header"] ? input : quarter
            let text = input.joined(separator: "\n") + "\n"
            let result = try client(["lineage"] + arguments, input: text)
            XCTAssertEqual(result.status, 3, "\(arguments): some ids are unknown: \(result.stderr)")
            let output = lines(result)
            assertAligned(input, output, "\(arguments)")
            // `paste`: the input beside the output, line by line.
            let pasted = zip(input, output).map { $0 + "\t" + $1 }
            XCTAssertEqual(pasted.count, input.count)
        }
        // The header line and the column names come before, and only before, the aligned lines.
        let headed = try client(["lineage", "--column-names"], input: text)
        let headedLines = lines(headed)
        XCTAssertTrue(headedLines[0].hasPrefix("# release "), headedLines[0])
        XCTAssertEqual(headedLines[1], "query\tid\trank\tname\tlineage")
        assertAligned(input, Array(headedLines.dropFirst(2)), "with the header and the column names")

        // JSON lines, on the main ranks (the taxa form, decoded) and the whole tree (read in place).
        for ranks in ["main", "all"] {
            let result = try client(["lineage", "--jsonl", "--ranks", ranks], input: quarter.joined(separator: "\n") + "\n")
            XCTAssertEqual(result.status, 3, result.stderr)
            let objects = lines(result)
            XCTAssertEqual(objects.count, quarter.count, "\(ranks): one JSON object per input line")
            for (number, (query, json)) in zip(quarter, objects).enumerated() {
                let object = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any], json)
                let trimmed = query.trimmingCharacters(in: CharacterSet(charactersIn: " \t"))
                let taxon = object["taxon"] as? [String: Any]
                let skipped = object["skipped"] as? String, echoed = object["query"] as? String
                let good: Bool
                if trimmed.isEmpty {
                    good = skipped == "blank" && echoed == ""
                } else if trimmed.hasPrefix("#") {
                    good = skipped == "comment" && echoed == query
                } else if trimmed == "0" {
                    good = echoed == "0" && taxon?["id"] as? Int == 0 && taxon?["scientific_name"] as? String == "unclassified"
                } else {
                    good = echoed == trimmed && skipped == nil
                }
                guard good else { return XCTFail("\(ranks): input line \(number + 1) \(query.debugDescription) got \(json)") }
            }
        }
    }

    func testBlankLinesCommentsAndZero_needNoServerAnswer_andAreNotNotFound() throws {
        try stack.start(.taxonomy)
        let input = ["# Kraken's unclassified reads", "0", "", "9689", "  ", "0", "# end", "Panthera tigris"]
        let result = try client(["lineage", "--no-header"], input: input.joined(separator: "\n"))  // no newline at the end
        XCTAssertEqual(result.status, 0, "blank lines, comments and 0 are not 'not found': \(result.stderr)")
        let output = lines(result)
        assertAligned(input, output, "a short input")
        XCTAssertEqual(output[0], "# Kraken's unclassified reads")
        XCTAssertEqual(output[1], "0\t0\tno rank\tunclassified\t")
        XCTAssertEqual(output[2], "")
        XCTAssertTrue(output[3].hasPrefix("9689\t9689\tspecies\tPanthera leo\t"), output[3])
        XCTAssertEqual(output[4], "")
        XCTAssertTrue(output[7].hasPrefix("Panthera tigris\t9694\t"), output[7])
        // Nothing to look up: no request, every line still answered.
        let nothing = try client(["lineage", "--no-header"], input: "\n# only comments\n0\n\n")
        XCTAssertEqual(nothing.status, 0, nothing.stderr)
        XCTAssertEqual(lines(nothing), ["", "# only comments", "0\t0\tno rank\tunclassified\t", ""])
        // With a template, 0's is filled with nothing; the error of an unknown id keeps its three columns.
        let formatted = try client(["lineage", "--no-header", "--format", "{k};{p};{g}", "--keep-lineage"], input: "0\n424242424\n")
        XCTAssertEqual(formatted.status, 3)
        XCTAssertEqual(lines(formatted)[0], "0\t0\tno rank\tunclassified\t\t;;")
        XCTAssertEqual(Array(fields(lines(formatted)[1]).prefix(2)), ["424242424", "NOT_FOUND"])
    }

    /// An id column that pandas wrote as floats (`9689.0`, a column with a missing value) is read
    /// as ids, by the server's batches and the client's arguments alike; other decimals are names.
    func testIDsWithAZeroFraction_areIDs_inBatchesAndArguments() throws {
        try stack.start(.taxonomy)
        let result = try client(["lineage", "--no-header"], input: "9689.0\n9689\n9694.00\n9689.5\n")
        XCTAssertEqual(result.status, 3, "9689.5 is no id and no name: \(result.stderr)")
        let output = lines(result)
        XCTAssertEqual(output.count, 4, result.stdout)
        XCTAssertEqual(Array(output[0].split(separator: "\t").dropFirst()), Array(output[1].split(separator: "\t").dropFirst()),
                       "9689.0 answers as 9689")
        XCTAssertTrue(output[0].hasPrefix("9689.0\t9689\tspecies\tPanthera leo\t"), output[0])
        XCTAssertTrue(output[2].hasPrefix("9694.00\t9694\tspecies\t"), output[2])
        XCTAssertEqual(fields(output[3]).prefix(2), ["9689.5", "NOT_FOUND"])
        let taxon = try client(["taxon", "9689.0"], input: "")
        XCTAssertEqual(taxon.status, 0, taxon.stderr)
        XCTAssertTrue(taxon.stdout.contains("Panthera leo"), taxon.stdout)
        let lca = try client(["lca", "--no-header"], input: "9689.0 9694.0\n")
        XCTAssertEqual(lca.status, 0, lca.stderr)
        XCTAssertTrue(lca.stdout.contains("Panthera"), "the LCA of lion and tiger, read as ids: \(lca.stdout)")
    }

    /// Issue 34: a gzip file on standard input is read as the text it holds (gzip(1) compresses it here).
    func testGzipOnStandardInput_isAnsweredAsTheTextItHolds_andDamagedGzipIsExit65() throws {
        try stack.start(.taxonomy)
        let directory = try makeTemporaryDirectory(self)
        let text = "9689\nPanthera tigris\n0\n\n# a comment\n9694.0\n"
        try text.write(toFile: directory + "/ids.txt", atomically: true, encoding: .utf8)
        let plain = try client(["lineage", "--no-header"], input: text)
        XCTAssertEqual(plain.status, 0, plain.stderr)
        let client = "'\(StackHarness.binDirectory)/stol-client' lineage --no-header"
        let environment = ["STOL_RUNTIME_DIR": stack.runtimeDirectory]
        let zipped = try ChildProcess.run("/bin/sh", ["-c", "cd '\(directory)' && gzip -k ids.txt && \(client) < ids.txt.gz"],
                                          environment: environment)
        XCTAssertEqual(zipped.status, 0, zipped.stderr)
        XCTAssertEqual(zipped.stdout, plain.stdout, "the same lines answered")
        let cut = try ChildProcess.run("/bin/sh", ["-c", "cd '\(directory)' && head -c 20 ids.txt.gz | \(client)"],
                                       environment: environment)
        XCTAssertEqual(cut.status, 65, "a truncated gzip is a damaged input: \(cut.stderr)")
        XCTAssertTrue(cut.stderr.contains("gzip data that cannot be read"), cut.stderr)
    }

    func testColumnNames_afterTheReleaseLine_namingTheLineageTheFormatOrBoth() throws {
        try stack.start(.taxonomy)
        func firstLines(_ arguments: [String]) throws -> [String] {
            let result = try client(["lineage"] + arguments, input: "9689\n")
            XCTAssertEqual(result.status, 0, "\(arguments): \(result.stderr)")
            return lines(result)
        }
        let named = try firstLines(["--column-names"])
        XCTAssertEqual(named.count, 3)
        XCTAssertEqual(named[0], "# release bundled · Catalogue of Life · ids col-id")
        XCTAssertEqual(named[1], "query\tid\trank\tname\tlineage")
        XCTAssertEqual(fields(named[2]).count, 5)
        XCTAssertEqual(try firstLines(["--column-names", "--no-header"]).first, "query\tid\trank\tname\tlineage")
        XCTAssertEqual(try firstLines(["--column-names", "--no-header", "--ids"]).first, "query\tid\trank\tname\tlineage")
        XCTAssertEqual(try firstLines(["--column-names", "--no-header", "--format", "{k};{s}"]).first, "query\tid\trank\tname\tformat")
        let both = try firstLines(["--column-names", "--no-header", "--format", "{k};{s}", "--keep-lineage"])
        XCTAssertEqual(both[0], "query\tid\trank\tname\tlineage\tformat")
        XCTAssertEqual(fields(both[1]).count, 6, "as many columns as names")
        XCTAssertEqual(try firstLines(["--no-header"]).count, 1, "no column names unless asked")
        // What does not fit together is a usage error (exit 64).
        for arguments in [["--column-names", "--jsonl"], ["--fill-missing"], ["--keep-lineage"], ["--prefix-ranks"],
                          ["--fill-template", "NA"], ["--format", "{k}", "--fill-template", "{parent}"], ["--format", "{x}"],
                          ["--format", "{k}", "--ids", "--fill-missing"], ["--format", "{k}", "--jsonl"], ["--column", "0"]] {
            let result = try client(["lineage"] + arguments, input: "9689\n")
            XCTAssertEqual(result.status, 64, "\(arguments): \(result.stdout) \(result.stderr)")
        }
    }

    /// `--keep-lineage` writes in one pass what a user got from two runs `paste`d together:
    /// the plain lineage line, then the filled template.
    func testOnePass_equalsTheTwoPassesJoined() throws {
        try stack.start(.taxonomy)
        let input = try mixedInput(1200)  // two requests of 1,000 per run
        let text = input.joined(separator: "\n") + "\n"
        for ranks in ["main", "all"] {
            for options in [["--format", "{k};{p};{c};{o};{f};{g};{s}"],
                            ["--format", "{domain};{K};{p};{c};{o};{f};{g};{s};{S};{t};{r}", "--fill-missing", "--prefix-ranks"],
                            ["--format", "{p}|{g}", "--fill-template", "{higher_rank} {higher} ({rank})"]] {
                let plain = try client(["lineage", "--no-header", "--ranks", ranks], input: text)
                let formatted = try client(["lineage", "--no-header", "--ranks", ranks] + options, input: text)
                let onePass = try client(["lineage", "--no-header", "--ranks", ranks, "--keep-lineage"] + options, input: text)
                let (a, b, both) = (lines(plain), lines(formatted), lines(onePass))
                XCTAssertEqual(a.count, input.count)
                XCTAssertEqual(b.count, input.count)
                XCTAssertEqual(both.count, input.count)
                var joined: [String] = []
                for (lineage, format) in zip(a, b) {
                    let columns = fields(format)
                    // Answered lines (and 0's) have five columns: the lineage and the format are joined;
                    // errors, blank lines and comments are the same in both runs and stay as they are.
                    if columns.count == 5 && !format.hasPrefix("#") {
                        XCTAssertEqual(Array(fields(lineage).prefix(4)), Array(columns.prefix(4)))
                        joined.append(lineage + "\t" + columns[4])
                    } else {
                        XCTAssertEqual(lineage, format)
                        joined.append(lineage)
                    }
                }
                for (number, (expected, got)) in zip(joined, both).enumerated() where expected != got {
                    XCTFail("--ranks \(ranks) \(options): line \(number + 1) is\n\(got)\nthe two passes joined are\n\(expected)")
                    break
                }
                XCTAssertTrue(both.contains { fields($0).count == 6 }, "some lines have both columns")
            }
        }
    }

    // MARK: Both spellings of NCBI's top rank

    /// A stack serving an NCBI database built by the real pipeline from the taxdump
    /// fixture, its top rank spelled `superkingdom` (NCBI before 2025, the PyPI releases)
    /// or `domain` (NCBI since 2025).
    private func ncbiStack(topRank: String) throws -> StackHarness {
        let ncbi = try StackHarness()
        let source = ncbi.root + "/taxdump-\(topRank)"
        try FileManager.default.createDirectory(atPath: source, withIntermediateDirectories: true)
        try TaxdumpFixture.write(to: source)
        let nodes = source + "/nodes.dmp"
        let spelled = try String(contentsOfFile: nodes, encoding: .utf8).replacingOccurrences(of: "\tsuperkingdom\t", with: "\t\(topRank)\t")
        try spelled.write(toFile: nodes, atomically: true, encoding: .utf8)
        XCTAssertEqual(spelled.contains("\tdomain\t"), topRank == "domain")
        let database = ncbi.root + "/ncbi-\(topRank).sqlite"
        let build = try StackHarness.run(StackHarness.binDirectory + "/stol-pipeline",
                                         ["build", "--format", "ncbi", "--source", source, "--output", database])
        XCTAssertEqual(build.status, 0, build.stderr)
        ncbi.environment["STOL_BUNDLED_DB"] = database
        try ncbi.start(.taxonomy)
        return ncbi
    }

    func testFormat_answersTheSameOnADatabaseSpellingTheTopRankSuperkingdomOrDomain() throws {
        let old = try ncbiStack(topRank: "superkingdom"), new = try ncbiStack(topRank: "domain")
        let input = "9689\n339610\n9688\n2759\n9685\n0\n\n# c\n"
        let template = "{k}|{domain}|{superkingdom}|{d}|{K}|{p}|{c}|{o}|{f}|{g}|{s}"
        for ranks in ["main", "all"] {
            for options in [["--format", template], ["--format", template, "--fill-missing", "--prefix-ranks"]] {
                let arguments = ["lineage", "--no-header", "--ranks", ranks, "--column-names"] + options
                let a = try client(arguments, input: input, on: old), b = try client(arguments, input: input, on: new)
                XCTAssertEqual(a.status, 0, a.stderr)
                XCTAssertEqual(b.status, 0, b.stderr)
                // The rank column is NCBI's own (2759 is superkingdom in one, domain in the other); the rest is the same.
                let formatA = lines(a).map { fields($0).enumerated().filter { $0.offset != 2 }.map(\.element) }
                let formatB = lines(b).map { fields($0).enumerated().filter { $0.offset != 2 }.map(\.element) }
                XCTAssertEqual(formatA, formatB, "--ranks \(ranks) \(options)")
                XCTAssertEqual(lines(a).count, 9, "the column names and one line per input line")
            }
        }
        let plain = try client(["lineage", "--no-header", "--ranks", "all", "--format", template], input: input, on: new)
        let lion = fields(lines(plain)[0])
        XCTAssertEqual(lion[4], "Eukaryota|Eukaryota|Eukaryota|Eukaryota|Metazoa|Chordata|Mammalia|Carnivora|Felidae|Panthera|Panthera leo")
        XCTAssertEqual(fields(lines(plain)[3])[2], "domain", "the rank column is the database's spelling")
        let filled = try client(["lineage", "--no-header", "--ranks", "all", "--format", "{k};{K};{f};{g};{s}", "--fill-missing",
                                 "--prefix-ranks", "--keep-lineage"], input: input, on: old)
        let rows = lines(filled).map(fields)
        XCTAssertEqual(rows[0][4], "root;cellular organisms;Eukaryota;Metazoa;Chordata;Mammalia;Carnivora;Felidae;Pantherinae;Panthera;Panthera leo")
        XCTAssertEqual(rows[0][5], "d__Eukaryota;k__Metazoa;f__Felidae;g__Panthera;s__Panthera leo")
        XCTAssertEqual(rows[1][5], "d__Eukaryota;k__Metazoa;f__Felidae;g__unclassified Felidae genus;s__unclassified Felidae species",
                       "the unclassified Felidae (no rank) lacks a genus and a species")
        XCTAssertEqual(rows[2][5], "d__Eukaryota;k__Metazoa;f__Felidae;g__Panthera;s__unclassified Panthera species")
        XCTAssertEqual(rows[5], ["0", "0", "no rank", "unclassified", "", ";;;;"], "0: nothing to fill from")
        XCTAssertEqual(lines(filled)[6...7], ["", "# c"])
    }
}
