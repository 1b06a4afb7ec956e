import Foundation
import Logging
import STOLModel

/// The `stol-pipeline build` step: read a source, optionally cut it down (subset,
/// placeholders), normalise it, write the database.
public struct TaxonomyBuilder {
    public enum SourceFormat: String, CaseIterable, Sendable {
        /// Catalogue of Life Data Package (`NameUsage.tsv`, …).
        case coldp
        /// NCBI Taxonomy dump (`nodes.dmp`, `names.dmp`, `merged.dmp`).
        case ncbi
        /// GBIF Backbone Taxonomy Darwin Core Archive (`Taxon.tsv`, `VernacularName.tsv`).
        case gbif
        /// Open Tree Taxonomy (`taxonomy.tsv`, `synonyms.tsv`).
        case ott
    }

    public struct Options: Sendable {
        public var format: SourceFormat = .coldp
        public var topN = 10
        /// Write the view's Euler tour and first occurrences (``TaxonomyDatabaseWriter/eulerTour``).
        public var eulerTour = true
        /// Drop placeholder taxa and their subtrees (``PlaceholderFilter``).
        public var dropPlaceholders = false
        /// When not empty: keep only these taxa (source ids) and their descendants,
        /// plus their ancestors so the tree stays connected.
        public var subsetRoots: [TaxonID] = []
        /// A curated ColDP directory whose names, synonyms, properties and
        /// references are added to the source's taxa (``SourceTaxonomy/overlaid(with:)``).
        public var overlayDirectory: String?
        /// Keep only species with a common name or a property (``SourceTaxonomy/keepingNamedSpecies()``).
        public var onlyNamedSpecies = false
        /// Records of released ids (``ReleasedIDs``) whose species
        /// ``onlyNamedSpecies`` must keep even without a name.
        public var releasedRecords: [String] = []
        /// Progress of long reads (rows read, rows/s); nil: logged at debug level only.
        public var progress: ReadProgressHandler?
        /// Where the database comes from (its `provenance` table); nil: the format's
        /// defaults (``SourceProvenance/defaults(format:directory:overlay:now:)``).
        public var provenance: Provenance?
        public init() {}
    }

    /// Everything a build did, for the command's report.
    public struct Summary: Sendable {
        public var database = TaxonomyDatabaseWriter.Report()
        /// What the database's `provenance` table says.
        public var provenance: Provenance?
        public var sourceUsages = 0
        public var readStatistics = ReadStatistics()
        public var subset: SourceTaxonomy.SubsetReport?
        public var placeholders: PlaceholderFilter.Report?
        public var overlay: SourceTaxonomy.OverlayReport?
        public var namedSpecies: SourceTaxonomy.NamedSpeciesReport?
        public var taxa = 0
        public var species = 0
        public var droppedIntermediate = 0
        /// Phase name and duration, in order.
        public var phases: [(name: String, duration: Duration)] = []
    }

    public let options: Options
    public let logger: Logger

    public init(options: Options = Options(), logger: Logger = Logger(label: "stol.pipeline")) {
        self.options = options
        self.logger = logger
    }

    public func build(source directory: String, output: String) throws -> TaxonomyDatabaseWriter.Report {
        try buildWithSummary(source: directory, output: output).database
    }

    /// Reads the source of `directory` in the configured format.
    public func read(directory: String) throws(SourceError) -> SourceTaxonomy {
        let logger = self.logger
        let progress: ReadProgressHandler = options.progress ?? { event in
            logger.debug("reading", metadata: ["file": "\(event.file)", "rows": "\(event.rows)"])
        }
        switch options.format {
        case .coldp: return try ColDPReader().read(directory: directory)
        case .ncbi: return try NCBITaxdumpReader(progress: progress).read(directory: directory)
        case .gbif: return try GBIFReader(progress: progress).read(directory: directory)
        case .ott: return try OpenTreeReader(progress: progress).read(directory: directory)
        }
    }

    public func buildWithSummary(source directory: String, output: String) throws -> Summary {
        var summary = Summary()
        let started = ContinuousClock.now
        var phaseStart = started
        func phase(_ name: String) {
            let now = ContinuousClock.now
            summary.phases.append((name, now - phaseStart))
            logger.info("phase done", metadata: ["phase": "\(name)", "elapsed": "\(now - phaseStart)"])
            phaseStart = now
        }

        var source = try read(directory: directory)
        summary.sourceUsages = source.usages.count
        summary.readStatistics = source.readStatistics
        logger.info("read source", metadata: [
            "format": "\(options.format.rawValue)", "usages": "\(source.usages.count)",
            "synonyms": "\(source.synonyms.count)", "vernacular": "\(source.vernacularNames.count)",
            "otherNames": "\(source.otherNames.count)",
            "merged": "\(source.merged.count)", "damagedLines": "\(source.readStatistics.damagedLines)",
            "duplicateRows": "\(source.readStatistics.duplicateRows)",
            "orphanNames": "\(source.readStatistics.orphanNames)",
        ])
        phase("read")

        var alwaysKept = Set<TaxonID>()
        for record in options.releasedRecords {
            alwaysKept.formUnion(try ReleasedIDs(recordFile: record).entries.keys)
        }
        if let overlayDirectory = options.overlayDirectory {
            let overlay = try ColDPReader().read(directory: overlayDirectory)
            // The overlay's taxa, and those it names with an acronym (the viruses and model
            // organisms labs name daily: HIV-1, SARS-CoV-2) stay in a cut to named species.
            alwaysKept.formUnion(overlay.usages.map(\.id))
            alwaysKept.formUnion(overlay.otherNames.map(\.taxonID))
            let (merged, report) = source.overlaid(with: overlay)
            source = merged
            summary.overlay = report
            logger.info("overlay", metadata: [
                "directory": "\(overlayDirectory)", "names": "\(report.vernacularNames)",
                "synonyms": "\(report.synonyms)", "otherNames": "\(report.otherNames)", "properties": "\(report.properties)",
                "references": "\(report.references)", "unmatched": "\(report.unmatched)",
            ])
            phase("overlay")
        }
        // Prominence counts what the source has under a taxon, not what a cut keeps.
        let cuts = !options.subsetRoots.isEmpty || options.dropPlaceholders || options.onlyNamedSpecies
        let sourceCounts = cuts ? source.subtreeCounts() : nil
        if !options.subsetRoots.isEmpty {
            let (subset, report) = source.subset(roots: options.subsetRoots)
            source = subset
            summary.subset = report
            logger.info("subset", metadata: ["roots": "\(options.subsetRoots.map(String.init).joined(separator: ","))",
                                              "kept": "\(report.keptUsages)", "dropped": "\(report.droppedUsages)",
                                              "unknownRoots": "\(report.unknownRoots.map(String.init).joined(separator: ","))"])
            if !report.unknownRoots.isEmpty {
                logger.warning("subset roots not in the source",
                               metadata: ["ids": "\(report.unknownRoots.map(String.init).joined(separator: ","))"])
            }
            phase("subset")
        }
        if options.dropPlaceholders {
            let (filtered, report) = PlaceholderFilter().filter(source)
            source = filtered
            summary.placeholders = report
            logger.info("dropped placeholders", metadata: [
                "placeholders": "\(report.placeholders)", "containers": "\(report.containers)",
                "reattached": "\(report.reattached)", "droppedUsages": "\(report.droppedUsages)",
                "droppedSpecies": "\(report.droppedSpecies)", "droppedNames": "\(report.droppedNames)",
            ])
            phase("placeholders")
        }
        if options.onlyNamedSpecies {
            let (selected, report) = source.keepingNamedSpecies(alsoKeeping: alwaysKept)
            source = selected
            summary.namedSpecies = report
            logger.info("named species", metadata: [
                "kept": "\(report.keptSpecies)", "dropped": "\(report.droppedSpecies)",
                "droppedUsages": "\(report.droppedUsages)", "droppedNames": "\(report.droppedNames)",
            ])
            phase("named species")
        }

        var normalized = TaxonomyNormalizer().normalize(source)
        normalized.sourceCounts = sourceCounts
        source = SourceTaxonomy()  // release the source before writing
        summary.taxa = normalized.taxa.count
        summary.species = normalized.taxa.reduce(0) { $0 + ($1.rank == .species ? 1 : 0) }
        summary.droppedIntermediate = normalized.droppedIntermediate
        logger.info("normalised", metadata: ["taxa": "\(normalized.taxa.count)", "species": "\(summary.species)",
                                             "nodes": "\(normalized.nodes.count)",
                                             "merged": "\(normalized.merged.count)", "deleted": "\(normalized.deleted.count)",
                                             "droppedIntermediate": "\(normalized.droppedIntermediate)"])
        phase("normalise")

        let writerLogger = logger
        var provenance = options.provenance
            ?? SourceProvenance.defaults(format: options.format, directory: directory, overlay: options.overlayDirectory != nil)
        // Each build is named (``Provenance/buildID``), unless its provenance names it.
        if provenance.buildID == nil { provenance.buildID = Provenance.newBuildID() }
        summary.provenance = provenance
        let writer = TaxonomyDatabaseWriter(topN: options.topN, eulerTour: options.eulerTour,
                                            provenance: provenance) { name, duration in
            writerLogger.info("write step done", metadata: ["step": "\(name)", "elapsed": "\(duration)"])
        }
        summary.database = try writer.write(normalized, to: output)
        phase("write")
        logger.info("wrote database", metadata: ["path": "\(output)", "bytes": "\(summary.database.bytes)",
                                                 "elapsed": "\(ContinuousClock.now - started)"])
        return summary
    }
}
