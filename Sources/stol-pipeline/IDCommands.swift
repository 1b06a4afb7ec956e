import ArgumentParser
import Foundation
import STOLPipeline

/// `stol-pipeline check-ids`: the build-time stable-id check.
struct CheckIDs: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check-ids",
        abstract: "Fail when a released taxon id disappeared or changed its name or rank.",
        discussion: """
            Compares a built database with one or more records of released ids (TSV: id, rank, \
            scientific_name; see Pipeline/released-ids/). New ids are fine; a released id must stay, \
            with the same scientific name and rank, because users' favourites are keyed by it. \
            Exit 0 when every promise holds, 1 listing every violation otherwise.
            Example: stol-pipeline check-ids --database out/bundled.sqlite --released Pipeline/released-ids/curated-2026.11.tsv
            """)

    @Option(help: "The built database to check.")
    var database: String

    @Option(name: .customLong("released"), help: "A record of released ids (repeat for several).")
    var records: [String]

    @Flag(help: "Print the result as JSON.")
    var json = false

    func run() throws {
        guard !records.isEmpty else { throw ValidationError("give at least one --released record") }
        let build = try ReleasedIDs(database: database)
        var violations: [(record: String, violation: ReleasedIDs.Violation)] = []
        var checked = 0
        for record in records {
            let released = try ReleasedIDs(recordFile: record)
            checked += released.entries.count
            violations += released.violations(in: build).map { (record, $0) }
        }
        if json {
            try JSONReport.print(Report(checked: checked, ok: violations.isEmpty, violations: violations.map {
                Report.Violation(record: $0.record, problem: $0.violation.description)
            }))
        } else if violations.isEmpty {
            print("ok: all \(checked) released ids are present with the same name and rank")
        } else {
            for (record, violation) in violations { print("\(record): \(violation)") }
            print("\(violations.count) released id(s) broken; see Pipeline/README.md (stable ids)")
        }
        if !violations.isEmpty { throw ExitCode(1) }
    }

    /// `check-ids --json`.
    struct Report: Encodable {
        struct Violation: Encodable {
            let record, problem: String
        }

        let checked: Int
        let ok: Bool
        let violations: [Violation]
    }
}

/// `stol-pipeline record-ids`: the release step that extends the promise.
struct RecordIDs: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "record-ids",
        abstract: "Write the record of released ids of a database (run when releasing it).")

    @Option(help: "The database being released.")
    var database: String

    @Option(help: "Where to write the record (TSV).")
    var output: String

    func run() throws {
        let released = try ReleasedIDs(database: database)
        try released.write(to: output)
        print("recorded \(released.entries.count) ids in \(output)")
    }
}
