import Foundation
import GRDB
import STOLModel
import Glibc
import Logging
import STOLContainer
import STOLFormat
import STOLPipeline
import STOLProtocol
import STOLTestFixtures
import STOLTransport
import XCTest


/// Writes `bytes` to a new file and returns an open read-only descriptor to it.
func descriptor(for bytes: [UInt8], in directory: String, name: String = "file.stol") throws -> OwnedFileDescriptor {
    let path = directory + "/" + name
    try Data(bytes).write(to: URL(fileURLWithPath: path))
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { throw POSIXError(.EIO) }
    return OwnedFileDescriptor(fd)
}

func context(uid: UInt32, gid: UInt32 = 60000, groups: [UInt32] = [], fd: OwnedFileDescriptor? = nil,
             connection: Int32? = nil) -> RequestContext {
    RequestContext(peer: PeerCredentials(pid: 1, uid: uid, gid: gid, groups: groups),
                   logger: quietLogger, receivedFileDescriptor: fd, connectionDescriptor: connection)
}

/// Collects every frame a streaming service sends for one request.
func collect<S: StreamingFramedService>(_ service: S, _ request: S.Request, _ context: RequestContext) -> [S.Response] {
    var responses: [S.Response] = []
    service.respond(to: request, context: context) { responses.append($0) }
    return responses
}

let stolMagic: [UInt8] = Array("STOL".utf8) + [0] + Array("DB".utf8) + [1]
/// A version 1 file whose header the coordinator accepts (signed by the fixture's key) and
/// whose payload is nothing: for the tests that script the verifier's answers.
let signedVersion1File = StolFile.assemble(payload: [UInt8](repeating: 0, count: 200), schemaVersion: 3, signingKey: ImportFixture.key)

/// A small real taxonomy database (the Felidae fixture, built once by the real
/// pipeline) and a signing key the tests' verifiers trust.
enum ImportFixture {
    static let key = Ed25519.PrivateKey.generate()

    private static let built: Result<String, Error> = Result {
        let directory = try TemporaryDirectory.make(prefix: "stolimpdb")
        let source = directory + "/source"
        try FileManager.default.createDirectory(atPath: source, withIntermediateDirectories: true)
        _ = try FelidaeFixture.write(to: source)
        let path = directory + "/felidae.sqlite"
        _ = try TaxonomyBuilder(logger: quietLogger).build(source: source, output: path)
        return path
    }

    /// The database file's path (shared: never write to it).
    static func databasePath() throws -> String { try built.get() }

    static func databaseBytes() throws -> [UInt8] {
        try [UInt8](Data(contentsOf: URL(fileURLWithPath: databasePath())))
    }

    /// A copy of the database whose `schema_version.applied_at` is `buildTime`; with
    /// `release`, its provenance names that release and `idNamespace` (as the pipeline
    /// writes it).
    static func database(builtAt buildTime: String, release: String? = nil, idNamespace: String = "ncbi-taxid",
                         in directory: String) throws -> [UInt8] {
        let path = directory + "/built-\(UUID().uuidString).sqlite"
        try FileManager.default.copyItem(atPath: databasePath(), toPath: path)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let queue = try DatabaseQueue(path: path)
        try queue.write { try $0.execute(sql: "UPDATE schema_version SET applied_at = ?", arguments: [buildTime]) }
        if let release {
            let provenance = Provenance(source: "NCBI Taxonomy", release: release, idNamespace: idNamespace,
                                        licence: "public domain", attribution: "NCBI", citation: "NCBI Taxonomy, release \(release)",
                                        tool: "test", built: buildTime)
            try queue.write { db in
                try db.execute(sql: TaxonomySchema.provenanceStatement.replacingOccurrences(
                    of: "CREATE TABLE", with: "CREATE TABLE IF NOT EXISTS"))
                try db.execute(sql: "DELETE FROM provenance")
                for row in provenance.rows {
                    try db.execute(sql: "INSERT INTO provenance(key, value) VALUES (?, ?)", arguments: [row.key, row.value])
                }
            }
        }
        try queue.close()
        return try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
    }
}

/// SHA-256 of a file in hex, or nil when it does not exist.
func fileDigest(_ path: String) -> String? {
    guard let data = FileManager.default.contents(atPath: path) else { return nil }
    return SHA256.hash([UInt8](data)).hexString
}

extension ImportFixture {
    /// A copy of the database at `path` in `directory` after `edit` (a schema 1
    /// database is the fixture without the tables of version 2, say).
    static func edited(in directory: String, _ edit: (Database) throws -> Void) throws -> String {
        let path = directory + "/edited-\(UUID().uuidString).sqlite"
        try FileManager.default.copyItem(atPath: databasePath(), toPath: path)
        let queue = try DatabaseQueue(path: path)
        try queue.writeWithoutTransaction { try edit($0) }
        try queue.close()
        return path
    }

    /// Turns a database of schema 3 into what schema 1 was: the eight-rank view only.
    static func downgradeToSchema1(_ db: Database) throws {
        try LegacySchema.downgrade(db, to: 1)
    }

    /// Turns a database of schema 3 into what schema 2 was: the view in `taxa`, the tree in `tree_nodes`.
    static func downgradeToSchema2(_ db: Database) throws {
        try LegacySchema.downgrade(db, to: 2)
    }
}
