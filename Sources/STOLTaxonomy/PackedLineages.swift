import STOLModel
import STOLProtocol

/// Writes an answer of the packed form (`LINEAGE_FORM_PACKED`), query after query:
/// every lineage, the taxon included, back to back in one packed array with one length
/// per query, each found taxon once in `nodes`, and a note for each query that failed
/// or was merged; no result per query. The one place that lays the form out, for the
/// tree's lineages (``LineageQueries``) and for an ids-form answer (``init(packing:)``).
///
/// A client of the ids form decodes a message per query (its query echoed, its taxon,
/// its ids) and makes an object of each: the Python package spent more time on that
/// than the server on the lineages (100,000 ids: 0.20 s of field reads beside 0.08 s
/// of parsing). From the packed form it slices one list.
struct PackedLineageWriter {
    private var lengths: [UInt32] = [], ids: [TaxonID] = []
    private var taxa: [Stol_V1_LineageNode] = [], notes: [Stol_V1_PackedLineageNote] = []
    private var listed = Set<TaxonID>()

    init(queries: Int, ids expected: Int) {
        lengths.reserveCapacity(queries)
        ids.reserveCapacity(expected)
    }

    /// The next query's lineage, root first, the taxon `taxonID` last; `taxon` is asked
    /// for the first time the taxon occurs only.
    mutating func found<Lineage: Sequence<TaxonID>>(_ lineage: Lineage, taxonID: TaxonID, taxon: () -> Stol_V1_Taxon) {
        let start = ids.count
        ids.append(contentsOf: lineage)
        ids.append(taxonID)
        lengths.append(UInt32(ids.count - start))
        if listed.insert(taxonID).inserted { taxa.append(.packed(taxon())) }
    }

    /// The next query named nothing (its error goes in a note).
    mutating func missing() { lengths.append(0) }

    /// The note of the query just written, when it failed or was merged.
    mutating func note(error: Stol_V1_Error?, mergedFrom: TaxonID) {
        guard error != nil || mergedFrom != 0 else { return }
        var note = Stol_V1_PackedLineageNote()
        note.index = UInt32(lengths.count - 1)
        if let error { note.error = error }
        note.mergedFrom = mergedFrom
        notes.append(note)
    }

    var response: Stol_V1_LineageBatchResponse {
        var response = Stol_V1_LineageBatchResponse()
        response.packedLengths = lengths
        response.packedIds = ids
        response.nodes = taxa
        response.packedNotes = notes
        return response
    }
}

extension Stol_V1_LineageBatchResponse {
    /// The packed form of an answer in the ids form (the main ranks before the tree is loaded).
    init(packing answer: Stol_V1_LineageBatchResponse) {
        var writer = PackedLineageWriter(queries: answer.results.count,
                                         ids: answer.results.reduce(0) { $0 + $1.lineageIds.count + 1 })
        for result in answer.results {
            if result.hasTaxon {
                writer.found(result.lineageIds, taxonID: result.taxon.id) { result.taxon }
            } else {
                writer.missing()
            }
            writer.note(error: result.hasError ? result.error : nil, mergedFrom: result.mergedFrom)
        }
        self = writer.response
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
