import ArgumentParser
import Foundation
import STOLClientKit
import STOLModel
import STOLProtocol

/// `stol-client annotate`: taxonomy on the nodes of a Newick tree the user already
/// has, as ete4's `NCBITaxa.annotate_tree` puts it there (``NewickTree``).
struct Annotate: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Put taxonomy (taxid, name, rank, lineage) on the nodes of a Newick tree whose labels are taxids or names.",
        discussion: """
            Reads one Newick tree (FILE, or stdin) as ete4 reads it with parser=1: labels bare or \
            quoted, branch lengths, NHX comments [&&NHX:key=value:…]; other [comments] are dropped. \
            Each label that is a taxid or an exact scientific or common name is looked up on NCBI's \
            whole tree. An inner node's label is looked up too unless it is a number (100, 0.95), \
            which is a support value (--internal-labels auto, the default, and it says how many it \
            read so on stderr); --internal-labels taxa looks up every inner label, numbers too, and \
            --internal-labels support none (--internal-support, ete4's default parser). An inner node \
            without a taxon of its own gets the lowest common ancestor of its annotated leaves \
            (ete4's ignore_unclassified).
            --format newick (default): the tree as it was, each annotated node with ete4's \
            properties in NHX, as ete4's write gives them: \
            [&&NHX:common_name=…:lineage=1|131567|…:named_lineage=root|cellular organisms|…:rank=…:sci_name=…:taxid=…] \
            (its own NHX properties are kept, ours replace those of the same key); ete4's \
            Tree(text, parser=1) reads them back. --label name or id writes the taxon's name or id \
            as the annotated nodes' label instead of the label they had.
            --format jsonl: one JSON object per node in preorder: node, parent, label, leaf, and \
            when annotated taxid, sci_name, rank, common_name, lineage, named_lineage and from \
            ("label", or "leaves" for a common ancestor).
            Leaves whose label names no single taxon (unknown, an ambiguous name) are left exactly \
            as they were and listed on stderr (and with jsonl in a last {"not_found": […]}). An inner \
            label whose taxon is not an ancestor of every annotated leaf below it (a support value read \
            as a taxon id, a mislabelled clade) keeps its taxon and is named in a warning on stderr. \
            Exit 3 in either case, else 0. An unquoted label's `_` is a blank, as Newick has it \
            (Mus_musculus is looked up as Mus musculus; a quoted 'Mus_musculus' as written). A \
            malformed tree is refused (exit 65) with the byte where reading failed.
            Examples:
              stol-client annotate species.nwk > annotated.nwk
              stol-client tree --taxa --format newick --label id < taxids.txt | stol-client annotate --internal-labels taxa --label name
            """)

    enum Format: String, ExpressibleByArgument, CaseIterable { case newick, jsonl }

    @OptionGroup var global: GlobalOptions
    @OptionGroup var language: LanguageOption
    @Argument(help: "The Newick file (default: stdin).") var file: String?
    @Option(help: "newick or jsonl.") var format: Format = .newick
    @Option(help: ArgumentHelp("The label of an annotated node: keep (as it was), name or id.", valueName: "keep|name|id"))
    var label: NewickTree.LabelChoice = .keep
    @Option(help: ArgumentHelp("Inner nodes' labels: auto (a number is a support value, other labels taxa), taxa (all "
                               + "looked up) or support (none; kept as they are).", valueName: "auto|taxa|support"))
    var internalLabels: NewickTree.InnerLabels = .auto
    @Flag(help: "Inner nodes' labels are support values (ete4's default parser): --internal-labels support.")
    var internalSupport = false

    /// The largest tree read (a tree of a million leaves is about 30 MB): an endless input
    /// is refused, never read into memory whole.
    static let maximumTreeBytes = 256 << 20

    func run() throws {
        var missing = false
        try global.run { () throws(ClientError) in
            let text: String
            do throws(LineReader.Failure) {
                if let file {
                    let descriptor = open(file, O_RDONLY | O_CLOEXEC)
                    guard descriptor >= 0 else { throw .unreadable(errno: errno, source: file) }
                    defer { close(descriptor) }
                    text = String(decoding: try LineReader.readAll(descriptor: descriptor, limit: Self.maximumTreeBytes, source: file),
                                  as: UTF8.self)
                } else {
                    text = String(decoding: try LineReader.readAll(descriptor: STDIN_FILENO, limit: Self.maximumTreeBytes,
                                                                   source: "standard input"), as: UTF8.self)
                }
            } catch {
                throw error.clientError
            }
            let tree: NewickTree
            do { tree = try NewickTree(parsing: text) } catch { throw .badFile("\(file ?? "stdin"): \(error)") }
            let inner: NewickTree.InnerLabels = internalSupport ? .support : internalLabels
            let (queries, supportValues) = tree.queries(inner: inner)
            if inner == .auto && supportValues > 0 {
                let what = supportValues == 1 ? "inner label is a number, read as a support value"
                    : "inner labels are numbers, read as support values"
                let note = "annotate: \(supportValues) \(what), not as taxa (--internal-labels taxa looks them up)\n"
                FileHandle.standardError.write(Data(note.utf8))
            }
            let client = try global.batchTaxonomy()
            let lineages = try self.lineages(of: Array(Set(queries.map(\.label))).sorted(), client)
            // Each node's own taxon, then the one the server gives it (annotate_tree: its
            // own, else its annotated leaves' common ancestor): nothing to ask without one.
            var own = [Int64](repeating: 0, count: tree.nodes.count)
            for (node, label) in queries { if let lineage = lineages[label] { own[node] = lineage[lineage.count - 1].id } }
            let answer = own.contains(where: { $0 != 0 }) ? try annotateTree(tree, own: own, client)
                : AnnotateTreeParts.Answer(taxa: own, notAncestors: [])
            let assigned = answer.taxa
            var byID: [Int64: [NewickTree.Rung]] = [:]
            for lineage in lineages.values { byID[lineage[lineage.count - 1].id] = lineage }
            let ancestors = Set(assigned.filter { $0 > 0 && byID[$0] == nil }).sorted().map(String.init)
            for lineage in try self.lineages(of: ancestors, client).values { byID[lineage[lineage.count - 1].id] = lineage }
            var annotations: [Int: NewickTree.Annotation] = [:]
            for (node, taxon) in assigned.enumerated() where taxon > 0 {
                guard let lineage = byID[taxon] else {
                    throw .local("the taxonomy service gave node \(node) the taxon \(taxon), whose lineage it does not have")
                }
                annotations[node] = NewickTree.Annotation(lineage: lineage, fromLabel: own[node] != 0)
            }
            // Whole-tree lineages carry no common names: the annotated taxa's own, in one more pass.
            let named = try client.taxa(ids: Array(Set(annotations.values.map(\.taxon.id))), language: language.language)
            for (node, annotation) in annotations {
                annotations[node]?.lineage[annotation.lineage.count - 1].commonName = named[annotation.taxon.id]?.commonName ?? ""
            }
            // Inner labels that cannot name their clade: said on stderr, and exit 3 (the labels are kept).
            let misplaced = answer.notAncestors.map { node in
                "node \(node) '\(tree.nodes[node].label)' (taxon \(own[node])\(byID[own[node]].map { " " + $0[$0.count - 1].name } ?? ""))"
            }
            let found = Set(queries.filter { own[$0.node] != 0 }.map(\.node))
            // Listed as written (`unknown_leaf`, not the text looked up).
            let notFound = queries.filter { tree.nodes[$0.node].children.isEmpty && !found.contains($0.node) }
                .map { tree.nodes[$0.node].label }
            missing = !notFound.isEmpty || !misplaced.isEmpty
            let output = BatchOutput()
            switch format {
            case .newick:
                output.line(tree.written { node in
                    annotations[node].map { tree.content(of: node, annotation: $0, label: label) }
                })
            case .jsonl:
                for (index, node) in tree.nodes.enumerated() {
                    var line = "{\"node\":\(index),\"parent\":\(node.parent.map(String.init) ?? "null"),"
                        + "\"label\":\(TextFormatter.jsonString(node.label)),\"leaf\":\(node.children.isEmpty)"
                    if let annotation = annotations[index] {
                        let taxon = annotation.taxon
                        line += ",\"taxid\":\(taxon.id),\"sci_name\":\(TextFormatter.jsonString(taxon.name))"
                            + ",\"rank\":\(TextFormatter.jsonString(taxon.rank))"
                            + ",\"common_name\":\(TextFormatter.jsonString(taxon.commonName))"
                            + ",\"lineage\":[" + annotation.lineage.map { String($0.id) }.joined(separator: ",") + "]"
                            + ",\"named_lineage\":[" + annotation.lineage.map { TextFormatter.jsonString($0.name) }.joined(separator: ",") + "]"
                            + ",\"from\":\"\(annotation.fromLabel ? "label" : "leaves")\""
                    }
                    output.line(line + "}")
                }
                if missing { output.line("{\"not_found\":[" + notFound.map(TextFormatter.jsonString).joined(separator: ",") + "]}") }
            }
            try output.finish()
            if !notFound.isEmpty {
                let shown = notFound.prefix(20).joined(separator: ", ") + (notFound.count > 20 ? ", …" : "")
                FileHandle.standardError.write(Data("not found, left as they were (\(notFound.count)): \(shown)\n".utf8))
            }
            if !misplaced.isEmpty {
                let shown = misplaced.prefix(20).joined(separator: "; ") + (misplaced.count > 20 ? "; …" : "")
                FileHandle.standardError.write(Data(("warning: \(misplaced.count) inner label\(misplaced.count == 1 ? " names a taxon that is" : "s name taxa that are") "
                    + "not an ancestor of every annotated leaf below: \(shown). A support value read as a taxon? "
                    + "(--internal-labels support)\n").utf8))
            }
        }
        if missing { throw ExitCode(ClientError.ExitCode.notFound.rawValue) }
    }
}

extension Annotate {
    /// The whole-tree lineage (root first, the taxon last) of each query that names one
    /// taxon: lineage batches on RANK_VIEW_ALL, several in flight.
    private func lineages(of queries: [String], _ client: TaxonomyClient) throws(ClientError) -> [String: [NewickTree.Rung]] {
        var lineages: [String: [NewickTree.Rung]] = [:]
        // A label too large to send names nothing (nil): its leaf is listed as not found.
        let results = try client.lineages(of: queries, ranks: .all, form: .taxa, language: language.language)
        for (query, result) in zip(queries, results) {
            guard let result, !result.hasError, result.hasTaxon else { continue }
            lineages[query] = (result.lineage + [result.taxon]).map {
                NewickTree.Rung(id: $0.id, name: $0.scientificName, rank: $0.sourceRank, commonName: $0.commonName)
            }
        }
        return lineages
    }

    /// The taxon the server gives each node (``AnnotateTreeParts``: in parts when the
    /// tree is larger than a request).
    private func annotateTree(_ tree: NewickTree, own: [Int64], _ client: TaxonomyClient) throws(ClientError) -> AnnotateTreeParts.Answer {
        var depths = [Int](repeating: 0, count: tree.nodes.count)
        for (index, node) in tree.nodes.enumerated() { if let parent = node.parent { depths[index] = depths[parent] + 1 } }
        // The two packed fields' tags and lengths besides what queryBytes leaves.
        let budget = client.queryBytes(in: .with { $0.annotateTree = .init() }) - 8
        return try AnnotateTreeParts.annotate(depths: depths, own: own, budget: budget) { (depths, ids) throws(ClientError) in
            try client.ask(.with { $0.annotateTree = .with { $0.depths = depths; $0.taxonIds = ids } },
                           as: Stol_V1_AnnotateTreeResponse.self)
        }
    }
}

extension NewickTree.LabelChoice: ExpressibleByArgument {}
extension NewickTree.InnerLabels: ExpressibleByArgument {}
