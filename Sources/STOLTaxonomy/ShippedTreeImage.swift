import Foundation
import Glibc
import GRDB
import STOLModel

/// The tree's image the pipeline writes beside a database it builds
/// (`reference.sqlite.tree` beside `reference.sqlite`), so that even the first
/// start of a database on a machine (a cluster node's first one-off job, a
/// private stack on a release file on a shared filesystem) reads its tree in a
/// fraction of a second instead of building it (2.3 s for NCBI's 2.6 M nodes).
/// The server's own images (``TreeImageCache``) only help from the second start.
///
/// A shipped image cannot name its database by path and fingerprint, as the
/// server's do: the pair is copied, moved and mounted elsewhere. It names the
/// database's content instead: the build's own id (``Provenance/buildID``, random,
/// so two builds of one release are two keys), the file's size, and the SQLite
/// header's fields that any write changes (the file change counter, the page
/// count, the schema cookie, the version-valid-for number, the journal mode). A
/// database changed after its build (a row edited with `sqlite3`) is built from its
/// rows again, as is a damaged or foreign image (``TaxonomyTree/readImage(from:expectedKey:)``
/// checks every array); the signed database itself is never touched.
public enum ShippedTreeImage {
    /// Where the image of the database at `databasePath` is shipped: beside it.
    public static func path(forDatabase databasePath: String) -> String {
        databasePath + ".tree"
    }

    /// The shipped image of the database at `databasePath` as it is now; nil when
    /// the database names no build (built before build ids) or cannot be read.
    static func entry(databasePath: String, buildID: String?) -> TreeImageCache.Entry? {
        guard let buildID, let content = contentKey(databasePath: databasePath) else { return nil }
        return TreeImageCache.Entry(path: path(forDatabase: databasePath), key: "shipped\n\(buildID)\n\(content)", shipped: true)
    }

    /// The file's size and the header's fields a write changes, as text.
    private static func contentKey(databasePath: String) -> String? {
        let descriptor = open(databasePath, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var status = stat()
        var header = [UInt8](repeating: 0, count: 100)
        guard fstat(descriptor, &status) == 0, pread(descriptor, &header, header.count, 0) == header.count,
              header.starts(with: Array("SQLite format 3\0".utf8)) else { return nil }
        // 18–19 journal modes (WAL changes the counter's meaning), 24–31 change counter and
        // page count, 40–43 schema cookie, 92–99 version-valid-for and SQLite's version.
        let fields = header[18..<20] + header[24..<32] + header[40..<44] + header[92..<100]
        return "\(status.st_size)\n" + fields.map { String(format: "%02x", $0) }.joined()
    }

    /// Why no image was written.
    public enum WriteError: Error, CustomStringConvertible {
        /// The database cannot be opened or read.
        case unreadable(String)
        /// Its provenance names no build (built before build ids): rebuild it.
        case noBuildID
        /// Its schema is older than 3, whose tree alone is imaged (schemas 1 and 2 are built at every start).
        case noWholeTree(schemaVersion: Int)
        /// Its tree cannot be built (the server would say the same).
        case tree(String)
        case write(String)

        public var description: String {
            switch self {
            case .unreadable(let detail): "cannot read the database: \(detail)"
            case .noBuildID: "the database names no build (built before 2026-11-29): build it again with stol-pipeline build"
            case .noWholeTree(let version): "a schema \(version) database: only schema 3's tree is imaged (older ones are built at every start)"
            case .tree(let detail): "cannot build its tree: \(detail)"
            case .write(let detail): "cannot write the image: \(detail)"
            }
        }
    }

    /// What ``write(databasePath:)`` wrote (also `stol-pipeline`'s JSON report of it).
    public struct Written: Sendable, Encodable {
        public let path: String
        public let bytes: Int
        public let nodes: Int
    }

    /// Builds the tree of the database at `databasePath` from its rows, as the server
    /// does at a start without an image, and writes its image beside it (atomically;
    /// readable by whoever may read the database).
    public static func write(databasePath: String) throws(WriteError) -> Written {
        var configuration = Configuration()
        configuration.readonly = true
        let tree: TaxonomyTree
        let buildID: String?
        do {
            let queue = try DatabaseQueue(path: databasePath, configuration: configuration)
            defer { try? queue.close() }
            (tree, buildID) = try queue.inDatabase { db throws -> (TaxonomyTree, String?) in
                let facts: DatabaseFacts
                do throws(DatabaseFactsError) {
                    facts = try DatabaseFacts.read(db)
                } catch {
                    throw WriteError.unreadable(error.description)
                }
                let layout = TaxonomyLayout(schemaVersion: Int(facts.schemaVersion))
                guard layout.everyNode else { throw WriteError.noWholeTree(schemaVersion: Int(facts.schemaVersion)) }
                guard facts.provenance?.buildID != nil else { throw WriteError.noBuildID }
                let scan = try TaxaScan.read(db, layout: layout)
                guard let builder = scan.builder else { throw WriteError.tree(scan.treeProblem ?? "no nodes") }
                do {
                    return (try builder.build(), facts.provenance?.buildID)
                } catch {
                    throw WriteError.tree("\(error)")
                }
            }
        } catch let error as WriteError {
            throw error
        } catch {
            throw .unreadable("\(error)")
        }
        guard let entry = entry(databasePath: databasePath, buildID: buildID) else {
            throw .unreadable("cannot read its header")
        }
        var status = stat()
        let mode = stat(databasePath, &status) == 0 ? status.st_mode & 0o644 : 0o600
        do {
            try entry.write(tree, mode: mode | 0o600)
        } catch {
            throw .write("\(error)")
        }
        var written = stat()
        _ = stat(entry.path, &written)
        return Written(path: entry.path, bytes: Int(written.st_size), nodes: tree.count)
    }
}
