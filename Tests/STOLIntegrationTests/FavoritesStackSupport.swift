import Foundation
import GRDB
import Glibc
import STOLProtocol
import STOLServer
import STOLTestFixtures
import STOLTransport
import XCTest

/// What the favourites scenarios need beyond ``StackHarness``: a crash instead
/// of a clean stop, a client at a real terminal, raw connections, the files.
extension StackHarness {
    /// `kill -9` of the daemon (not a clean stop: no drain, no checkpoint), then
    /// reaps it and removes its socket file, which a killed daemon leaves behind,
    /// so that `start` waits for the new daemon's socket rather than the stale one.
    @discardableResult
    func crash(_ daemon: Daemon) -> Int32? {
        guard let pid = pid(daemon) else { return nil }
        kill(pid, SIGKILL)
        let status = stop(daemon)  // SIGTERM to the dead process is harmless; this reaps it
        unlink(socketPath(daemon))
        return status
    }

    /// The favourites file of `uid` (the daemon runs as root here, so the test can read it).
    func favoritesFile(uid: UInt32) -> String {
        stateDirectory + "/favorites/\(uid).sqlite"
    }

    /// Runs the real client with a pseudo-terminal as standard input, as a person
    /// at a terminal would, and types `input` into it. Output still goes to files,
    /// so it can be read back whole.
    func clientOnTerminal(_ arguments: [String], input: String) throws -> Result {
        let master = PseudoTerminal.openMaster(O_RDWR | O_NOCTTY)
        guard master >= 0, PseudoTerminal.grant(master) == 0, PseudoTerminal.unlock(master) == 0,
              let name = PseudoTerminal.slaveName(master) else {
            throw TestSupportError("cannot open a pseudo-terminal: \(String(cString: strerror(errno)))")
        }
        defer { close(master) }
        let terminal = String(cString: name)
        // Held open by the test too, so the terminal exists before the client opens it.
        let held = open(terminal, O_RDWR | O_NOCTTY)
        defer { if held >= 0 { close(held) } }
        let bytes = Array(input.utf8)
        return try ChildProcess.run(Self.binDirectory + "/stol-client", arguments,
                                    environment: ["STOL_RUNTIME_DIR": runtimeDirectory], stdin: .readWrite(terminal),
                                    timeoutSeconds: 30) { _ in
            _ = bytes.withUnsafeBytes { write(master, $0.baseAddress, $0.count) }
        }
    }

    /// `stol-client fav …` as this test's user, or as `uid` through setpriv.
    func fav(_ arguments: [String], uid: UInt32? = nil) throws -> Result {
        try client(["fav"] + arguments, uid: uid)
    }
}

extension StackHarness.Result {
    /// Standard output parsed as one JSON object (empty when it is not one).
    var json: [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(stdout.utf8))) as? [String: Any] ?? [:]
    }

    /// With `--json`, a failure's error object: the last line of standard error.
    var jsonError: [String: Any]? {
        guard let line = stderr.split(separator: "\n").last else { return nil }
        return ((try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any])?["error"] as? [String: Any]
    }

    /// The `taxon_id`s of a `fav list --json` answer, in the printed order.
    var listedIDs: [Int64] {
        (json["entries"] as? [[String: Any]] ?? []).compactMap { ($0["taxon_id"] as? NSNumber)?.int64Value }
    }
}

/// One raw framed connection to `favorites.sock`, for what the client cannot
/// send (ids it refuses, broken frames, unknown fields) and for load. The daemon
/// sees the test process's own uid.
final class FavoritesConnection {
    let socket: FrameSocket
    private var nextID: UInt64 = 1

    init(path: String) throws {
        socket = try FrameSocket.connect(path: path)
        socket.setReceiveTimeout(.seconds(20))
    }

    /// Sends one request and returns its answer.
    func call(_ body: Stol_V1_FavoritesRequest.OneOf_Body?) throws -> Stol_V1_FavoritesResponse {
        var request = Stol_V1_FavoritesRequest()
        request.id = nextID
        nextID += 1
        request.body = body
        try socket.send(request)
        return try socket.receive(Stol_V1_FavoritesResponse.self).message
    }

    func receive() throws -> Stol_V1_FavoritesResponse {
        try socket.receive(Stol_V1_FavoritesResponse.self).message
    }

    func listedIDs() throws -> [Int64] {
        try call(.list(Stol_V1_ListFavorites())).list.entries.map(\.taxonID)
    }

    func count() throws -> UInt64 {
        try call(.count(Stol_V1_CountFavorites())).count.count
    }

    static func add(_ id: Int64) -> Stol_V1_FavoritesRequest.OneOf_Body { .add(.with { $0.taxonID = id }) }
    static func remove(_ id: Int64) -> Stol_V1_FavoritesRequest.OneOf_Body { .remove(.with { $0.taxonID = id }) }
    static func toggle(_ id: Int64) -> Stol_V1_FavoritesRequest.OneOf_Body { .toggle(.with { $0.taxonID = id }) }
    static func isFavorite(_ id: Int64) -> Stol_V1_FavoritesRequest.OneOf_Body { .isFavorite(.with { $0.taxonID = id }) }
}

/// Reads a favourites file with a connection of its own (SQLite's own view of it).
func inspectFavorites<T>(_ path: String, _ body: (Database) throws -> T) throws -> T {
    var configuration = Configuration()
    configuration.readonly = true
    let queue = try DatabaseQueue(path: path, configuration: configuration)
    defer { try? queue.close() }
    return try queue.read(body)
}

/// glibc's pseudo-terminal calls. Their declarations sit behind `_XOPEN_SOURCE`,
/// which the Glibc module does not define, so they are looked up by name.
private enum PseudoTerminal {
    private static func function<T>(_ name: String, as type: T.Type) -> T {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), name) else { fatalError("libc lacks \(name)") }
        return unsafeBitCast(symbol, to: type)
    }

    static let openMaster = function("posix_openpt", as: (@convention(c) (Int32) -> Int32).self)
    static let grant = function("grantpt", as: (@convention(c) (Int32) -> Int32).self)
    static let unlock = function("unlockpt", as: (@convention(c) (Int32) -> Int32).self)
    static let slaveName = function("ptsname", as: (@convention(c) (Int32) -> UnsafeMutablePointer<CChar>?).self)
}
