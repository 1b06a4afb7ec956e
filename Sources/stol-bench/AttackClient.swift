import ArgumentParser
import Foundation
import Glibc
import STOLClientKit
import STOLProtocol
import STOLTestFixtures
import SwiftProtobuf
import Synchronization

/// `stol-bench attacker`: a hostile user for `stol-bench attack`. It pipelines
/// requests for large answers on several connections and never reads an answer;
/// when the daemon cuts a connection (it stopped reading and then closed the
/// slow reader), it connects again, for as long as it runs.
struct AttackClient: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "attacker", abstract: "Pipeline large answers without reading (started by stol-bench attack).",
        shouldDisplay: false)

    enum Kind: String, ExpressibleByArgument {
        /// 500 children of a large genus per answer (about 100 KB).
        case children
        /// The attacker's whole favourites list per answer (after --fill).
        case favorites
    }

    @Option(help: "The daemon's socket.") var socket: String
    @Option(help: "What to ask for.") var kind: Kind
    @Option(help: "The taxon whose children are asked for.") var taxon: Int64 = 0
    @Option(help: "Connections to pipeline on.") var connections: Int = 6
    @Option(help: "Seconds to keep attacking.") var seconds: Double = 15
    @Option(help: "Favourites to add first (kind favorites).") var fill: Int = 0

    func run() throws {
        signal(SIGPIPE, SIG_IGN)  // a cut connection is an EPIPE to handle, not the end
        let body: [UInt8]
        switch kind {
        case .children:
            var request = Stol_V1_TaxonomyRequest()
            request.children = .with { $0.taxonID = taxon; $0.limit = ProtocolLimits.maximumPageSize }
            body = try request.serializedBytes()
        case .favorites:
            let client = FavoritesClient(service: "favorites", path: socket)
            for id in 0..<Int64(fill) {
                var add = Stol_V1_FavoritesRequest()
                add.add = .with { $0.taxonID = 1_000_000 + id }
                _ = try client.call(add)
            }
            var request = Stol_V1_FavoritesRequest()
            request.list = Stol_V1_ListFavorites()
            body = try request.serializedBytes()
        }
        let frame = withUnsafeBytes(of: UInt32(body.count).bigEndian) { Array($0) } + body
        let frames = Array([[UInt8]](repeating: frame, count: 16).joined())
        let frameBytes = frame.count
        let deadline = TaxonomyBench.now() + seconds
        let sent = Mutex(0), reconnects = Mutex(0)
        FileHandle.standardOutput.write(Data("started\n".utf8))
        onThreads(connections) { [socket] _ in
            var descriptor: Int32 = -1
            while TaxonomyBench.now() < deadline {
                if descriptor < 0 {
                    descriptor = Self.connect(socket)
                    if descriptor < 0 { usleep(10_000); continue }
                }
                // Blocks once the daemon stops reading; SO_SNDTIMEO wakes it to check the time.
                let written = frames.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
                if written > 0 {
                    sent.withLock { $0 += written / frameBytes }
                } else if written < 0 && errno != EAGAIN && errno != EINTR {
                    close(descriptor)  // cut by the daemon: come back
                    descriptor = -1
                    reconnects.withLock { $0 += 1 }
                }
            }
            if descriptor >= 0 { close(descriptor) }
        }
        print("sent \(sent.withLock { $0 }) reconnects \(reconnects.withLock { $0 })")
    }

    static func connect(_ path: String) -> Int32 {
        let descriptor = Glibc.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { return -1 }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            let bytes = Array(path.utf8.prefix(raw.count - 1))
            raw.copyBytes(from: bytes + [0])
        }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard connected == 0 else {
            close(descriptor)
            return -1
        }
        var timeout = timeval(tv_sec: 0, tv_usec: 200_000)
        setsockopt(descriptor, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        return descriptor
    }
}
