import Foundation
import GRDB
import STOLModel
import STOLTransport

/// What the server keeps in memory besides SQLite's caches: the one tree
/// (``TaxonomyTree``: lineages, common ancestors, children, subtrees, computed
/// relatives, exact scientific names) and the word indexes of search
/// (autocomplete of one- and two-letter prefixes over common names, fuzzy
/// corrections).
///
/// Built from the database in the background when it is opened, so that the
/// first answer does not wait for it (cold start); queries that need it before
/// it is ready either use SQL (children, search) or wait for it suspended,
/// holding no thread (computed relatives, ``TaxonomyService/respond(to:context:)``).
public struct MemoryIndexes: Sendable {
    /// Every node of the database with the eight-rank view; nil while it could not be
    /// built (``treeProblem``).
    public let tree: TaxonomyTree?
    public let nameWords: NameWordIndex
    public let vocabulary: FuzzyVocabulary
    /// Folded common names and synonyms → taxon (the preferred name's taxon
    /// first), for exact lookups by name in lineage batches.
    public let exactNames: [String: TaxonID]
    /// The other taxa of a name that several taxa carry (folded, as ``exactNames``):
    /// search gathers every taxon whose name is exactly the query, so that an exact
    /// name is never lost among hundreds of partial matches.
    public var sharedNames: [String: [TaxonID]] = [:]
    /// Binomials by their abbreviation (``SearchQuery/abbreviationKey``: "c elegans"
    /// for *Caenorhabditis elegans*), the most prominent first, a few per key.
    var abbreviations = SortedNameTable.empty
    /// Names of several words by their letters and digits alone ("honeybee" for
    /// "honey bee", "ecoli" for "E. coli" is not one: see ``abbreviations``), for a
    /// query of one word that writes a name without its spaces.
    public var compactNames: [String: [TaxonID]] = [:]
    /// Taxa with at least one common or vernacular name, in any language. Most
    /// have none (NCBI names about 2 % of its taxa), so a page of taxa asks
    /// SQLite for the names of these only: the names lookup was a third of the
    /// in-process cost of a full page of children (measured with 300 random
    /// parents of 50+ children: 31 µs of 97 µs p50). Nil when not known (the
    /// indexes could not be built): then every taxon is asked for.
    public let commonlyNamed: Set<TaxonID>?
    /// Rank and IUCN filters of search, answered in memory (``FilteredSearchIndex``).
    public let filteredSearch: FilteredSearchIndex
    /// Why the tree could not be built, if it could not (the database still serves).
    public let treeProblem: String?
    /// Whether ``tree`` is the source's whole tree (schemas 2 and 3) rather than the
    /// eight ranks alone (schema 1, which cannot answer `--ranks all`).
    public var holdsWholeTree = false
    /// The tree, when it is the source's whole tree (`--ranks all`).
    public var wholeTree: TaxonomyTree? { holdsWholeTree ? tree : nil }
    /// Search's order among equally good matches (schema 2; empty for schema 1).
    public var prominence = ProminenceIndex.empty

    /// Whether the names' indexes are built. False in the indexes
    /// ``load(_:layout:images:background:publishTree:)`` hands out first, as soon as the tree is
    /// there: lineages, common ancestors and subtrees answer from them while the
    /// names are still read; search and lookups by common name or synonym wait
    /// (``TaxonomyError/memoryIndexesLoading``) for the whole indexes.
    public var namesLoaded = true

    /// ``exactNames`` once built; nil while only the tree is (a name lookup then waits).
    public var loadedExactNames: [String: TaxonID]? { namesLoaded ? exactNames : nil }

    /// Where ``load(_:layout:images:background:publishTree:)`` found the tree.
    enum TreeSource: Sendable, Equatable {
        /// Read from its image (``TreeImageCache``).
        case image
        /// Read from the image the pipeline wrote beside the database (``ShippedTreeImage``).
        case shippedImage
        /// Built from the database's rows; with why no image served, when one was asked for.
        case rows(imageMiss: TreeImageCache.Entry.Miss?)
        /// No tree (schema 1, or one that could not be built).
        case none
    }

    /// The indexes of the tree alone, before the names'.
    static func treeOnly(_ tree: TaxonomyTree, holdsWholeTree: Bool) -> MemoryIndexes {
        var indexes = MemoryIndexes(tree: tree, nameWords: NameWordIndex([]), vocabulary: FuzzyVocabulary(words: []),
                                    exactNames: [:], commonlyNamed: nil, filteredSearch: .empty, treeProblem: nil)
        indexes.holdsWholeTree = holdsWholeTree
        indexes.namesLoaded = false
        return indexes
    }

    /// Builds every index: the tree (schema 3) and the prominent names' order on
    /// other threads while the names are read and indexed on this one, all from one
    /// connection. (Reading the names
    /// on a second connection meanwhile saved as much, but the two connections'
    /// caches added up to 448 MiB, over the daemon's 400 MB budget.)
    ///
    /// Schema 3's tree comes from `image` when it holds one of this database
    /// (``TreeImageCache``), else it is built from the rows. Either way it is handed
    /// to `publishTree` (``treeOnly(_:holdsWholeTree:)``), with where it came from, as
    /// soon as it is there (the caller writes the image of a tree built from the rows).
    /// `background`: the build's own thread, whose priority the sort on another thread
    /// takes (``BackgroundThread/helping(_:)``).
    /// - Returns: the indexes, and where the tree came from.
    static func load(_ db: Database, layout: TaxonomyLayout, images: [TreeImageCache.Entry] = [],
                     background: BackgroundThread? = nil,
                     publishTree: @escaping @Sendable (MemoryIndexes, TreeSource) -> Void = { _, _ in }) throws
        -> (MemoryIndexes, treeSource: TreeSource) {
        var scan: TaxaScan
        var source = TreeSource.rows(imageMiss: nil)
        var imaged: TaxonomyTree?
        // The first image that holds this database's tree; without one, why (a refusal before an absence).
        for image in images where layout.everyNode && imaged == nil {
            switch image.load() {
            case .success(let tree):
                source = image.shipped ? .shippedImage : .image
                publishTree(.treeOnly(tree, holdsWholeTree: true), source)
                imaged = tree
            case .failure(let miss):
                // A refusal is worth telling over an absence.
                switch (source, miss) {
                case (.rows(imageMiss: nil), _), (.rows(imageMiss: .absent?), .refused): source = .rows(imageMiss: miss)
                default: break
                }
            }
        }
        if let imaged {
            scan = try TaxaScan.fromTree(imaged, db)
        } else {
            scan = try TaxaScan.read(db, layout: layout)
            if let tree = scan.tree { publishTree(.treeOnly(tree, holdsWholeTree: scan.holdsWholeTree), source) }
        }
        // Schema 3's tree is built, and the prominent names sorted, on other threads
        // while the names are read below. The builder is handed over, not shared, so
        // the build frees its arrays as it goes (the start's peak memory).
        let handoff = scan.builder.map(Handoff.init)
        scan.builder = nil
        let holdsWholeTree = scan.holdsWholeTree, builtSource = source
        let building = handoff.map { handoff in
            BackgroundWork { () -> (tree: TaxonomyTree?, problem: String?) in
                let builder = handoff.take()
                do {
                    let tree = try builder.build()
                    publishTree(.treeOnly(tree, holdsWholeTree: holdsWholeTree), builtSource)
                    return (tree, nil)
                } catch {
                    return (nil, "\(error)")
                }
            }
        }
        let prominenceRows = try ProminenceIndex.rows(db)
        // At the priority of the build that waits for it (`background`, lowered once the
        // tree is published from an image), not at the daemon's own beside the requests.
        let sorting = BackgroundWork { () -> (ProminenceIndex, SortedNameTable) in
            func sort() -> (ProminenceIndex, SortedNameTable) {
                let index = ProminenceIndex(scores: prominenceRows.scores, names: prominenceRows.names)
                return (index, index.abbreviations())
            }
            return background.map { $0.helping(sort) } ?? sort()
        }
        var entries = SortedNameTable.Builder()
        var vocabularyWords: [String] = []
        var exactNames: [String: TaxonID] = [:]
        var sharedNames: [String: [TaxonID]] = [:]
        var compactNames: [String: [TaxonID]] = [:]
        var commonlyNamed = Set<TaxonID>()
        // Words of taxa above species, per rank level (``FilteredSearchIndex/higherTaxa``).
        var higherEntries = [SortedNameTable.Builder](repeating: .init(), count: TaxonRank.species.level)
        let conservation = scan.conservation
        var conservedWords = scan.conservedWords
        var conservedNames: [TaxonID: [FilteredSearchIndex.IndexedName]] = [:]
        /// The rank level of a taxon above species; nil for species (and unknown ids).
        let higherLevels = Dictionary(scan.higher.map { ($0.id, $0.level) }, uniquingKeysWith: { first, _ in first })
        func higherLevel(_ id: TaxonID) -> Int? { higherLevels[id] }
        // Per name: whether it is a common name (commonlyNamed, and the common name
        // of a taxon in pages), whether `fts_taxa` holds it (every type but trade),
        // and whether search matches it as a synonym (``SearchEngine/synonymNameTypes``).
        let names = try Row.fetchCursor(db, sql: """
            SELECT taxon_id, name, name_type IN ('common','vernacular'), name_type <> 'trade',
                   name_type IN (\(SearchEngine.synonymNameTypesSQL)), lang, is_preferred, id
            FROM names ORDER BY is_preferred DESC, id
            """)
        while let row = try names.next() {
            let id: TaxonID = row[0]
            if row[2] as Bool { commonlyNamed.insert(id) }
            let words = SearchQuery.words(in: row[1])
            let joined = words.joined(separator: " ")
            if words.count > 1 {
                let compact = words.joined()
                if compactNames[compact]?.contains(id) != true { compactNames[compact, default: []].append(id) }
            }
            if let first = exactNames[joined] {
                if first != id, sharedNames[joined]?.contains(id) != true { sharedNames[joined, default: []].append(id) }
            } else {
                exactNames[joined] = id
            }
            let level = (row[3] as Bool) ? higherLevel(id) : nil  // the kinds of names fts_taxa holds
            if conservation[id] != nil {
                if row[3] as Bool { conservedWords[id, default: []].formUnion(words) }
                conservedNames[id, default: []].append(.init(order: row[7], text: row[1], words: words, isSynonym: row[4],
                                                             language: row[5], preferred: (row[6] as Int) != 0))
            }
            for word in words {
                entries.append(word, id)
                vocabularyWords.append(word)
                if let level { higherEntries[level].append(word, id) }
            }
        }
        for taxon in scan.higher {
            vocabularyWords.append(contentsOf: taxon.words)
            for word in taxon.words { higherEntries[taxon.level].append(word, taxon.id) }
        }
        for id in conservedNames.keys { conservedNames[id]!.sort { $0.order < $1.order } }  // as SQL reads them: by id
        let (prominence, abbreviations) = sorting.join()
        let (tree, treeProblem) = building?.join() ?? (scan.tree, scan.treeProblem)
        let filteredSearch = tree == nil ? FilteredSearchIndex.empty
            : FilteredSearchIndex(higherTaxa: higherEntries.map { NameWordIndex($0) }, conservation: conservation,
                                  conservedNames: conservedNames, conservedWords: conservedWords)
        var indexes = MemoryIndexes(tree: tree, nameWords: NameWordIndex(entries), vocabulary: FuzzyVocabulary(words: vocabularyWords),
                                    exactNames: exactNames, commonlyNamed: commonlyNamed, filteredSearch: filteredSearch,
                                    treeProblem: treeProblem)
        indexes.holdsWholeTree = scan.holdsWholeTree
        indexes.sharedNames = sharedNames
        indexes.compactNames = compactNames
        indexes.prominence = prominence
        indexes.abbreviations = abbreviations
        return (indexes, tree == nil ? .none : source)
    }
}

/// Every word of every common name and synonym, sorted, with its taxon: answers
/// "which names have a word starting with `pa`" by binary search, where FTS5
/// would first expand the prefix over the whole vocabulary (over 10 ms for two
/// letters on the full NCBI build; scientific names use the `idx_taxa_name`
/// index instead).
public struct NameWordIndex: Sendable {
    /// Each word with its taxa by id (a taxon once per name that has the word).
    private let table: SortedNameTable

    init(_ entries: [(String, TaxonID)]) {
        var words = SortedNameTable.Builder()
        for (word, id) in entries { words.append(word, id) }
        self.init(words)
    }

    init(_ words: consuming SortedNameTable.Builder) { table = words.build(by: <) }

    /// The (word, taxon) entries.
    public var count: Int { table.ids.count }

    /// Taxa with a name word starting with `prefix` (folded), at most `limit`, distinct.
    public func taxa(withWordPrefix prefix: String, limit: Int, exact: Bool = false) -> [TaxonID] {
        var keys = table.keys(withPrefix: prefix)
        if exact, !keys.isEmpty { keys = table.keyBytes(at: keys.lowerBound).count == prefix.utf8.count ? keys.prefix(1) : 0..<0 }
        var seen = Set<TaxonID>()
        var result: [TaxonID] = []
        for id in table.ids(ofKeys: keys) {
            guard result.count < limit else { break }
            if seen.insert(id).inserted { result.append(id) }
        }
        return result
    }
}

extension MemoryIndexes {
    static let empty = MemoryIndexes(tree: nil, nameWords: NameWordIndex([]), vocabulary: FuzzyVocabulary(words: []),
                                     exactNames: [:], commonlyNamed: nil, filteredSearch: .empty, treeProblem: "not built")
}

extension MemoryIndexes.TreeSource: CustomStringConvertible {
    var description: String {
        switch self {
        case .image: "image"
        case .shippedImage: "shipped image"
        case .rows: "rows"
        case .none: "none"
        }
    }
}
