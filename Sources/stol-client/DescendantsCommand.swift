import ArgumentParser
import STOLClientKit
import STOLProtocol

/// `stol-client descendants ID --rank R`: taxonkit's `list` then `filter`, ete4's
/// `get_descendant_taxa`, from the server's pages.
struct Descendants: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List the descendants of a taxon, at one rank or all, on the source's whole tree.",
        discussion: """
            One line per descendant (id, rank, scientific name; the taxon itself is not listed), in \
            preorder with children in id order: the ids and order of ete4's get_descendant_taxa \
            (intermediate_nodes=True) filtered by rank. --rank takes a rank as the source \
            spells it (species, strain, subspecies, genus, no rank, clade, …); another spelling of the same \
            level works too (superkingdom = domain). An unknown rank is an error that lists this \
            database's ranks.

              stol-client descendants 9688 --rank species      # the species of Panthera
              stol-client descendants 562 --rank strain --ids  # E. coli strains, ids only (taxonkit list)

            The server answers a page at a time (at most 10,000 taxa); the client asks for page after page \
            until --limit taxa are printed (default: all of them). With --json: one object, the taxa and \
            `total`, the number of such descendants.
            """)
    @OptionGroup var global: GlobalOptions
    @Argument(help: "Taxon id (e.g. 9688 for Panthera).", transform: TaxonIDArgument.parse) var id: Int64
    @Option(help: "Only descendants of this rank (default: every rank).") var rank: String = ""
    @Flag(help: "Print ids only, one per line (taxonkit list).") var ids = false
    @Option(help: "Skip this many descendants.") var offset: UInt32 = 0
    @Option(help: "Print at most this many (default: all).") var limit: UInt32?

    /// Taxa per request: the server's largest page.
    static let pageSize: UInt32 = 10_000

    func validate() throws {
        if limit == 0 { throw ValidationError("--limit must be at least 1") }
    }

    func run() throws {
        try global.run { () throws(ClientError) in
            // Every page from one release (fixed before the first), whatever is activated meanwhile.
            let client = try global.batchTaxonomy()
            var all = Stol_V1_TaxonPage()
            all.offset = offset
            var printed: UInt32 = 0
            repeat {
                let wanted = limit.map { min(Self.pageSize, $0 - printed) } ?? Self.pageSize
                let page = try client.ask(.with {
                    $0.descendants = .with { $0.taxonID = id; $0.rank = rank; $0.offset = offset + printed; $0.limit = wanted }
                }, as: Stol_V1_TaxonPage.self)
                all.total = page.total
                if global.json {
                    all.taxa += page.taxa
                } else {
                    for taxon in page.taxa { print(ids ? String(taxon.id) : TextFormatter.line(taxon)) }
                }
                printed += UInt32(page.taxa.count)
                if page.taxa.isEmpty { break }
            } while offset + printed < all.total && printed < (limit ?? .max)
            if global.json { print(global.taxonomyJSON(all)) }
        }
    }
}
