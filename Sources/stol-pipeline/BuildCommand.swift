import ArgumentParser
import Foundation
import Logging
import STOLPipeline

/// `stol-pipeline build`.
struct Build: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Build a taxonomy database from a source dataset.")

    @Option(help: "Directory of the source dataset.")
    var source: String

    @Option(help: "Source format: \(TaxonomyBuilder.SourceFormat.allCases.map(\.rawValue).joined(separator: ", ")).")
    var format: String = "coldp"

    @Option(help: "Path of the SQLite database to write (replaced atomically).")
    var output: String

    @Option(help: "Closest relatives to precompute per species (0 disables).")
    var topN: Int = 10

    @Flag(help: "Print the build report as JSON.")
    var json = false

    func run() throws {
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = .info
            return handler
        }
        guard let sourceFormat = TaxonomyBuilder.SourceFormat(rawValue: format) else {
            throw ValidationError("unknown --format '\(format)'")
        }
        guard (0...100).contains(topN) else { throw ValidationError("--top-n must be between 0 and 100") }
        var options = TaxonomyBuilder.Options()
        options.format = sourceFormat
        options.topN = topN
        let outputURL = URL(fileURLWithPath: output)
        try FileManager.default.createDirectory(at: outputURL.deletingLastPathComponent(), withIntermediateDirectories: true)
        let report: TaxonomyDatabaseWriter.Report
        do {
            report = try TaxonomyBuilder(options: options).build(source: source, output: output)
        } catch {
            FileHandle.standardError.write(Data("stol-pipeline: build failed: \(error)\n".utf8))
            throw ExitCode(1)
        }
        if json {
            let object: [String: Any] = [
                "output": output, "bytes": report.bytes, "taxa": report.taxa, "names": report.names,
                "refs": report.references, "traits": report.traits, "euler_tour": report.eulerTour,
                "top_n_relatives": report.topNRelatives,
            ]
            let data = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
            print(String(decoding: data, as: UTF8.self))
        } else {
            print("""
                built \(output) (\(report.bytes) bytes)
                  taxa \(report.taxa), names \(report.names), refs \(report.references), traits \(report.traits)
                  euler_tour \(report.eulerTour), top_n_relatives \(report.topNRelatives)
                """)
        }
    }
}
