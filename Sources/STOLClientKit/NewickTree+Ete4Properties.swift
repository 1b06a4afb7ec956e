import STOLModel

/// Taxonomy on the nodes of a user's tree, written as ete4's `NCBITaxa.annotate_tree`
/// puts it there (`stol-client annotate`). Which taxon a node gets is the server's
/// (`annotate_tree`, ``AnnotateTreeParts``); this only writes it.
extension NewickTree {
    /// One taxon of a lineage.
    public struct Rung: Sendable, Equatable {
        public let id: TaxonID
        public let name: String
        public let rank: String
        /// Filled where the lineage lookup leaves it empty (whole-tree lineages carry no common names).
        public var commonName: String
        public init(id: TaxonID, name: String, rank: String, commonName: String = "") {
            self.id = id
            self.name = name
            self.rank = rank
            self.commonName = commonName
        }
    }

    /// What a node is annotated with: its taxon's lineage, root first, the taxon last.
    public struct Annotation: Sendable, Equatable {
        public var lineage: [Rung]
        /// True when the node's own label named the taxon; false for an inner node given
        /// the common ancestor of its leaves.
        public let fromLabel: Bool
        public init(lineage: [Rung], fromLabel: Bool) {
            self.lineage = lineage
            self.fromLabel = fromLabel
        }
        public var taxon: Rung { lineage[lineage.count - 1] }
    }

    /// How the labels of inner nodes are read.
    public enum InnerLabels: String, Sendable, CaseIterable {
        /// A number is a support value (a bootstrap, a posterior probability), any other
        /// label a taxon: what trees from phylogenetics programs hold (issue 34: "100" was
        /// looked up as taxon 100, *Ancylobacter aquaticus*).
        case auto
        /// Every inner label is a taxon (an id or a name), numbers too.
        case taxa
        /// Every inner label is a support value (ete4's default parser).
        case support
    }

    /// Whether `label` is a number (`100`, `0.95`, `1e-3`): decimal digits, a point, a sign,
    /// an exponent, nothing else (the Python package reads the same labels so).
    public static func isNumber(_ label: String) -> Bool {
        label.allSatisfy { "0123456789.+-eE".contains($0) } && Double(label) != nil
    }

    /// The labels to look up, by node: every leaf's, and the inner nodes' as `inner`
    /// says; `supportValues` counts the inner labels read as support values. Empty
    /// labels name nothing.
    public func queries(inner: InnerLabels) -> (queries: [(node: Int, label: String)], supportValues: Int) {
        var supportValues = 0
        let queries: [(node: Int, label: String)] = nodes.indices.compactMap { index in
            let node = nodes[index]
            guard !node.label.isEmpty else { return nil }
            if !node.children.isEmpty {
                if inner == .support || (inner == .auto && Self.isNumber(node.label)) {
                    supportValues += 1
                    return nil
                }
            }
            return (index, Self.lookupText(of: node))
        }
        return (queries, supportValues)
    }

    /// What a node's label is looked up as: an unquoted label's `_` is a blank, as
    /// Newick defines it (`Mus_musculus` is Mus musculus); a quoted one as written.
    static func lookupText(of node: Node) -> String {
        let quoted = node.source.hasPrefix("'") || node.source.hasPrefix("\"")
        return quoted ? node.label : node.label.replacingOccurrences(of: "_", with: " ")
    }

    /// How an annotated node's label is written.
    public enum LabelChoice: String, Sendable, CaseIterable {
        /// The label as it was (an inner node without one stays without).
        case keep
        /// The taxon's scientific name.
        case name
        /// The taxon's id.
        case id
    }

    /// An annotated node's content: the label (`choice`), its length, and NHX holding its
    /// own properties and ete4's six (`common_name`, `lineage`, `named_lineage`, `rank`,
    /// `sci_name`, `taxid`), ours replacing its own of the same key, all as ete4's `write`
    /// gives them: keys in sorted order, lists joined with `|`, each of `:;(),[]=` in a
    /// value made `_`.
    public func content(of index: Int, annotation: Annotation, label choice: LabelChoice) -> String {
        let node = nodes[index]
        let taxon = annotation.taxon
        let ours: [Property] = [
            Property(key: "common_name", value: Self.nhxValue(taxon.commonName)),
            Property(key: "lineage", value: annotation.lineage.map { String($0.id) }.joined(separator: "|")),
            Property(key: "named_lineage", value: annotation.lineage.map { Self.nhxValue($0.name) }.joined(separator: "|")),
            Property(key: "rank", value: Self.nhxValue(taxon.rank)),
            Property(key: "sci_name", value: Self.nhxValue(taxon.name)),
            Property(key: "taxid", value: String(taxon.id)),
        ]
        let replaced = Set(ours.map(\.key))
        let label = switch choice {
        case .keep: node.label
        case .name: taxon.name
        case .id: String(taxon.id)
        }
        let own = node.properties.filter { !replaced.contains($0.key) }.map { Property(key: $0.key, value: Self.nhxValue($0.value)) }
        return Self.content(label: label, length: node.length, properties: (own + ours).sorted { $0.key < $1.key })
    }
}
