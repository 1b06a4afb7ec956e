import ArgumentParser

/// Taxonomy latency and throughput (issue 4). Not written yet.
struct TaxonomyBench: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "taxonomy", abstract: "Taxonomy latency (not written yet).")
    func run() throws { throw ExitCode(1) }
}
