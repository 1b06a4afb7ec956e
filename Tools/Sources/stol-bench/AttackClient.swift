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
        /// The heaviest legal requests, each answer read, in a loop: closest
        /// relatives on NCBI's tree (n = 100), lineage batches of 1000 ids on NCBI's
        /// tree, a 27,146-node subtree, 1000 name lookups of a name 6,433 nodes carry.
        case heavy
    }

    @Option(help: "The daemon's socket.") var socket: String
    @Option(help: "What to ask for.") var kind: Kind
    @Option(help: "The taxon whose children are asked for.") var taxon: Int64 = 0
    @Option(help: "Connections to pipeline on.") var connections: Int = 6
    @Option(help: "Seconds to keep attacking.") var seconds: Double = 15
    @Option(help: "Favourites to add first (kind favorites).") var fill: Int = 0

    func run() throws {
        signal(SIGPIPE, SIG_IGN)  // a cut connection is an EPIPE to handle, not the end
        if kind == .heavy {
            try heavy()
            return
        }
        let body: [UInt8]
        switch kind {
        case .heavy:
            return
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

    /// Loops on the heaviest requests the protocol allows, reading every answer
    /// (a user with a big legitimate job, not a slow reader), on each connection.
    private func heavy() throws {
        // Ids to ask about: the children of a large genus on NCBI's tree (species and strains).
        let client = TaxonomyClient(service: "taxonomy", path: socket)
        var ids: [Int64] = []
        var offset: UInt32 = 0
        while ids.count < 1000 {
            var page = Stol_V1_TaxonomyRequest()
            page.children = .with {
                $0.taxonID = taxon; $0.offset = offset; $0.limit = ProtocolLimits.maximumPageSize; $0.ranks = .all
            }
            guard case .children(let children)? = try client.call(page).result, !children.taxa.isEmpty else { break }
            ids += children.taxa.map(\.id)
            offset += UInt32(children.taxa.count)
        }
        let species = ids.first ?? taxon
        var requests: [Stol_V1_TaxonomyRequest] = []
        requests.append(.with { $0.relatives = .with { $0.taxonID = species; $0.n = 100; $0.ranks = .all } })
        requests.append(.with { $0.lineageBatch = .with { $0.queries = ids.prefix(1000).map(String.init); $0.ranks = .all } })
        requests.append(.with { $0.subtree = .with { $0.taxonID = 85011; $0.maxTaxa = 50_000; $0.ranks = .all } })
        requests.append(.with { $0.nameLookup = .with { $0.names = Array(repeating: "environmental samples", count: 1000) } })
        let deadline = TaxonomyBench.now() + seconds
        let answered = Mutex(0), failed = Mutex(0)
        FileHandle.standardOutput.write(Data("started\n".utf8))
        onThreads(connections) { [socket, requests] thread in
            let connection = TaxonomyClient(service: "taxonomy", path: socket)
            var index = thread
            while TaxonomyBench.now() < deadline {
                let response = try? connection.call(requests[index % requests.count])
                index += 1
                if response == nil { failed.withLock { $0 += 1 } } else { answered.withLock { $0 += 1 } }
            }
        }
        print("answered \(answered.withLock { $0 }) failed \(failed.withLock { $0 })")
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
