import STOLModel
import STOLProtocol

extension Stol_V1_LineageBatchResponse {
    /// The packed form (`LINEAGE_FORM_PACKED`) of an answer in the ids form: every
    /// lineage, the taxon included, back to back in one packed array with one length
    /// per query, each found taxon once in `nodes`, and a note for each query that failed
    /// or was merged; no result per query.
    ///
    /// A client of the ids form decodes a message per query (its query echoed, its
    /// taxon, its ids) and makes an object of each: the Python package spent more time
    /// on that than the server on the lineages (100,000 ids: 0.20 s of field reads
    /// beside 0.08 s of parsing). From the packed form it slices one list.
    ///
    /// The whole tree's lineages are packed as they are written (``LineageQueries``);
    /// this packs the others (the main ranks before the tree is loaded).
    init(packing answer: Stol_V1_LineageBatchResponse) {
        self.init()
        packedLengths.reserveCapacity(answer.results.count)
        packedIds.reserveCapacity(answer.results.reduce(0) { $0 + $1.lineageIds.count + 1 })
        var listed = Set<TaxonID>()
        for (index, result) in answer.results.enumerated() {
            if result.hasTaxon {
                packedLengths.append(UInt32(result.lineageIds.count + 1))
                packedIds.append(contentsOf: result.lineageIds)
                packedIds.append(result.taxon.id)
                if listed.insert(result.taxon.id).inserted { nodes.append(.packed(result.taxon)) }
            } else {
                packedLengths.append(0)
            }
            guard result.hasError || result.mergedFrom != 0 else { continue }
            var note = Stol_V1_PackedLineageNote()
            note.index = UInt32(index)
            if result.hasError { note.error = result.error }
            note.mergedFrom = result.mergedFrom
            packedNotes.append(note)
        }
    }
}

extension Stol_V1_LineageNode {
    /// The packed form's entry of a lineage's taxon: its id, name, and rank as the ids
    /// form's `taxon` says it (the source's spelling, else the main rank's name).
    static func packed(_ taxon: Stol_V1_Taxon) -> Stol_V1_LineageNode {
        var node = Stol_V1_LineageNode()
        node.id = taxon.id
        node.rank = taxon.sourceRank.isEmpty ? TaxonRank(taxon.rank)?.rawValue ?? "" : taxon.sourceRank
        node.name = taxon.scientificName
        return node
    }
}
