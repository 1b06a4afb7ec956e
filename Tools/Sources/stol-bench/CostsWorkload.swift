import Foundation
import GRDB
import STOLModel
import STOLProtocol

/// The adversarial requests of `stol-bench costs`: for every kind of taxonomy request,
/// the legal requests that cost the server most, as a hostile client that has read
/// protocol/PROTOCOL.md would send them (issue 33). Each is within every limit the
/// protocol states (a frame of at most 64 KiB, batches of at most 1000, 10,000 members
/// or ids, a query of at most 512 bytes); the places in the tree that make them
/// expensive (the node with the most children, the largest subtree allowed, the name
/// most nodes share, …) are found in the database itself, so the workload follows
/// the release it runs on.
struct CostsWorkload {
    struct Case {
        /// The body's name in `protocol/taxonomy.proto` (the table's first column).
        let kind: String
        /// What makes it expensive, for the table.
        let label: String
        var request: Stol_V1_TaxonomyRequest
    }

    private(set) var cases: [Case] = []

    /// The request frame's limit (protocol §2.2): a case that would pass it is cut to fit.
    static let frameLimit = 65_536

    init(tree: TaxonomyTree, database: DatabaseQueue, diff: (from: String, to: String)?) throws {
        let facts = try Facts(tree: tree, database: database)
        addLookups(facts)
        addSearches(facts)
        addBatches(facts)
        addTrees(facts)
        addReleases(facts, diff: diff)
    }

    // MARK: The places that make requests expensive

    /// What the workload is made of, found in the tree and the database.
    struct Facts {
        let tree: TaxonomyTree
        /// Ids of the nodes with the most children in each view.
        let mostChildrenMain: TaxonID, mostChildrenAll: TaxonID
        /// The deepest node of the whole tree, and the deepest of the view.
        let deepest: TaxonID, deepestMain: TaxonID
        /// The largest subtrees of at most 50,000 nodes (and the smallest above), per view.
        let largestAllowedMain: TaxonID, largestAllowedAll: TaxonID, justTooLargeAll: TaxonID
        /// Names many nodes share, the most shared first.
        let sharedNames: [String]
        /// A species of the genus with the most species, and a species of the whole
        /// tree under the node with the most species children.
        let speciesOfLargestGenus: TaxonID, speciesOnWholeTree: TaxonID
        /// The taxon with the most names, ids merged into others, random ids of the deepest nodes.
        let mostNames: TaxonID
        let mergedIDs: [TaxonID]
        let deepIDs: [TaxonID]
        let randomSpecies: [TaxonID]

        init(tree: TaxonomyTree, database: DatabaseQueue) throws {
            self.tree = tree
            let count = tree.count
            var bestMain = 0, bestAll = 0, deepest = 0, deepestMain = 0
            for node in 0..<count {
                if tree.childCount(of: node, in: .main) > tree.childCount(of: bestMain, in: .main) { bestMain = node }
                if tree.childCount(of: node) > tree.childCount(of: bestAll) { bestAll = node }
                if tree.depth(of: node) > tree.depth(of: deepest) { deepest = node }
                if tree.isInView(node), tree.depth(of: node, in: .main) > tree.depth(of: deepestMain, in: .main) { deepestMain = node }
            }
            mostChildrenMain = tree.id(at: bestMain)
            mostChildrenAll = tree.id(at: bestAll)
            self.deepest = tree.id(at: deepest)
            self.deepestMain = tree.id(at: deepestMain)

            // Subtree sizes in both views: deepest nodes first, each added to its parent.
            func sizes(_ view: TaxonomyTree.View) -> [Int32] {
                var sizes = [Int32](repeating: 1, count: count)
                var byDepth: [[Int32]] = []
                for node in 0..<count where view == .all || tree.isInView(node) {
                    let depth = tree.depth(of: node, in: view)
                    while byDepth.count <= depth { byDepth.append([]) }
                    byDepth[depth].append(Int32(node))
                }
                for level in byDepth.reversed() {
                    for node in level {
                        if let parent = tree.parent(of: Int(node), in: view) { sizes[parent] += sizes[Int(node)] }
                    }
                }
                return sizes
            }
            let limit = Int32(50_000)
            let mainSizes = sizes(.main), allSizes = sizes(.all)
            var largestMain = -1, largestAll = -1, tooLarge = -1
            for node in 0..<count {
                if tree.isInView(node), mainSizes[node] <= limit, largestMain < 0 || mainSizes[node] > mainSizes[largestMain] {
                    largestMain = node
                }
                if allSizes[node] <= limit, largestAll < 0 || allSizes[node] > allSizes[largestAll] { largestAll = node }
                if allSizes[node] > limit, tooLarge < 0 || allSizes[node] < allSizes[tooLarge] { tooLarge = node }
            }
            largestMain = max(0, largestMain)
            largestAll = max(0, largestAll)
            tooLarge = max(0, tooLarge)
            largestAllowedMain = tree.id(at: largestMain)
            largestAllowedAll = tree.id(at: largestAll)
            justTooLargeAll = tree.id(at: tooLarge)

            // Runs of equal names in name order.
            var runs: [(name: String, count: Int)] = []
            var previous: String?, run = 0
            tree.forEachInNameOrder { node in
                let name = tree.name(of: node)
                if name == previous {
                    run += 1
                } else {
                    if let previous, run > 1 { runs.append((previous, run)) }
                    previous = name
                    run = 1
                }
            }
            if let previous, run > 1 { runs.append((previous, run)) }
            sharedNames = runs.sorted { $0.count > $1.count }.prefix(1000).map(\.name)

            var genus = 0, speciesParent = 0
            var speciesChildren = [Int32](repeating: 0, count: count)
            for node in 0..<count {
                if tree.mainRank(of: node) == .genus, tree.childCount(of: node, in: .main) > tree.childCount(of: genus, in: .main) {
                    genus = node
                }
                if tree.isSpecies(node, in: .all), let parent = tree.parent(of: node) {
                    speciesChildren[parent] += 1
                    if speciesChildren[parent] > speciesChildren[speciesParent] { speciesParent = parent }
                }
            }
            speciesOfLargestGenus = tree.children(of: genus, in: .main).first { tree.isSpecies($0, in: .main) }.map(tree.id(at:))
                ?? tree.id(at: genus)
            speciesOnWholeTree = tree.children(of: speciesParent).first { tree.isSpecies($0, in: .all) }.map(tree.id(at:))
                ?? tree.id(at: speciesParent)

            var deepNodes = Array(0..<count)
            deepNodes.sort { tree.depth(of: $0) > tree.depth(of: $1) }
            deepIDs = deepNodes.prefix(10_000).map(tree.id(at:))
            var random = SystemRandomNumberGenerator()
            randomSpecies = (0..<count).filter { tree.isSpecies($0, in: .main) }.shuffled(using: &random).prefix(10_000).map(tree.id(at:))

            (mostNames, mergedIDs) = try database.read { db in
                let most = try TaxonID.fetchOne(db, sql: """
                    SELECT taxon_id FROM names GROUP BY taxon_id ORDER BY count(*) DESC LIMIT 1
                    """) ?? 1
                let tables = try Set(String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'table'"))
                let merged = tables.contains("merged_ids")
                    ? try TaxonID.fetchAll(db, sql: "SELECT old_id FROM merged_ids ORDER BY old_id LIMIT 1000") : []
                return (most, merged)
            }
        }
    }

    // MARK: Cases

    private mutating func add(_ kind: String, _ label: String, _ body: Stol_V1_TaxonomyRequest.OneOf_Body, release: String = "") {
        var request = Stol_V1_TaxonomyRequest()
        request.id = UInt64(cases.count + 1)
        request.release = release
        request.body = body
        precondition((try? request.serializedBytes() as [UInt8])?.count ?? .max <= Self.frameLimit,
                     "\(kind) \(label): the request is over the frame limit")
        cases.append(Case(kind: kind, label: label, request: request))
    }

    /// As many of `items` as fit a request frame when each costs `bytes(item)` on the wire.
    private static func fitting<T>(_ items: [T], overhead: Int = 64, bytes: (T) -> Int) -> [T] {
        var total = overhead, result: [T] = []
        for item in items {
            total += bytes(item)
            guard total <= frameLimit else { break }
            result.append(item)
        }
        return result
    }

    private mutating func addLookups(_ facts: Facts) {
        add("status", "status with the releases listed", .status(.init()))
        add("diagnostics", "the report", .diagnostics(.init()))
        add("get_taxon", "the root", .getTaxon(.with { $0.taxonID = 1 }))
        add("get_taxon", "the deepest node", .getTaxon(.with { $0.taxonID = facts.deepest }))
        add("get_taxa", "1000 merged ids", .getTaxa(.with { $0.taxonIds = Array(facts.mergedIDs.prefix(1000)) }))
        add("get_taxa", "1000 random species", .getTaxa(.with { $0.taxonIds = Array(facts.randomSpecies.prefix(1000)) }))
        add("get_taxa", "1000 ids no taxon has", .getTaxa(.with { $0.taxonIds = (0..<1000).map { Int64(1) << 52 + Int64($0) } }))
        add("roots", "the domains", .roots(.init()))
        for (id, label) in [(facts.mostChildrenMain, "most children in the view"), (1, "the root"), (2, "Bacteria")] {
            add("children", "\(label), 500, main ranks", .children(.with { $0.taxonID = id; $0.limit = 500 }))
        }
        add("children", "most children of the whole tree, 500, last page", .children(.with {
            $0.taxonID = facts.mostChildrenAll; $0.limit = 500; $0.ranks = .all
            $0.offset = UInt32(max(0, facts.tree.childCount(of: facts.tree.index(of: facts.mostChildrenAll)!) - 500))
        }))
        add("children", "the root, whole tree, 500", .children(.with { $0.taxonID = 1; $0.limit = 500; $0.ranks = .all }))
        for (id, label) in [(Int64(2), "Bacteria"), (1, "the root"), (facts.mostChildrenMain, "most children in the view"),
                            (facts.mostChildrenAll, "most children of the whole tree"), (facts.mostNames, "the most names")] {
            add("detail", label, .detail(.with { $0.taxonID = id }))
        }
        add("ancestors", "the deepest node, whole tree", .ancestors(.with { $0.taxonID = facts.deepest; $0.ranks = .all }))
        add("ancestors", "the deepest node of the view", .ancestors(.with { $0.taxonID = facts.deepestMain }))
        add("compare", "the two deepest nodes, whole tree", .compare(.with {
            $0.taxonA = facts.deepest; $0.taxonB = facts.deepIDs[facts.deepIDs.count / 2]; $0.ranks = .all
        }))
        add("compare", "the deepest node and the root", .compare(.with { $0.taxonA = facts.deepest; $0.taxonB = 1 }))
        add("relatives", "largest genus, n 100, computed, every candidate", .relatives(.with {
            $0.taxonID = facts.speciesOfLargestGenus; $0.n = 100; $0.computed = true; $0.maxCandidates = .max
        }))
        add("relatives", "whole tree, n 100, every candidate", .relatives(.with {
            $0.taxonID = facts.speciesOnWholeTree; $0.n = 100; $0.ranks = .all; $0.maxCandidates = .max
        }))
        add("relatives", "whole tree, n 100, default guard", .relatives(.with {
            $0.taxonID = facts.speciesOnWholeTree; $0.n = 100; $0.ranks = .all
        }))
        add("history", "Homo sapiens", .history(.with { $0.taxonID = 9606 }))
    }

    private mutating func addSearches(_ facts: Facts) {
        func search(_ label: String, _ query: String, _ edit: (inout Stol_V1_SearchRequest) -> Void = { _ in }) {
            var body = Stol_V1_SearchRequest()
            body.query = query
            edit(&body)
            precondition(body.query.utf8.count <= 512 && body.within.utf8.count <= 512, label)
            add("search", label, .search(body))
        }
        func repeated(_ word: String) -> String {
            Array(repeating: word, count: 512 / (word.utf8.count + 1)).joined(separator: " ")
        }
        // Words NCBI's names use most (placeholders, environmental samples, viruses).
        let frequent = ["sp", "bacterium", "uncultured", "virus", "strain", "clone", "environmental", "isolate",
                        "unclassified", "metagenome", "group", "complex", "marine", "soil", "fungal", "endophyte"]
        search("170 × sp within Homo sapiens (issue 33)", repeated("sp")) { $0.within = "9606" }
        search("170 × sp as a phrase (issue 33)", repeated("sp")) { $0.phrase = true }
        search("170 × sp", repeated("sp"))
        search("170 × sp, prefix", repeated("sp")) { $0.prefix = true }
        search("51 × bacterium within Homo sapiens", repeated("bacterium")) { $0.within = "9606" }
        search("16 frequent words", frequent.joined(separator: " "))
        search("16 frequent words within Homo sapiens", frequent.joined(separator: " ")) { $0.within = "9606" }
        search("16 frequent words, prefix", frequent.joined(separator: " ")) { $0.prefix = true }
        search("frequent words as phrases", stride(from: 0, to: frequent.count - 1, by: 2)
            .map { "\"\(frequent[$0]) \(frequent[$0 + 1])\"" }.joined(separator: " "))
        let words = (frequent + frequent + frequent).prefix(60)
        search("60 frequent words, repeated", words.joined(separator: " "))
        search("sp within Homo sapiens", "sp") { $0.within = "9606" }
        search("virus within Bacteria", "virus") { $0.within = "2" }
        search("uncultured bacterium within Homo sapiens", "uncultured bacterium") { $0.within = "9606" }
        search("uncultured bacterium, limit 200", "uncultured bacterium") { $0.limit = 200 }
        search("sp, limit 200", "sp") { $0.limit = 200 }
        search("unclassified, rank species", "unclassified") { $0.rank = .species }
        search("sp, rank kingdom", "sp") { $0.rank = .kingdom }
        search("bacterium, status CR", "bacterium") { $0.conservation = ["CR"] }
        search("sp, every status", "sp") { $0.conservation = ["LC", "NT", "VU", "EN", "CR", "EW", "EX", "NE", "DD"] }
        search("sp, rank species within Bacteria, status LC", "sp") { $0.rank = .species; $0.within = "2"; $0.conservation = ["LC"] }
        search("a, prefix, rank species", "a") { $0.prefix = true; $0.rank = .species }
        search("s, prefix within Homo sapiens", "s") { $0.prefix = true; $0.within = "9606" }
        search("one 512-letter word (fuzzy)", String(repeating: "a", count: 512))
        search("misspelt words (fuzzy)", "bacteriun virua strian uncultred envirnmental")
        search("misspelt words within Bacteria (fuzzy)", "bacteriun virua strian") { $0.within = "2" }
        search("128 one-letter words", (0..<128).map { String(UnicodeScalar(UInt8(97 + $0 % 26))) }.joined(separator: " "))
        search("accented text", String(repeating: "é", count: 256))
        search("within an ambiguous name", "sp") { $0.within = facts.sharedNames.first ?? "environmental samples" }
    }

    private mutating func addBatches(_ facts: Facts) {
        let shared = facts.sharedNames.first ?? "environmental samples"
        let sameName = [String](repeating: shared, count: 1000)
        let deepIDs = facts.deepIDs.prefix(1000).map(String.init)
        for (ranks, view) in [(Stol_V1_RankView.main, "main ranks"), (.all, "whole tree")] {
            for form in [Stol_V1_LineageForm.taxa, .compact] {
                let formName = form == .taxa ? "taxa" : "compact"
                add("lineage_batch", "1000 deepest ids, \(view), \(formName)", .lineageBatch(.with {
                    $0.queries = deepIDs; $0.ranks = ranks; $0.form = form
                }))
                add("lineage_batch", "1000 × the most shared name, \(view), \(formName)", .lineageBatch(.with {
                    $0.queries = sameName; $0.ranks = ranks; $0.form = form
                }))
            }
            add("lineage_batch", "1000 unknown names, \(view)", .lineageBatch(.with {
                $0.queries = (0..<1000).map { "no such name \($0) of a taxon" }; $0.ranks = ranks
            }))
            add("compare_batch", "1000 pairs of the most shared name, \(view)", .compareBatch(.with {
                $0.pairs = (0..<1000).map { _ in .with { $0.a = shared; $0.b = shared } }; $0.ranks = ranks
            }))
            add("compare_batch", "1000 pairs of deep nodes, \(view)", .compareBatch(.with {
                $0.pairs = (0..<1000).map { i in .with { $0.a = deepIDs[i]; $0.b = deepIDs[999 - i] } }; $0.ranks = ranks
            }))
            let members = Self.fitting(facts.deepIDs.map(String.init), overhead: 12_000) { $0.utf8.count + 2 }.prefix(10_000)
            add("lca_batch", "\(members.count) deep members in 1000 sets, \(view)", .lcaBatch(.with {
                let perSet = max(1, (members.count + 999) / 1000)
                $0.sets = stride(from: 0, to: members.count, by: perSet).map { start in
                    .with { $0.key = "s"; $0.members = Array(members[start..<min(members.count, start + perSet)]) }
                }
                $0.ranks = ranks
            }))
            let names = Self.fitting(facts.sharedNames, overhead: 100) { $0.utf8.count + 4 }
            add("lca_batch", "\(names.count) shared names in one set, majority 0.5, \(view)", .lcaBatch(.with {
                $0.sets = [.with { $0.key = "s"; $0.members = names }]; $0.ranks = ranks; $0.majority = 0.5
            }))
        }
        add("name_lookup", "1000 × the most shared name", .nameLookup(.with { $0.names = sameName }))
        add("name_lookup", "1000 × the most shared name within the root", .nameLookup(.with { $0.names = sameName; $0.within = "1" }))
        add("name_lookup", "the 1000 most shared names within Bacteria", .nameLookup(.with {
            $0.names = Self.fitting(facts.sharedNames, overhead: 100) { $0.utf8.count + 2 }; $0.within = "2"
        }))
        add("name_lookup", "1000 unknown names", .nameLookup(.with { $0.names = (0..<1000).map { "no such name \($0) of a taxon" } }))
    }

    private mutating func addTrees(_ facts: Facts) {
        add("subtree", "largest allowed, main ranks, 50,000", .subtree(.with { $0.taxonID = facts.largestAllowedMain; $0.maxTaxa = 50_000 }))
        add("subtree", "largest allowed, whole tree, 50,000", .subtree(.with {
            $0.taxonID = facts.largestAllowedAll; $0.maxTaxa = 50_000; $0.ranks = .all
        }))
        add("subtree", "just over 50,000, whole tree (refused)", .subtree(.with {
            $0.taxonID = facts.justTooLargeAll; $0.maxTaxa = 50_000; $0.ranks = .all
        }))
        add("subtree", "the root (refused)", .subtree(.with { $0.taxonID = 1; $0.maxTaxa = 50_000; $0.ranks = .all }))
        // A range of the tree's preorder: the root's is every node, its ranks scanned as bytes.
        add("descendants", "the root, every rank, last page of 10,000", .descendants(.with {
            $0.taxonID = 1; $0.offset = 2_600_000; $0.limit = 10_000
        }))
        add("descendants", "the root, species, 10,000", .descendants(.with { $0.taxonID = 1; $0.rank = "species"; $0.limit = 10_000 }))
        add("descendants", "the root, no rank, last page", .descendants(.with {
            $0.taxonID = 1; $0.rank = "no rank"; $0.offset = 300_000; $0.limit = 10_000
        }))
        for (ranks, view) in [(Stol_V1_RankView.main, "main ranks"), (.all, "whole tree")] {
            add("induced_tree", "10,000 random species, \(view)", .inducedTree(.with {
                $0.taxonIds = Array(facts.randomSpecies.prefix(10_000)); $0.ranks = ranks
            }))
            add("induced_tree", "10,000 deepest nodes, \(view)", .inducedTree(.with {
                $0.taxonIds = Array(facts.deepIDs.prefix(10_000)); $0.ranks = ranks; $0.keepSingleChildren = true
            }))
            let shared = facts.sharedNames.first ?? "environmental samples"
            let names = Self.fitting([String](repeating: shared, count: 10_000), overhead: 100) { $0.utf8.count + 2 }
            add("induced_tree", "\(names.count) × the most shared name, \(view)", .inducedTree(.with { $0.names = names; $0.ranks = ranks }))
        }
    }

    private mutating func addReleases(_ facts: Facts, diff: (from: String, to: String)?) {
        guard let diff else { return }
        add("diff", "\(diff.from) → \(diff.to), first page of 100,000", .diff(.with { $0.fromRelease = diff.from; $0.toRelease = diff.to }))
        add("diff", "\(diff.to) → \(diff.from), first page of 100,000", .diff(.with { $0.fromRelease = diff.to; $0.toRelease = diff.from }))
        add("diff", "\(diff.from) → \(diff.to), 1000 merged ids", .diff(.with {
            $0.fromRelease = diff.from; $0.toRelease = diff.to; $0.taxonIds = Array(facts.mergedIDs.prefix(1000))
        }))
    }
}
