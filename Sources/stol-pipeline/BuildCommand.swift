import ArgumentParser
import Foundation
import Logging
import STOLPipeline
import STOLTaxonomy

/// `stol-pipeline build`.
struct Build: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Build a taxonomy database from a source dataset.",
        discussion: """
            Formats: coldp (Catalogue of Life Data Package), ncbi (NCBI taxdump: nodes.dmp, names.dmp, \
            merged.dmp), gbif (GBIF backbone DwC-A: Taxon.tsv, VernacularName.tsv), ott (Open Tree \
            Taxonomy: taxonomy.tsv, synonyms.tsv). Progress of long reads goes to stderr.

            Examples: the mammals of NCBI, then the bundled database as `make build-db` builds it.
              stol-pipeline build --format ncbi --source .cache/ncbi/taxdump \\
                --drop-placeholders --subset 40674 --output out/mammals.sqlite
              stol-pipeline build --format ncbi --source .cache/ncbi/taxdump \\
                --drop-placeholders --overlay Pipeline/curated --only-named-species \\
                --keep-released Pipeline/released-ids/curated-2026.11.tsv \\
                --output out/bundled.sqlite
            """)

    @Option(help: "Directory of the source dataset.")
    var source: String

    @Option(help: "Source format: \(TaxonomyBuilder.SourceFormat.allCases.map(\.rawValue).joined(separator: "|")).")
    var format: String = "coldp"

    @Option(help: "Path of the SQLite database to write (replaced atomically).")
    var output: String

    @Option(help: "Closest relatives to precompute per species (0 disables: the server computes them on its tree).")
    var topN: Int = 10

    @Flag(inversion: .prefixedNo,
          help: "Write the Euler tour and first occurrences of the eight-rank view (the server never reads them; a reference build leaves them out, so that its deltas stay small).")
    var eulerTour = true

    @Flag(help: "Drop placeholder taxa (Panthera sp., uncultured …, environmental samples) and their subtrees.")
    var dropPlaceholders = false

    @Option(help: ArgumentHelp(
        "Curated ColDP directory whose common names, synonyms, IUCN status, traits and references are added to the source's taxa (matched by id).",
        valueName: "DIR"))
    var overlay: String?

    @Flag(help: "Keep every taxon above species, but at species rank and below only the taxa with a common name, IUCN status or trait (after the overlay), with their ancestors: the bundled database's rule.")
    var onlyNamedSpecies = false

    @Option(help: ArgumentHelp(
        "A record of released ids (Pipeline/released-ids/) whose species --only-named-species keeps anyway (repeat for several).",
        valueName: "FILE"))
    var keepReleased: [String] = []

    /// Accepted and ignored: since schema 3 every build keeps every node of the source.
    @Flag(help: .hidden)
    var fullTree = false

    @Option(help: ArgumentHelp("Keep only these source ids, their descendants and their ancestors.",
                               valueName: "ID[,ID…]"))
    var subset: String?

    @Option(help: ArgumentHelp("The source's name in the database's provenance (default: the format's, e.g. \"NCBI Taxonomy\").",
                               valueName: "NAME"))
    var sourceName: String?

    @Option(help: ArgumentHelp("The source's release (default: what the source says — SOURCE.txt of a dump converted from PyPI, a ColDP's metadata.yaml — else \"unknown\").",
                               valueName: "RELEASE"))
    var release: String?

    @Option(help: ArgumentHelp("Whose ids the taxon ids are: ncbi-taxid, gbif-key, col-id, ott-id (default: the format's). Import refuses to mix namespaces.",
                               valueName: "NAMESPACE"))
    var idNamespace: String?

    @Option(help: ArgumentHelp("Licence of the data (default: the source's).", valueName: "TEXT"))
    var licence: String?

    @Option(help: ArgumentHelp("Attribution the licence asks for (default: the source's).", valueName: "TEXT"))
    var attribution: String?

    @Option(help: ArgumentHelp("The line to cite (default: the source's reference with the release).", valueName: "TEXT"))
    var citation: String?

    @Flag(help: "Do not write the tree's image beside the database (OUTPUT.tree; see `stol-pipeline tree-image`).")
    var noTreeImage = false

    @Flag(help: "Print the build report as JSON.")
    var json = false

    func run() throws {
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = .info
            return handler
        }
        guard let sourceFormat = TaxonomyBuilder.SourceFormat(rawValue: format) else {
            throw ValidationError("unknown --format '\(format)' (expected "
                                  + TaxonomyBuilder.SourceFormat.allCases.map(\.rawValue).joined(separator: ", ") + ")")
        }
        guard (0...100).contains(topN) else { throw ValidationError("--top-n must be between 0 and 100") }
        var options = TaxonomyBuilder.Options()
        options.format = sourceFormat
        options.topN = topN
        options.eulerTour = eulerTour
        options.dropPlaceholders = dropPlaceholders
        options.overlayDirectory = overlay
        options.onlyNamedSpecies = onlyNamedSpecies
        options.releasedRecords = keepReleased
        var provenance = SourceProvenance.defaults(format: sourceFormat, directory: source, overlay: overlay != nil)
        if let release {
            provenance.citation = provenance.citation.replacingOccurrences(of: provenance.release, with: release)
            provenance.release = release
        }
        if let sourceName { provenance.source = sourceName }
        if let idNamespace {
            guard idNamespace.range(of: "^[a-z][a-z0-9-]*$", options: .regularExpression) != nil else {
                throw ValidationError("--id-namespace: '\(idNamespace)' is not a namespace (lowercase letters, digits and '-', such as ncbi-taxid)")
            }
            provenance.idNamespace = idNamespace
        }
        if let licence { provenance.licence = licence }
        if let attribution { provenance.attribution = attribution }
        if let citation { provenance.citation = citation }
        options.provenance = provenance
        if let subset {
            var roots: [Int64] = []
            for part in subset.split(separator: ",") {
                guard let id = Int64(part.trimmingCharacters(in: .whitespaces)) else {
                    throw ValidationError("--subset: '\(part)' is not a taxon id")
                }
                roots.append(id)
            }
            guard !roots.isEmpty else { throw ValidationError("--subset needs at least one taxon id") }
            options.subsetRoots = roots
        }
        options.progress = { event in
            let rate = Int(event.rowsPerSecond.rounded())
            let state = event.finished ? "done" : "reading"
            let line = "stol-pipeline: \(state) \(event.file): \(event.rows) rows, \(rate) rows/s\n"
            FileHandle.standardError.write(Data(line.utf8))
        }
        let outputURL = URL(fileURLWithPath: output)
        try FileManager.default.createDirectory(at: outputURL.deletingLastPathComponent(), withIntermediateDirectories: true)
        let summary: TaxonomyBuilder.Summary
        do {
            summary = try TaxonomyBuilder(options: options).buildWithSummary(source: source, output: output)
        } catch {
            FileHandle.standardError.write(Data("stol-pipeline: build failed: \(error)\n".utf8))
            throw ExitCode(1)
        }
        let report = summary.database
        // The image every server start reads instead of building the tree (a node's first start included).
        var image: ShippedTreeImage.Written?
        if !noTreeImage {
            do {
                image = try ShippedTreeImage.write(databasePath: output)
            } catch {
                FileHandle.standardError.write(Data("stol-pipeline: built \(output), but \(error)\n".utf8))
                throw ExitCode(1)
            }
        }
        let noRetiredIDs = sourceFormat == .ncbi && report.mergedIDs == 0 && report.deletedIDs == 0
        if json {
            try JSONReport.print(Report(output: output, summary: summary, treeImage: image,
                                        phases: Dictionary(summary.phases.map { ($0.name, seconds($0.duration)) },
                                                           uniquingKeysWith: +)))
        } else {
            print("""
                built \(output) (\(report.bytes) bytes)
                  source \(provenance.source), release \(provenance.release), ids \(provenance.idNamespace), \
                licence \(provenance.licence)
                  taxa \(report.taxa) (every node; \(report.mainTaxa) of the eight ranks, species \(summary.species)), \
                names \(report.names), refs \(report.references), traits \(report.traits)
                  name classes: \(Self.describe(report.nameClasses))
                  euler_tour \(report.eulerTour), top_n_relatives \(report.topNRelatives), \
                merged_ids \(report.mergedIDs), deleted_ids \(report.deletedIDs)\(noRetiredIDs ? " (the source has no merged.dmp or delnodes.dmp)" : "")
                """)
            if let placeholders = summary.placeholders {
                print("  placeholders: \(placeholders.placeholders) placeholders and \(placeholders.containers) containers "
                      + "matched, \(placeholders.droppedUsages) source taxa dropped (\(placeholders.droppedSpecies) species), "
                      + "\(placeholders.reattached) re-attached, \(placeholders.droppedNames) names")
            }
            if let overlay = summary.overlay {
                print("  overlay: \(overlay.vernacularNames) names, \(overlay.synonyms) synonyms, "
                      + "\(overlay.otherNames) other names, \(overlay.properties) properties, \(overlay.references) "
                      + "references added; \(overlay.unmatched) facts for taxa not in the source")
            }
            if let named = summary.namedSpecies {
                print("  named species: \(named.keptSpecies) kept, \(named.droppedSpecies) without a name dropped "
                      + "(\(named.droppedUsages) source taxa, \(named.droppedNames) names)")
            }
            if let subset = summary.subset {
                print("  subset: \(subset.keptUsages) source taxa kept, \(subset.droppedUsages) dropped"
                      + (subset.unknownRoots.isEmpty ? "" : ", unknown roots \(subset.unknownRoots)"))
            }
            if let image {
                print("  tree image: \(image.path) (\(image.bytes) bytes, \(image.nodes) nodes)")
            }
            print("  phases: " + summary.phases.map { "\($0.name) \(String(format: "%.1f", seconds($0.duration)))s" }
                .joined(separator: ", "))
        }
    }

    /// `build --json`: the database's counts, the seconds of each phase, and an
    /// object for each optional step that ran.
    struct Report: Encodable {
        struct Placeholders: Encodable {
            let matched, containers, reattached, droppedUsages, droppedSpecies, droppedNames: Int

            enum CodingKeys: String, CodingKey {
                case matched, containers, reattached, droppedUsages = "dropped_usages"
                case droppedSpecies = "dropped_species", droppedNames = "dropped_names"
            }
        }

        struct Overlay: Encodable {
            let names, synonyms, otherNames, properties, references, unmatched: Int

            enum CodingKeys: String, CodingKey {
                case names, synonyms, otherNames = "other_names", properties, references, unmatched
            }
        }

        struct NamedSpecies: Encodable {
            let keptSpecies, droppedSpecies, droppedUsages, droppedNames: Int

            enum CodingKeys: String, CodingKey {
                case keptSpecies = "kept_species", droppedSpecies = "dropped_species"
                case droppedUsages = "dropped_usages", droppedNames = "dropped_names"
            }
        }

        struct Subset: Encodable {
            let keptUsages, droppedUsages: Int
            let unknownRoots: [Int64]

            enum CodingKeys: String, CodingKey {
                case keptUsages = "kept_usages", droppedUsages = "dropped_usages", unknownRoots = "unknown_roots"
            }
        }

        let output: String
        let bytes: Int64
        let taxa, mainTaxa, names, refs, traits, eulerTour, topNRelatives, species, mergedIDs, deletedIDs: Int
        let nameClasses: [String: Int]
        let sourceUsages: Int
        let phases: [String: Double]
        let placeholders: Placeholders?
        let overlay: Overlay?
        let namedSpecies: NamedSpecies?
        let subset: Subset?
        /// The database's `provenance` rows.
        let provenance: [String: String]?
        /// The tree's image written beside it (``ShippedTreeImage``); nil with `--no-tree-image`.
        let treeImage: ShippedTreeImage.Written?

        enum CodingKeys: String, CodingKey {
            case provenance, treeImage = "tree_image"
            case output, bytes, taxa, names, refs, traits, eulerTour = "euler_tour", topNRelatives = "top_n_relatives"
            case mainTaxa = "main_taxa", nameClasses = "name_classes"
            case species, mergedIDs = "merged_ids", deletedIDs = "deleted_ids"
            case sourceUsages = "source_usages", phases, placeholders, overlay, namedSpecies = "named_species", subset
        }

        init(output: String, summary: TaxonomyBuilder.Summary, treeImage: ShippedTreeImage.Written?, phases: [String: Double]) {
            self.treeImage = treeImage
            let report = summary.database
            self.output = output
            bytes = report.bytes
            taxa = report.taxa
            names = report.names
            refs = report.references
            traits = report.traits
            eulerTour = report.eulerTour
            topNRelatives = report.topNRelatives
            species = summary.species
            mainTaxa = report.mainTaxa
            nameClasses = report.nameClasses
            mergedIDs = report.mergedIDs
            deletedIDs = report.deletedIDs
            sourceUsages = summary.sourceUsages
            self.phases = phases
            placeholders = summary.placeholders.map {
                Placeholders(matched: $0.placeholders, containers: $0.containers, reattached: $0.reattached,
                             droppedUsages: $0.droppedUsages, droppedSpecies: $0.droppedSpecies,
                             droppedNames: $0.droppedNames)
            }
            overlay = summary.overlay.map {
                Overlay(names: $0.vernacularNames, synonyms: $0.synonyms, otherNames: $0.otherNames, properties: $0.properties,
                        references: $0.references, unmatched: $0.unmatched)
            }
            namedSpecies = summary.namedSpecies.map {
                NamedSpecies(keptSpecies: $0.keptSpecies, droppedSpecies: $0.droppedSpecies,
                             droppedUsages: $0.droppedUsages, droppedNames: $0.droppedNames)
            }
            provenance = summary.provenance.map { Dictionary(uniqueKeysWithValues: $0.rows.map { ($0.key, $0.value) }) }
            subset = summary.subset.map {
                Subset(keptUsages: $0.keptUsages, droppedUsages: $0.droppedUsages, unknownRoots: $0.unknownRoots)
            }
        }
    }

    /// `genbank common name 37082, authority …`, most frequent first.
    static func describe(_ classes: [String: Int]) -> String {
        guard !classes.isEmpty else { return "none" }
        return classes.sorted { $0.value != $1.value ? $0.value > $1.value : $0.key < $1.key }
            .map { "\($0.key) \($0.value)" }.joined(separator: ", ")
    }

    private func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) * 1e-18
    }
}
