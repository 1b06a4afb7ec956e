import ArgumentParser
import Foundation
import Glibc
import STOLClientKit
import STOLProtocol

// MARK: - Taxonomy

struct Status: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show which taxonomy database is active, and its size.",
        discussion: """
            For root and the stol-admin group, also a line when the trusted keys have a problem (a \
            malformed key file or revocation list, one key in two files): `db status` lists them.
            """)
    @OptionGroup var global: GlobalOptions

    func run() throws {
        try global.run { () throws(ClientError) in
            let status = try global.taxonomy().ask(.with { $0.status = .init() }, as: Stol_V1_StatusResponse.self)
            if global.json { print(TextFormatter.json(status)); return }
            let provenance = status.hasProvenance
                ? "\(status.provenance.source), release \(status.provenance.release), ids \(status.provenance.idNamespace)"
                : "not recorded (built before provenance)"
            print("""
                service:          \(global.service.summary)
                release:          \(status.active.release)\(global.pinnedRelease.isEmpty ? " (the default)" : " (pinned)")
                source:           \(provenance)
                active database:  \(TextFormatter.databaseKind(status.active.kind)) (\(status.activePath))
                schema version:   \(status.active.schemaVersion)
                taxa:             \(status.taxaCount)
                size:             \(status.sizeBytes) bytes
                species:          \(status.speciesCount)
                names:            \(status.namesCount)
                top-N relatives:  \(status.precomputedRelatives) per species precomputed
                in-memory tree:   \(status.treeLoaded ? "loaded" : "loading")
                whole tree:       \(status.fullTreeNodes == 0 ? "none: main ranks only (--ranks all needs a database built with the whole tree, such as the reference)" : "\(status.fullTreeNodes) nodes, \(status.fullTreeLoaded ? "loaded" : "loading") (--ranks all)")
                bundled DB:       \(status.bundledPath) (\(status.bundledSizeBytes) bytes)
                reference DB:     \(status.referencePresent ? "installed, \(status.referenceSizeBytes) bytes" : "not installed")\(status.referenceRequested ? ", activation requested" : "")
                releases:         \(status.releases.map { $0.release + ($0.isDefault ? " (default)" : "") }.joined(separator: ", "))
                server version:   \(status.serverVersion)
                """)
            if !status.fallbackReason.isEmpty { print("note: serving the bundled database because \(status.fallbackReason)") }
            if let problems = trustProblems(), !problems.isEmpty {
                print("trusted keys:     \(problems.count) problem\(problems.count == 1 ? "" : "s") (stol-client db status lists them)")
            }
        }
    }

    /// The import coordinator's trust problems, for a caller who may ask it (root and
    /// `stol-admin`: the socket is theirs to write); nil for anyone else, or when it
    /// does not answer: `status` is the taxonomy server's, and never fails for want of it.
    private func trustProblems() -> [String]? {
        guard access(global.paths.importSocket, W_OK) == 0 else { return nil }
        var request = Stol_V1_ImportRequest()
        request.status = Stol_V1_ImportStatusRequest()
        return (try? global.importer(standard: .seconds(5)).ask(request, as: Stol_V1_ImportStatus.self))?.trustProblems
    }
}

/// `stol-client cite`: how to cite the release that answers.
struct Cite: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print the citation, licence and attribution of the release that answers (the default, or --release).",
        discussion: """
            For a methods section: the line the release's builder recorded, e.g.
              Schoch CL, et al. NCBI Taxonomy: a comprehensive update … (release 2024.9.7)
            with --json: the release's provenance (source, release, id_namespace, licence, attribution, \
            citation, tool, built).
            """)
    @OptionGroup var global: GlobalOptions

    func run() throws {
        try global.run { () throws(ClientError) in
            let status = try global.taxonomy().ask(.with { $0.status = .init() }, as: Stol_V1_StatusResponse.self)
            guard status.hasProvenance else {
                throw .local("release \(status.active.release) records no provenance (it was built before provenance "
                             + "was recorded); rebuild it with stol-pipeline to cite it")
            }
            if global.json { print(global.taxonomyJSON(status.provenance)); return }
            let provenance = status.provenance
            print(provenance.citation)
            print("")
            print("source:       \(provenance.source), release \(provenance.release) (ids: \(provenance.idNamespace))")
            print("licence:      \(provenance.licence)")
            print("attribution:  \(provenance.attribution)")
            print("built:        \(provenance.built) by \(provenance.tool)")
        }
    }
}

struct TaxonCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "taxon", abstract: "Show one taxon by id.",
        discussion: """
            The parent and the number of children are shown in both trees, each labelled: the eight-rank \
            view that browsing uses, and the source's own tree (`taxon 10090`: parent 10088, genus Mus, in the \
            view; 862507, subgenus Mus, in NCBI's tree). --ranks all also shows the source's rank \
            (`source_rank` in --json); --json names them parent_id/child_count and \
            source_parent_id/source_child_count.
            """)
    @OptionGroup var global: GlobalOptions
    @OptionGroup var language: LanguageOption
    @OptionGroup var ranks: RanksOption
    @Argument(help: "Taxon id (e.g. 9689 for Panthera leo; a name: use search).", transform: TaxonIDArgument.parse) var id: Int64

    func run() throws {
        try global.run { () throws(ClientError) in
            let taxon = try global.taxonomy().ask(.with {
                $0.getTaxon = .with { $0.taxonID = id; $0.language = language.language; $0.ranks = ranks.ranks.wire }
            }, as: Stol_V1_Taxon.self)
            global.show(taxon, TextFormatter.detail)
        }
    }
}

struct Children: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List the children of a taxon, by scientific name.",
        discussion: """
            By default the children on the eight main ranks (a genus lists its species); \
            --ranks all lists NCBI's own children (`children 562 --ranks all`: the strains \
            and serotypes of Escherichia coli). A node outside the eight ranks (a strain, a \
            clade) always lists its own children.
            """)
    @OptionGroup var global: GlobalOptions
    @OptionGroup var language: LanguageOption
    @OptionGroup var ranks: RanksOption
    @Argument(help: "Parent taxon id.") var id: Int64
    @Option(help: "Skip this many children.") var offset: UInt32 = 0
    @Option(help: "Children per page (at most 500).") var limit: UInt32 = 50

    func run() throws {
        try global.run { () throws(ClientError) in
            let page = try global.taxonomy().ask(.with {
                $0.children = .with {
                    $0.taxonID = id; $0.offset = offset; $0.limit = limit; $0.language = language.language
                    $0.ranks = ranks.ranks.wire
                }
            }, as: Stol_V1_TaxonPage.self)
            if global.json { print(global.taxonomyJSON(page)); return }
            page.taxa.forEach { print(TextFormatter.line($0, showChildren: true)) }
            let shown = Int(page.offset) + page.taxa.count
            print("(\(page.taxa.isEmpty ? 0 : page.offset + 1)–\(shown) of \(page.total))")
        }
    }
}

struct Roots: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "List the top of the tree (the domains).")
    @OptionGroup var global: GlobalOptions
    @OptionGroup var language: LanguageOption

    func run() throws {
        try global.run { () throws(ClientError) in
            let page = try global.taxonomy().ask(.with { $0.roots = .with { $0.language = language.language } },
                                                 as: Stol_V1_TaxonPage.self)
            if global.json { print(global.taxonomyJSON(page)); return }
            page.taxa.forEach { print(TextFormatter.line($0, showChildren: true)) }
        }
    }
}

struct Ancestors: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Show the lineage of a taxon, root first (--ranks all: NCBI's own).")
    @OptionGroup var global: GlobalOptions
    @OptionGroup var language: LanguageOption
    @OptionGroup var ranks: RanksOption
    @Argument(help: "Taxon id.") var id: Int64

    func run() throws {
        try global.run { () throws(ClientError) in
            let list = try global.taxonomy().ask(.with {
                $0.ancestors = .with { $0.taxonID = id; $0.language = language.language; $0.ranks = ranks.ranks.wire }
            }, as: Stol_V1_TaxonList.self)
            if global.json { print(global.taxonomyJSON(list)); return }
            for (depth, taxon) in list.taxa.enumerated() {
                print(String(repeating: "  ", count: depth) + TextFormatter.line(taxon))
            }
        }
    }
}

struct Search: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Search scientific names, common names (any language) and synonyms.",
        discussion: """
            All words must match; "quoted words" must appear together, in order. Diacritics and case \
            are ignored; any text is safe to type. Fewer than three matches are completed by \
            approximate (fuzzy) matches, marked with `~` and their edit distance.
            --within TAXON (an id or an exact name) answers only with taxa under it, itself included: \
            the words' matches elsewhere never crowd them out (search coli --within Enterobacterales; \
            search Bacteria --within Phasmatodea finds the stick insect genus, not the domain).
            """)
    @OptionGroup var global: GlobalOptions
    @OptionGroup var language: LanguageOption
    @Argument(help: "Words to search for.") var words: [String]
    @Flag(help: "Treat the last word as a prefix (autocomplete).") var prefix = false
    @Option(help: "Only this rank: domain, kingdom, phylum, class, order, family, genus, species.") var rank: String?
    @Option(help: "At most this many results (1–200).") var limit: UInt32 = 20
    @Option(name: .customLong("status"), parsing: .singleValue,
            help: "Only this IUCN category (LC NT VU EN CR EW EX NE DD); repeat it, or separate with commas (--status EN,CR).")
    var conservation: [String] = []
    @Flag(help: "The whole query is one phrase (words adjacent, in order).") var phrase = false
    @Flag(help: "No approximate matches.") var noFuzzy = false
    @Option(help: ArgumentHelp("Only taxa under this one (an id or an exact name), itself included.", valueName: "TAXON"))
    var within: String?

    func run() throws {
        try global.run { () throws(ClientError) in
            var search = Stol_V1_SearchRequest()
            search.within = within ?? ""
            search.query = words.joined(separator: " ")
            guard search.query.utf8.count <= ProtocolLimits.maximumQueryBytes else {
                throw .usage("the query is \(search.query.utf8.count) bytes; the limit is \(ProtocolLimits.maximumQueryBytes)")
            }
            // 0 used to give the server's default of 20 without a word.
            guard (1...200).contains(limit) else { throw .usage("--limit must be 1…200") }
            search.prefix = prefix
            search.limit = limit
            search.language = language.language
            search.conservation = conservation.flatMap { $0.split(separator: ",") }.map { $0.trimmingCharacters(in: .whitespaces).uppercased() }
            search.phrase = phrase
            search.noFuzzy = noFuzzy
            if let rank {
                guard let wire = TextFormatter.rank(named: rank) else { throw .usage("unknown rank '\(rank)'") }
                search.rank = wire
            }
            let result = try global.taxonomy().ask(.with { $0.search = search }, as: Stol_V1_SearchResponse.self)
            if result.partial {
                // The server stopped at a cap of one search's work (protocol §9): said on stderr,
                // so that standard output carries answers only.
                FileHandle.standardError.write(Data(("note: the search reached the limit of what one search may examine; "
                    + "these are the best of what it examined (more words, --rank or --within narrow it)\n").utf8))
            }
            if global.json { print(global.taxonomyJSON(result)); return }
            if result.hits.isEmpty { print("no matches"); return }
            for hit in result.hits { print(TextFormatter.searchLine(hit)) }
        }
    }
}
