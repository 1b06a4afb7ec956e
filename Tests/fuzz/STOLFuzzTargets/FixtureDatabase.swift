import Foundation
import GRDB
import Logging
import STOLPipeline
import STOLTestFixtures

/// A small real taxonomy database for the targets that serve or import one: the
/// Felidae fixture of the tests (41 taxa, names in four languages, synonyms,
/// traits, IUCN statuses), built by the real pipeline once per process.
enum FixtureDatabase {
    /// Builds it at `output`; `pageSize` other than SQLite's default makes it smaller
    /// (the verifier's seed inputs are whole databases, so every page counts).
    static func build(at output: String, pageSize: Int? = nil) throws {
        let source = output + ".source"
        try FileManager.default.createDirectory(atPath: source, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: source) }
        try FelidaeFixture.write(to: source)
        _ = try TaxonomyBuilder(logger: quietLogger).build(source: source, output: output)
        if let pageSize {
            let queue = try DatabaseQueue(path: output)
            try queue.writeWithoutTransaction { try $0.execute(sql: "PRAGMA page_size = \(pageSize); VACUUM") }
            try queue.close()
        }
    }
}
