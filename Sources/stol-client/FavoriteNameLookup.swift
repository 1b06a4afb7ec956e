import Glibc
import STOLClientKit
import STOLProtocol
import STOLTransport

/// Fetches the taxa behind many favourite ids from the taxonomy server, pipelined.
///
/// The favourites daemon keeps ids only (docs/design/favourites.md §11: names are
/// the client's business), so listing and exporting ask `stol-taxonomyd` for each id with
/// its ordinary `get_taxon`. One request per round trip would make a list of
/// 10,000 favourites wait on 10,000 round trips; the protocol allows pipelining on
/// `taxonomy.sock` (PROTOCOL.md §1.3), so requests go out in batches on one
/// connection and answers are matched by their `id`.
struct FavoriteNameLookup {
    /// Requests in flight at once: their answers (a few hundred bytes each) stay
    /// well inside the socket buffers, so neither side ever blocks on the other.
    static let batchSize = 128

    let socketPath: String
    let language: String

    /// The taxa the active database knows, by id; an id missing from the answer is
    /// "not found in the active database" (never an error: the favourite is kept).
    func taxa(for ids: [Int64]) throws(ClientError) -> [Int64: Stol_V1_Taxon] {
        guard !ids.isEmpty else { return [:] }
        let socket = try connect()
        defer { socket.close() }
        var found: [Int64: Stol_V1_Taxon] = [:]
        let unique = Array(Set(ids))
        var start = 0
        while start < unique.count {
            let batch = unique[start..<min(start + Self.batchSize, unique.count)]
            do {
                for (offset, id) in batch.enumerated() {
                    var request = Stol_V1_TaxonomyRequest()
                    request.id = UInt64(start + offset + 1)
                    request.getTaxon = .with { $0.taxonID = id; $0.language = language }
                    try socket.send(request)
                }
                for _ in batch {
                    let response = try socket.receive(Stol_V1_TaxonomyResponse.self).message
                    if case .taxon(let taxon) = response.result {
                        found[taxon.id] = taxon
                    } else if let error = response.protocolError, error.code != .notFound {
                        // INVALID_REQUEST for an id the taxonomy server does not accept
                        // (e.g. ≤ 0 from an old file) means "not found" here too.
                        if error.code != .invalidRequest { throw ClientError.server(error) }
                    }
                }
            } catch let error as ClientError {
                throw error
            } catch let error as TransportError {
                throw .transport(service: "taxonomy", error)
            } catch {
                throw .local("\(error)")
            }
            start += batch.count
        }
        return found
    }

    private func connect() throws(ClientError) -> FrameSocket {
        do {
            let socket = try FrameSocket.connect(path: socketPath)
            socket.setReceiveTimeout(TaxonomyClient.defaultTimeout)  // a stopped server never hangs `fav list`
            socket.setSendTimeout(TaxonomyClient.defaultTimeout)
            return socket
        } catch {
            if case .connect(_, let code) = error {
                if code == EACCES || code == EPERM { throw .socketPermissionDenied(service: "taxonomy", path: socketPath) }
                throw .serviceNotRunning(service: "taxonomy", path: socketPath)
            }
            throw .transport(service: "taxonomy", error)
        }
    }
}
