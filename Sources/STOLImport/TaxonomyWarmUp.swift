import Foundation
import Logging
import STOLProtocol
import STOLTransport

/// After a release is installed, the taxonomy server is asked once for its `status`
/// pinned to it, on a thread of its own: the server (socket-activated if it was not
/// running) opens the release, builds its tree and writes the tree's image, so that
/// the release's first real start (after an activation and an idle exit, a restart)
/// reads its tree in a fraction of a second instead of building it for 2–3 s.
///
/// Best effort and never in the import's way: the import has answered already; a
/// server that cannot be reached or does not answer within ``timeout`` is logged at
/// debug and left (its first start then builds the tree, as before).
struct TaxonomyWarmUp: Sendable {
    let socketPath: String
    var timeout: Duration = .seconds(30)

    /// Starts the request; returns at once.
    func start(release: String, logger: Logger) {
        let socketPath = self.socketPath, timeout = self.timeout
        let thread = Thread(named: "stol.warm-up") {
            do throws(TransportError) {
                let socket = try FrameSocket.connect(path: socketPath)
                defer { socket.close() }
                socket.setSendTimeout(timeout)
                socket.setReceiveTimeout(timeout)
                var request = Stol_V1_TaxonomyRequest()
                request.id = 1
                request.release = release
                request.status = Stol_V1_StatusRequest()
                try socket.send(request)
                // The answer comes once the release is open; its tree is built after, in the server.
                _ = try socket.receive(Stol_V1_TaxonomyResponse.self)
                logger.debug("taxonomy server opened the installed release", metadata: ["release": "\(release)"])
            } catch {
                logger.debug("taxonomy server not warmed up", metadata: ["release": "\(release)", "error": "\(error)"])
            }
        }
        thread.start()
    }
}
