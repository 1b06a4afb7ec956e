import ArgumentParser
import Foundation
import STOLClientKit
import STOLModel
import STOLProtocol

/// `stol-client tree`: the browse view as indented text, a level per indent.
struct Tree: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show a taxon's subtree: indented text down to --depth levels, or the whole subtree as Newick or JSON lines.",
        discussion: """
            --format text (default): indented, --depth levels, --limit children per taxon; with
              --ranks all NCBI's own children at every level (a species' subspecies and strains).
            --format newick: the whole subtree of ID in one Newick line, every node labelled with its
              scientific name (quoted where Newick needs it), for ete4 (Tree(text, parser=1)), iTOL or R's ape
              (read.tree). With --ranks all: NCBI's own tree, children in id order; else the eight ranks,
              children in name order.
            --format jsonl: one JSON object per taxon, in the same order: id, parent_id, depth, rank, name.
            A subtree of more than --max-taxa taxa (default 10,000, at most 50,000) is refused with its size.

            --taxa: the smallest tree connecting the taxa read from stdin (ids or exact names, one per \
            line; at most 10,000), as ete4's get_topology builds it: their lineages joined, every node \
            that was not asked for and has one child left out (--keep-single-children keeps them), \
            the top at the first node from the root that branches or was asked for. Ids and names that \
            name nothing are listed on stderr (and in --format jsonl as a last object \
            {"not_found": [...]}) and the rest is answered; exit 3 then. Children in name order; on \
            the main ranks, taxa under several domains hang from an unnamed top (id 0).
              stol-client tree --taxa --ranks all --format newick --label id < taxids.txt
            """)
    enum Format: String, ExpressibleByArgument, CaseIterable { case text, newick, jsonl }

    @OptionGroup var global: GlobalOptions
    @OptionGroup var language: LanguageOption
    @OptionGroup var ranks: RanksOption
    @Argument(help: "Taxon id to start from (default: the roots; required for newick and jsonl).") var id: Int64?
    @Option(help: "text, newick or jsonl.") var format: Format = .text
    @Option(help: "Levels below the start to show (1–8; text only).") var depth: Int = 2
    @Option(help: "Children shown per taxon (at most 500); the rest are summarised (text only).") var limit: UInt32 = 50
    @Option(help: "Largest subtree to export (newick, jsonl; at most 50,000).") var maxTaxa: UInt32 = 10_000
    @Flag(help: "The smallest tree connecting the taxa read from stdin (see below), instead of a subtree.") var taxa = false
    @Flag(help: "With --taxa: keep the nodes that were not asked for and have one child (ete4's intermediate_nodes).")
    var keepSingleChildren = false
    enum Label: String, ExpressibleByArgument, CaseIterable { case name, id }
    @Option(help: ArgumentHelp("Newick labels: name (scientific names) or id (taxids, as ete4's get_topology).", valueName: "name|id"))
    var label: Label = .name

    func validate() throws {
        if taxa {
            guard id == nil else { throw ValidationError("--taxa reads the taxa from stdin; give no id") }
            return
        }
        guard !keepSingleChildren else { throw ValidationError("--keep-single-children goes with --taxa") }
        if format != .text {
            guard id != nil else { throw ValidationError("--format \(format.rawValue) needs a taxon id") }
            guard (1...50_000).contains(maxTaxa) else { throw ValidationError("--max-taxa must be 1…50000") }
        }
    }

    func run() throws {
        if taxa { return try induced() }
        if format != .text { return try export() }
        try global.run { () throws(ClientError) in
            guard (1...8).contains(depth) else { throw .usage("--depth must be 1…8") }
            let client = global.taxonomy()
            var lines: [String] = []
            var json: [Stol_V1_Taxon] = []
            func visit(_ taxon: Stol_V1_Taxon, level: Int) throws(ClientError) {
                lines.append(String(repeating: "  ", count: level) + TextFormatter.line(taxon, showChildren: true))
                json.append(taxon)
                guard level < depth, taxon.childCount > 0 else { return }
                var children = Stol_V1_ChildrenRequest()
                children.taxonID = taxon.id
                children.limit = limit
                children.language = language.language
                children.ranks = ranks.ranks.wire
                var request = Stol_V1_TaxonomyRequest()
                request.children = children
                let page = try client.ask(request, as: Stol_V1_TaxonPage.self)
                for child in page.taxa { try visit(child, level: level + 1) }
                if page.total > page.taxa.count {
                    lines.append(String(repeating: "  ", count: level + 1) + "… \(page.total - UInt32(page.taxa.count)) more")
                }
            }
            if let id {
                var get = Stol_V1_GetTaxonRequest()
                get.taxonID = id
                get.language = language.language
                var request = Stol_V1_TaxonomyRequest()
                request.getTaxon = get
                var taxon = try client.ask(request, as: Stol_V1_Taxon.self)
                var children = Stol_V1_ChildrenRequest()
                children.taxonID = id
                children.limit = 1
                children.ranks = ranks.ranks.wire
                request.children = children
                if case .children(let page) = try client.call(request).result { taxon.childCount = page.total }
                try visit(taxon, level: 0)
            } else {
                var roots = Stol_V1_RootsRequest()
                roots.language = language.language
                var request = Stol_V1_TaxonomyRequest()
                request.roots = roots
                let page = try client.ask(request, as: Stol_V1_TaxonPage.self)
                for root in page.taxa { try visit(root, level: 0) }
            }
            if global.json {
                var list = Stol_V1_TaxonList()
                list.taxa = json
                print(global.taxonomyJSON(list))
            } else {
                lines.forEach { print($0) }
            }
        }
    }

    /// Taxa one tree may join: the server's limit for `induced_tree`.
    static let maximumTaxa = 10_000

    /// The smallest tree connecting the taxa of stdin. The tree needs every taxon in one
    /// request, and 10,000 names do not fit one (64 KiB; issue 34): names are first
    /// resolved to ids in lineage batches (cut by size, as `lineage`; the server resolves
    /// a name there as `induced_tree` does), then the tree is asked for by ids alone,
    /// which travel packed (10,000 NCBI ids are at most 40,000 bytes).
    private func induced() throws {
        var missing = false
        try global.run { () throws(ClientError) in
            let reader = LineReader()
            var ids: [Int64] = [], names: [String] = [], count = 0
            while let line = try reader.nextLine() {
                let query = line.trimmingBlanks
                guard !query.isEmpty, !query.hasPrefix("#") else { continue }
                count += 1
                // Beyond the limit the taxa are only counted, for the error.
                guard count <= Self.maximumTaxa else { continue }
                if let id = TaxonIDText.id(query) { ids.append(id) } else { names.append(query) }
            }
            guard count <= Self.maximumTaxa else { throw .usage("at most 10,000 taxa per tree, got \(count)") }
            let client = global.taxonomy()
            let named = try resolve(names, client)
            var request = Stol_V1_TaxonomyRequest()
            request.inducedTree = .with {
                $0.taxonIds = ids + named.compactMap { $0 }
                $0.ranks = ranks.ranks.wire
                $0.keepSingleChildren = keepSingleChildren
            }
            var answer = try client.ask(request, as: Stol_V1_InducedTreeResponse.self)
            answer.notFound = Self.notFound(answer.notFound, ids: ids, names: names, resolved: named)
            missing = !answer.notFound.isEmpty
            let output = BatchOutput()
            let depths = answer.depths.map(Int.init)
            switch format {
            case .newick:
                output.line(Newick.write(depths: depths, labels: label == .id
                                         ? answer.ids.map { $0 == 0 ? "" : String($0) } : answer.names))
            case .jsonl:
                var stack: [Int64] = []
                for (index, taxonID) in answer.ids.enumerated() {
                    stack.removeLast(max(0, stack.count - depths[index]))
                    let parent = stack.last.map { "\($0)" } ?? "null"
                    output.line("{\"id\":\(taxonID),\"parent_id\":\(parent),\"depth\":\(depths[index]),"
                                + "\"rank\":\(TextFormatter.jsonString(answer.ranks[index])),"
                                + "\"name\":\(TextFormatter.jsonString(answer.names[index])),\"requested\":\(answer.requested[index])}")
                    stack.append(taxonID)
                }
                if missing {
                    output.line("{\"not_found\":[" + answer.notFound.map(TextFormatter.jsonString).joined(separator: ",") + "]}")
                }
            case .text:
                for (index, taxonID) in answer.ids.enumerated() {
                    let mark = answer.requested[index] ? "" : "  (joins)"
                    output.line(String(repeating: "  ", count: depths[index])
                                + (taxonID == 0 ? "(several roots)" : "\(taxonID)  \(answer.names[index])  (\(answer.ranks[index]))\(mark)"))
                }
            }
            try output.finish()
            if missing {
                let shown = answer.notFound.prefix(20).joined(separator: ", ") + (answer.notFound.count > 20 ? ", …" : "")
                FileHandle.standardError.write(Data("not found (\(answer.notFound.count)): \(shown)\n".utf8))
            }
        }
        if missing { throw ExitCode(ClientError.ExitCode.notFound.rawValue) }
    }

    /// The id each name names on the tree's view (nil: none, or several), from lineage
    /// batches through ``ServiceClient/runBatches``.
    private func resolve(_ names: [String], _ client: TaxonomyClient) throws(ClientError) -> [Int64?] {
        // A name too large to send names nothing (nil): it is listed as not found.
        try client.lineages(of: names, ranks: ranks.ranks.wire, form: .ids).map { result in
            guard let result, !result.hasError, result.hasTaxon else { return nil }
            return result.taxon.id
        }
    }

    /// What names nothing, as `induced_tree` lists it when it resolves names itself: the
    /// ids asked for (in decimal, in input order), then the names (in input order). The
    /// server answered `server` for the ids `ids`, then each resolved name's id; each id it
    /// lists is matched to the next one sent (the same id always gets the same answer).
    static func notFound(_ server: [String], ids: [Int64], names: [String], resolved: [Int64?]) -> [String] {
        var listed = server[...]
        var fromIDs: [String] = []
        for id in ids where listed.first == String(id) { fromIDs.append(listed.removeFirst()) }
        var fromNames: [String] = []
        for (name, id) in zip(names, resolved) {
            guard let id else { fromNames.append(name); continue }
            if listed.first == String(id) {
                listed.removeFirst()
                fromNames.append(name)
            }
        }
        return fromIDs + fromNames + listed
    }

    /// Newick or JSON lines of the whole subtree, from one request.
    private func export() throws {
        try global.run { () throws(ClientError) in
            var request = Stol_V1_TaxonomyRequest()
            request.subtree = .with { $0.taxonID = id!; $0.ranks = ranks.ranks.wire; $0.maxTaxa = maxTaxa }
            let subtree = try global.taxonomy().ask(request, as: Stol_V1_SubtreeResponse.self)
            let depths = subtree.depths.map(Int.init)
            if format == .newick {
                print(Newick.write(depths: depths, labels: subtree.names))
                return
            }
            let output = BatchOutput()
            var stack: [Int64] = []
            for (index, taxonID) in subtree.ids.enumerated() {
                stack.removeLast(max(0, stack.count - depths[index]))
                let parent = stack.last.map { "\($0)" } ?? "null"
                let name = TextFormatter.jsonString(subtree.names[index]), rank = TextFormatter.jsonString(subtree.ranks[index])
                output.line("{\"id\":\(taxonID),\"parent_id\":\(parent),\"depth\":\(depths[index]),\"rank\":\(rank),\"name\":\(name)}")
                stack.append(taxonID)
            }
            try output.finish()
        }
    }
}
