import ArgumentParser
import Foundation
import STOLTaxonomy

/// `stol-pipeline tree-image`: the tree's image beside a database built elsewhere
/// (`build` writes it itself).
struct TreeImage: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tree-image",
        abstract: "Write the tree's image beside a database (DATABASE.tree), which every server start then reads.",
        discussion: """
            A taxonomy server builds a database's tree from its rows at its first start (2.3 s for \
            NCBI's 2.6 M nodes) and keeps the image in its own cache for later starts. An image \
            beside the database (245 MB for NCBI) spares even the first start: a cluster node's \
            first job, a private stack on a database on a shared filesystem. `stol-pipeline build` \
            writes it unless told --no-tree-image; this writes it for a database built without it. \
            The image names the database's build and content: a database changed afterwards (or \
            built before build ids, 2026-11-29) is built from its rows again, never answered from \
            another database's image. Copy the two files together.
            Example: stol-pipeline tree-image out/reference.sqlite
            """)

    @Argument(help: "The database (schema 3, built by stol-pipeline build).")
    var database: String

    @Flag(help: "Print what was written as JSON.")
    var json = false

    func run() throws {
        let written: ShippedTreeImage.Written
        do {
            written = try ShippedTreeImage.write(databasePath: database)
        } catch {
            FileHandle.standardError.write(Data("stol-pipeline tree-image: \(database): \(error)\n".utf8))
            throw ExitCode(1)
        }
        if json {
            try JSONReport.print(written)
        } else {
            print("wrote \(written.path) (\(written.bytes) bytes, \(written.nodes) nodes)")
        }
    }
}
