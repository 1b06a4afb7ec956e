import ArgumentParser
import Foundation
import Logging
import STOLPipeline

/// `stol-pipeline`: the offline builder for operators. Wiring only; the work is in STOLPipeline.
@main
struct StolPipeline: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "stol-pipeline",
        abstract: "Build STOL taxonomy databases from taxonomy source datasets (offline).",
        discussion: """
            Databases are written in the taxonomy schema, version 3 (schema_version 3; \
            docs/design/data-and-format.md §2–§3): every node of the source as a taxon with \
            its own rank and the eight-rank view beside it, names of every class on any \
            node, the FTS5 index, Euler tour, first occurrences, precomputed closest \
            relatives, retired ids and prominence.
            Example: stol-pipeline build --source Pipeline/curated --output out/bundled.sqlite
            """,
        subcommands: [Build.self, TreeImage.self, CheckIDs.self, RecordIDs.self, Keygen.self, Sign.self, Delta.self, Verify.self]
    )
}

/// The `--json` reports of `build` and `check-ids`: one encoder, keys sorted by
/// their UTF-8 bytes, integers as integers, a nil optional left out.
enum JSONReport {
    private static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return encoder
    }()

    /// Prints `report` as one line of JSON.
    static func print(_ report: some Encodable) throws {
        Swift.print(String(decoding: try encoder.encode(report), as: UTF8.self))
    }
}
