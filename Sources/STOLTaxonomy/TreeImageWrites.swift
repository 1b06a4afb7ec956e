import Foundation
import Logging
import STOLModel
import STOLTransport

/// The tree images being written (``TreeImageCache``), each on a thread of its own
/// as soon as its tree is built: a graceful stop waits for them, within a bound
/// (``finish(within:)``), so that a daemon stopped right after a first start (a
/// one-off job, a restart, an idle exit) still leaves the image for the next start.
public final class TreeImageWrites: Sendable {
    public static let shared = TreeImageWrites()
    private let group = DispatchGroup()

    /// One set of writes (the daemon's is ``shared``; tests make their own).
    init() {}

    /// Writes `tree`'s image on a thread of its own; a failure is logged (the next start builds).
    func start(_ image: TreeImageCache.Entry, _ tree: TaxonomyTree, logger: Logger) {
        group.enter()
        let group = self.group
        let thread = Thread(named: "stol.tree-image") {
            defer { group.leave() }
            do {
                try image.store(tree)
            } catch {
                logger.warning("cannot write the tree image", metadata: ["path": "\(image.path)", "error": "\(error)"])
            }
        }
        thread.start()
    }

    /// Returns once every write started has ended, or after `timeout` (a write that
    /// does not end in time is left: ``AtomicFile`` publishes nothing unfinished).
    public func finish(within timeout: Duration) async {
        let group = self.group
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            DispatchQueue.global().async {
                _ = group.wait(timeout: .now() + .milliseconds(Int(timeout.inSeconds * 1000)))
                continuation.resume()
            }
        }
    }

    /// Blocks until every write started has ended (tests).
    func waitUntilWritten() {
        group.wait()
    }
}
