import Foundation
import STOLModel
import STOLPipeline
import STOLProtocol
@testable import STOLTaxonomy
import STOLTestFixtures
import XCTest

/// `diff` and `history` against an independent reading of the release files: two
/// random NCBI taxdumps (the second one the first with nodes added, deleted,
/// merged — recorded in merged.dmp —, renamed, moved and re-ranked, superkingdom
/// becoming domain as in NCBI's 2025 change) are built by the real pipeline, and the
/// service's diff, read page by page with pages small enough to cut the ids
/// anywhere, must list exactly what a plain comparison of the two dumps' nodes.dmp,
/// names.dmp and merged.dmp finds.
final class ReleaseDiffTests: XCTestCase {
    private var directory: String!
    private var releases: String { directory + "/releases" }

    /// A taxdump in memory: id → (parent, rank, scientific name), and merges.
    struct Dump {
        var nodes: [Int64: (parent: Int64, rank: String, name: String)] = [:]
        var merged: [Int64: Int64] = [:]
        var deleted: [Int64] = []
    }

    override func setUpWithError() throws {
        directory = try makeTemporaryDirectory(self)
        try FileManager.default.createDirectory(atPath: releases, withIntermediateDirectories: true)
        try buildFixtureDatabase(at: directory + "/bundled.sqlite", in: directory)
    }

    /// Ranks by depth below the root: the dump stays a tree the pipeline takes as NCBI's.
    private static let ranks = ["superkingdom", "kingdom", "phylum", "class", "order", "family", "genus", "species", "strain"]

    private static func randomDump(size: Int, using generator: inout SplitMix64) -> Dump {
        var dump = Dump()
        dump.nodes[1] = (1, "no rank", "root")
        var byDepth: [[Int64]] = [[1]]
        for id in Int64(2)...Int64(size) {
            let depth = min(byDepth.count, Int.random(in: 1...9, using: &generator))
            let parent = byDepth[depth - 1].randomElement(using: &generator)!
            let rank = Bool.random(using: &generator) && depth > 1 && Int.random(in: 0..<6, using: &generator) == 0
                ? "clade" : ranks[depth - 1]
            dump.nodes[id] = (parent, rank, "Taxon \(id) é")
            if byDepth.count == depth { byDepth.append([]) }
            byDepth[depth].append(id)
        }
        return dump
    }

    /// The next release: every kind of change, on random nodes.
    private static func evolve(_ old: Dump, using generator: inout SplitMix64) -> Dump {
        var new = old
        let ids = old.nodes.keys.filter { $0 != 1 }.sorted()
        let children = Dictionary(grouping: ids, by: { old.nodes[$0]!.parent })
        let leaves = ids.filter { children[$0] == nil }.shuffled(using: &generator)
        for (index, leaf) in leaves.prefix(60).enumerated() {
            new.nodes[leaf] = nil
            switch index % 3 {
            case 0: new.merged[leaf] = old.nodes[leaf]!.parent   // merged into its parent
            case 1: new.deleted.append(leaf)                       // delnodes.dmp
            default: break                                         // gone without a word
            }
        }
        for id in ids.shuffled(using: &generator).prefix(80) where new.nodes[id] != nil {
            new.nodes[id]!.name += " renamed"
        }
        // Moved to another node of the same depth's parent level: still a tree.
        for id in ids.shuffled(using: &generator).prefix(80) where new.nodes[id] != nil {
            let parent = old.nodes[id]!.parent
            let candidates = ids.filter { new.nodes[$0] != nil && $0 != parent
                && old.nodes[$0]!.rank == old.nodes[parent]?.rank && old.nodes[$0]!.parent == old.nodes[parent]?.parent }
            if let other = candidates.randomElement(using: &generator) { new.nodes[id]!.parent = other }
        }
        for id in ids where new.nodes[id]?.rank == "superkingdom" { new.nodes[id]!.rank = "domain" }
        for id in ids.shuffled(using: &generator).prefix(30) where new.nodes[id]?.rank == "clade" { new.nodes[id]!.rank = "no rank" }
        let top = ids.max()!
        for id in (top + 1)...(top + 50) {
            let parent = ids.filter { new.nodes[$0] != nil }.randomElement(using: &generator)!
            new.nodes[id] = (parent, "strain", "Added \(id)")
        }
        return new
    }

    private func write(_ dump: Dump, release: String) throws {
        let source = directory + "/dump-\(release)"
        try FileManager.default.createDirectory(atPath: source, withIntermediateDirectories: true)
        let ids = dump.nodes.keys.sorted()
        try writeTSV(source, "nodes.dmp", ids.map { id in
            let node = dump.nodes[id]!
            return dumpRow(String(id), String(node.parent), node.rank, "", "0", "0", "1", "0", "1", "0", "0", "0", "")
        })
        try writeTSV(source, "names.dmp", ids.map { dumpRow(String($0), dump.nodes[$0]!.name, "", "scientific name") })
        if !dump.merged.isEmpty {
            try writeTSV(source, "merged.dmp", dump.merged.keys.sorted().map { dumpRow(String($0), String(dump.merged[$0]!)) })
        }
        if !dump.deleted.isEmpty { try writeTSV(source, "delnodes.dmp", dump.deleted.sorted().map { dumpRow(String($0)) }) }
        var options = TaxonomyBuilder.Options()
        options.format = .ncbi
        options.provenance = Provenance(source: "NCBI Taxonomy", release: release, idNamespace: "ncbi-taxid", licence: "",
                                        attribution: "", citation: "", tool: "test", built: "2026-01-01T00:00:00Z")
        _ = try TaxonomyBuilder(options: options, logger: quietLogger).build(source: source, output: releases + "/\(release).sqlite")
    }

    /// Reads a dump directory back from its files, sharing nothing with the pipeline.
    private func read(_ release: String) throws -> Dump {
        let source = directory + "/dump-\(release)"
        func rows(_ name: String) -> [[String]] {
            guard let text = try? String(contentsOfFile: source + "/" + name, encoding: .utf8) else { return [] }
            return text.split(separator: "\n").map { line in
                var fields = line.components(separatedBy: "\t|\t")
                fields[fields.count - 1] = String(fields[fields.count - 1].dropLast(2))  // "\t|"
                return fields
            }
        }
        var dump = Dump()
        let names = Dictionary(rows("names.dmp").filter { $0[3] == "scientific name" }.map { (Int64($0[0])!, $0[1]) }) { a, _ in a }
        for fields in rows("nodes.dmp") {
            let id = Int64(fields[0])!
            dump.nodes[id] = (Int64(fields[1])!, fields[2], names[id]!)
        }
        for fields in rows("merged.dmp") { dump.merged[Int64(fields[0])!] = Int64(fields[1])! }
        return dump
    }

    /// The changes a plain comparison of two dumps finds, as "kind id old new" lines.
    private static func expected(from old: Dump, to new: Dump) -> [String] {
        var lines: [String] = []
        for id in Set(old.nodes.keys).union(new.nodes.keys).sorted() {
            switch (old.nodes[id], new.nodes[id]) {
            case (nil, let b?): lines.append("added \(id) - \(b.parent)")
            case (_?, nil):
                if let target = new.merged[id] { lines.append("merged \(id) - \(target)") } else { lines.append("deleted \(id) - -") }
            case (let a?, let b?):
                // The root is its own parent in nodes.dmp: no parent.
                let oldParent = a.parent == id ? "" : String(a.parent), newParent = b.parent == id ? "" : String(b.parent)
                if a.name != b.name { lines.append("renamed \(id) \(a.name) \(b.name)") }
                if oldParent != newParent { lines.append("moved \(id) \(oldParent) \(newParent)") }
                if a.rank != b.rank { lines.append("rank_changed \(id) \(a.rank) \(b.rank)") }
            case (nil, nil): break
            }
        }
        return lines
    }

    private static func line(_ change: Stol_V1_TaxonChange) -> String {
        switch change.kind {
        case .added: "added \(change.id) - \(change.newValue)"
        case .merged: "merged \(change.id) - \(change.newID)"
        case .deleted: "deleted \(change.id) - -"
        case .renamed: "renamed \(change.id) \(change.oldValue) \(change.newValue)"
        case .moved: "moved \(change.id) \(change.oldValue) \(change.newValue)"
        case .rankChanged: "rank_changed \(change.id) \(change.oldValue) \(change.newValue)"
        default: "unknown \(change)"
        }
    }

    private func service() throws -> TaxonomyService {
        TaxonomyService(provider: try ActiveDatabaseProvider(
            bundledPath: directory + "/bundled.sqlite", referencePath: directory + "/reference.sqlite",
            releasesDirectory: releases, activationPath: directory + "/activation.json", logger: quietLogger))
    }

    private func ask(_ service: TaxonomyService, _ body: Stol_V1_TaxonomyRequest.OneOf_Body) async -> Stol_V1_TaxonomyResponse {
        var request = Stol_V1_TaxonomyRequest()
        request.id = 5
        request.body = body
        return await service.respond(to: request, context: ServiceHarness.context)
    }

    func testDiff_pageByPage_listsExactlyWhatAPlainComparisonOfTheDumpFilesFinds() async throws {
        var generator = SplitMix64(seed: TestSeed.make(for: #function))
        let old = Self.randomDump(size: 1500, using: &generator)
        let new = Self.evolve(old, using: &generator)
        try write(old, release: "2023.11.4")
        try write(new, release: "2024.9.7")
        let expected = Self.expected(from: try read("2023.11.4"), to: try read("2024.9.7"))
        XCTAssertGreaterThan(expected.count, 300, "every kind of change is there")
        for kind in ["added", "deleted", "merged", "renamed", "moved", "rank_changed"] {
            XCTAssertTrue(expected.contains { $0.hasPrefix(kind + " ") }, "no \(kind) change in the fixture")
        }

        let service = try service()
        for limit: UInt32 in [1, 37, 500, 0] {
            var lines: [String] = []
            var afterID: Int64 = 0
            var pages = 0
            while true {
                let answer = await ask(service, .diff(.with {
                    $0.fromRelease = "2023.11.4"; $0.toRelease = "2024.9.7"; $0.afterID = afterID; $0.limit = limit
                }))
                guard case .diff(let page) = answer.result else { return XCTFail("\(answer)") }
                lines += page.changes.map(Self.line)
                pages += 1
                if page.done { break }
                XCTAssertGreaterThan(page.nextAfterID, afterID, "pages move forward")
                afterID = page.nextAfterID
                if pages > 5000 { return XCTFail("the diff never ended") }
            }
            XCTAssertEqual(lines, expected, "limit \(limit), \(pages) pages")
        }
        // The merged ids name the taxon they went to.
        let merged = await ask(service, .diff(.with {
            $0.fromRelease = "2023.11.4"; $0.toRelease = "2024.9.7"; $0.taxonIds = Array(new.merged.keys.prefix(3))
        }))
        XCTAssertEqual(merged.diff.changes.map(\.kind), Array(repeating: .merged, count: min(3, new.merged.count)))
        XCTAssertTrue(merged.diff.changes.allSatisfy { !$0.newName.isEmpty }, "\(merged.diff.changes)")
    }

    func testDiff_ofChosenIds_andOfAReleaseWithItself() async throws {
        var generator = SplitMix64(seed: TestSeed.make(for: #function))
        let old = Self.randomDump(size: 400, using: &generator)
        let new = Self.evolve(old, using: &generator)
        try write(old, release: "2023.11.4")
        try write(new, release: "2024.9.7")
        let expected = Self.expected(from: old, to: new)
        let service = try service()
        let chosen = Array(Set(old.nodes.keys).union(new.nodes.keys).sorted().shuffled(using: &generator).prefix(200))
        let answer = await ask(service, .diff(.with {
            $0.fromRelease = "2023.11.4"; $0.toRelease = "2024.9.7"; $0.taxonIds = chosen
        }))
        let chosenSet = Set(chosen)
        XCTAssertEqual(Set(answer.diff.changes.map(Self.line)),
                       Set(expected.filter { chosenSet.contains(Int64($0.split(separator: " ")[1])!) }))
        let same = await ask(service, .diff(.with { $0.fromRelease = "2024.9.7"; $0.toRelease = "2024.9.7" }))
        XCTAssertEqual(same.diff.changes, [], "a release has no changes against itself")
        XCTAssertTrue(same.diff.done)
        let missing = await ask(service, .diff(.with { $0.fromRelease = "2024.9.7"; $0.toRelease = "1999.1.1" }))
        XCTAssertEqual(missing.protocolError?.code, .releaseNotInstalled)
        let tooMany = await ask(service, .diff(.with {
            $0.fromRelease = "2023.11.4"; $0.toRelease = "2024.9.7"; $0.taxonIds = Array(1...1001)
        }))
        XCTAssertEqual(tooMany.protocolError?.code, .invalidRequest)
    }

    func testHistory_followsOneIdThroughEveryRelease_oldestFirst() async throws {
        var generator = SplitMix64(seed: TestSeed.make(for: #function))
        let first = Self.randomDump(size: 300, using: &generator)
        let second = Self.evolve(first, using: &generator)
        let third = Self.evolve(second, using: &generator)
        // Written out of order: history sorts by release, 2021.3.25 before 2021.11.16.
        try write(third, release: "2024.9.7")
        try write(first, release: "2021.3.25")
        try write(second, release: "2021.11.16")
        let service = try service()
        guard let renamed = second.nodes.keys.first(where: { first.nodes[$0] != nil && second.nodes[$0]!.name != first.nodes[$0]!.name
                                                             && third.nodes[$0] != nil }),
              let merged = second.merged.keys.first else { return XCTFail("the fixture has no renamed or merged id") }
        let history = await ask(service, .history(.with { $0.taxonID = renamed }))
        XCTAssertEqual(history.history.releases.map(\.release), ["bundled", "2021.3.25", "2021.11.16", "2024.9.7"])
        XCTAssertEqual(history.history.releases.dropFirst().map(\.name),
                       [first.nodes[renamed]!.name, second.nodes[renamed]!.name, third.nodes[renamed]!.name])
        XCTAssertEqual(history.history.releases[2].parentID, second.nodes[renamed]!.parent)
        let gone = await ask(service, .history(.with { $0.taxonID = merged }))
        XCTAssertEqual(gone.history.releases[1].present, true)
        XCTAssertEqual(gone.history.releases[2].present, false)
        XCTAssertEqual(gone.history.releases[2].mergedInto, second.merged[merged]!)
    }

    /// A run of new ids with long names (NCBI 2021.11.16 → 2023.11.4 added 87,736 in one
    /// page of ids, 4.6 MB): a page ends when its answer grows past its budget, on an id
    /// boundary, and the next one goes on from there; nothing is lost or repeated.
    func testAPageOfManyChanges_isCutByItsSize_andTheNextPageGoesOn() async throws {
        var generator = SplitMix64(seed: TestSeed.make(for: #function))
        let old = Self.randomDump(size: 200, using: &generator)
        var new = old
        let long = String(repeating: "x", count: 120)
        for id in Int64(1000)..<Int64(31_000) { new.nodes[id] = (1, "strain", "Added \(id) \(long)") }
        try write(old, release: "2023.11.4")
        try write(new, release: "2024.9.7")
        let service = try service()
        var lines: [String] = []
        var afterID: Int64 = 0
        var pages = 0
        while true {
            let answer = await ask(service, .diff(.with { $0.fromRelease = "2023.11.4"; $0.toRelease = "2024.9.7"; $0.afterID = afterID }))
            guard case .diff(let page) = answer.result else { return XCTFail("\(answer)") }
            XCTAssertLessThan((try answer.serializedBytes() as [UInt8]).count, 3 << 20, "page \(pages) stays well under the 4 MiB frame")
            lines += page.changes.map(Self.line)
            pages += 1
            if page.done { break }
            afterID = page.nextAfterID
        }
        XCTAssertGreaterThan(pages, 1, "30,000 long additions do not fit one page")
        XCTAssertEqual(lines, Self.expected(from: old, to: new))
    }
}
