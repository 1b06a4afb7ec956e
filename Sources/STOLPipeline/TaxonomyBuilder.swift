import Foundation
import Logging

/// The `stol-pipeline build` step: read a source, normalise it, write the database.
public struct TaxonomyBuilder {
    public enum SourceFormat: String, CaseIterable, Sendable {
        case coldp
    }

    public struct Options: Sendable {
        public var format: SourceFormat = .coldp
        public var topN = 10
        public init() {}
    }

    public let options: Options
    public let logger: Logger

    public init(options: Options = Options(), logger: Logger = Logger(label: "stol.pipeline")) {
        self.options = options
        self.logger = logger
    }

    public func build(source directory: String, output: String) throws -> TaxonomyDatabaseWriter.Report {
        let started = ContinuousClock.now
        let source: SourceTaxonomy
        switch options.format {
        case .coldp: source = try ColDPReader().read(directory: directory)
        }
        logger.info("read source", metadata: ["usages": "\(source.usages.count)", "synonyms": "\(source.synonyms.count)",
                                              "vernacular": "\(source.vernacularNames.count)"])
        let normalized = TaxonomyNormalizer().normalize(source)
        logger.info("normalised", metadata: ["taxa": "\(normalized.taxa.count)",
                                             "droppedIntermediate": "\(normalized.droppedIntermediate)"])
        let report = try TaxonomyDatabaseWriter(topN: options.topN).write(normalized, to: output)
        logger.info("wrote database", metadata: ["path": "\(output)", "bytes": "\(report.bytes)",
                                                 "elapsed": "\(ContinuousClock.now - started)"])
        return report
    }
}
