import Foundation
import GRDB
import Glibc
import STOLFormat
import STOLProtocol
import STOLTestFixtures
import STOLTransport
import XCTest

/// What the import tests need beyond ``StackHarness``: a signing key the stack's
/// verifier trusts (through `STOL_TRUSTED_KEY`, as an operator would set it),
/// signed databases, the verifier processes, and a fingerprint of the state
/// directory to prove that a failure changed nothing.
extension StackHarness {
    /// The key this test run signs with; its public half is what the verifier trusts.
    static let signingKey = Ed25519.PrivateKey.generate()

    /// The key directory the coordinator and the verifier trust (`STOL_TRUSTED_KEY`).
    var keysDirectory: String { root + "/keys" }

    /// Points the coordinator and the verifier at a key directory laid out as an operator
    /// would: this run's public key, an expired and a revoked key, and a `revoked` list
    /// (``CorpusKeys``); and gives the daemons a temporary directory of their own (the
    /// verifier's scratch files live there).
    func trustTestKey() throws {
        try CorpusKeys.writeTrustDirectory(keysDirectory, trusting: Self.signingKey.publicKey)
        try FileManager.default.createDirectory(atPath: root + "/tmp", withIntermediateDirectories: true)
        environment["STOL_TRUSTED_KEY"] = keysDirectory
        environment["TMPDIR"] = root + "/tmp"
    }

    /// Taxonomy, import and verify, trusting the test key.
    func startImportStack() throws {
        try trustTestKey()
        try start(.taxonomy)
        try start(.import)
        try start(.verify)
    }

    var referencePath: String { stateDirectory + "/databases/releases/unknown.sqlite" }
    var activationPath: String { stateDirectory + "/databases/activation.json" }
    var stagingDirectory: String { stateDirectory + "/databases/.staging" }

    /// Files left in the staging directory.
    var stagingFiles: [String] { (try? FileManager.default.contentsOfDirectory(atPath: stagingDirectory)) ?? [] }

    /// Writes `bytes` as a file under the test's directory and returns its path.
    func writeFile(_ bytes: [UInt8], name: String) throws -> String {
        let path = root + "/" + name
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return path
    }

    /// A `.stol` file of the harness's database, signed with the trusted key;
    /// `builtAt` changes its build time, `release` the release its provenance names (it
    /// installs as that release; else as "unknown"), `paddingMegabytes` adds a table of that size.
    func signedDatabase(name: String, builtAt: String? = nil, release: String? = nil, paddingMegabytes: Int = 0,
                        edit: ((Database) throws -> Void)? = nil) throws -> (stol: String, sqlite: [UInt8]) {
        let sqlitePath = root + "/\(name).sqlite"
        if paddingMegabytes > 0 {
            try StolCorpus.padded(database, megabytes: paddingMegabytes, to: sqlitePath)
        } else {
            try? FileManager.default.removeItem(atPath: sqlitePath)
            try FileManager.default.copyItem(atPath: database, toPath: sqlitePath)
        }
        if let builtAt {
            let queue = try DatabaseQueue(path: sqlitePath)
            try queue.write { try $0.execute(sql: "UPDATE schema_version SET applied_at = ?", arguments: [builtAt]) }
            try queue.close()
        }
        if let release {
            let queue = try DatabaseQueue(path: sqlitePath)
            try queue.write { try $0.execute(sql: "UPDATE provenance SET value = ? WHERE key = 'release'", arguments: [release]) }
            try queue.close()
        }
        if let edit {
            // As a source's next release would be: rows may go that others name (no foreign key checks).
            let queue = try DatabaseQueue(path: sqlitePath)
            try queue.writeWithoutTransaction { db in
                try db.execute(sql: "PRAGMA foreign_keys = OFF")
                try db.inTransaction { try edit(db); return .commit }
            }
            try queue.close()
        }
        let sqlite = try [UInt8](Data(contentsOf: URL(fileURLWithPath: sqlitePath)))
        return (try writeFile(StolCorpus.sign(sqlite, key: Self.signingKey), name: name + ".stol"), sqlite)
    }

    /// Every file under the state directory with the SHA-256 of its bytes (directories
    /// as `<dir>`): equal snapshots mean nothing was added, removed or changed.
    func stateSnapshot() -> [String: String] {
        var snapshot: [String: String] = [:]
        let base = URL(fileURLWithPath: stateDirectory)
        guard let walker = FileManager.default.enumerator(atPath: stateDirectory) else { return [:] }
        for case let relative as String in walker {
            let path = base.appendingPathComponent(relative).path
            var isDirectory: ObjCBool = false
            _ = FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory)
            snapshot[relative] = isDirectory.boolValue ? "<dir>"
                : (FileManager.default.contents(atPath: path).map { SHA256.hash([UInt8]($0)).hexString } ?? "<unreadable>")
        }
        return snapshot
    }

    /// The verifier processes running now: children of the `--accept` activator.
    func verifierPIDs() -> [pid_t] {
        guard let activator = pid(.verify),
              let text = try? String(contentsOfFile: "/proc/\(activator)/task/\(activator)/children", encoding: .utf8) else {
            return []
        }
        return text.split(separator: " ").compactMap { pid_t($0) }
    }

    /// Starts the real client without waiting for it (output to files in `directory`).
    func startClient(_ arguments: [String], directory: String) throws -> ChildProcess {
        try ChildProcess.spawn(Self.binDirectory + "/stol-client", arguments,
                               environment: ["STOL_RUNTIME_DIR": runtimeDirectory],
                               stdout: .file(directory + "/out"), stderr: .file(directory + "/err"))
    }

    /// The `import_*` status as JSON.
    func importStatus() throws -> [String: Any] {
        let result = try client(["db", "status", "--json"])
        guard result.status == 0 else { throw TestSupportError("db status failed: \(result.stderr)") }
        return (try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]) ?? [:]
    }

    /// The error code name a `--json` client printed (on standard error), if any.
    static func errorCode(_ result: Result) -> String? {
        guard let line = result.stderr.split(separator: "\n").last,
              let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
              let error = object["error"] as? [String: Any] else { return nil }
        return error["code"] as? String
    }
}


/// A client asking `taxonomy.sock` for the lion in a loop on its own thread, one
/// request at a time on one connection, recording every answer's database and
/// every error: proof that the server answered throughout what a test did.
final class TaxonomyProbe: @unchecked Sendable {
    private let lock = NSLock()
    private var kindsSeen: [Stol_V1_DatabaseKind] = []
    private var fingerprintsSeen: Set<String> = []
    private var releasesSeen: [String] = []
    private var errorsSeen: [String] = []
    private var stopped = false
    private let finished = DispatchSemaphore(value: 0)

    /// - Parameter release: the release every request pins (empty: the default's answers).
    init(socket path: String, release: String = "") {
        Thread { [self] in
            defer { finished.signal() }
            do {
                let socket = try FrameSocket.connect(path: path)
                var id: UInt64 = 0
                while !locked({ stopped }) {
                    id += 1
                    var request = Stol_V1_TaxonomyRequest()
                    request.id = id
                    request.release = release
                    var get = Stol_V1_GetTaxonRequest()
                    get.taxonID = 9689
                    request.getTaxon = get
                    try socket.send(request)
                    record(try socket.receive(Stol_V1_TaxonomyResponse.self).message)
                }
            } catch {
                locked { errorsSeen.append("transport: \(error)") }
            }
        }.start()
    }

    private func locked<T>(_ body: () -> T) -> T {
        lock.lock()
        defer { lock.unlock() }
        return body()
    }

    private func record(_ response: Stol_V1_TaxonomyResponse) {
        locked {
            if let error = response.protocolError { errorsSeen.append("\(error)") }
            if case .taxon(let taxon) = response.result, taxon.id != 9689 { errorsSeen.append("wrong taxon \(taxon.id)") }
            kindsSeen.append(response.database.kind)
            fingerprintsSeen.insert(response.database.fingerprint)
            releasesSeen.append(response.database.release)
        }
    }

    var last: Stol_V1_DatabaseKind? { locked { kindsSeen.last } }
    var lastRelease: String? { locked { releasesSeen.last } }
    /// The release each answer named, in order.
    var releases: [String] { locked { releasesSeen } }

    /// Stops the loop and returns what it saw.
    func stop() -> (kinds: [Stol_V1_DatabaseKind], fingerprints: Set<String>, errors: [String]) {
        locked { stopped = true }
        finished.wait()
        return locked { (kindsSeen, fingerprintsSeen, errorsSeen) }
    }
}
