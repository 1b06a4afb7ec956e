import Foundation
import Logging
import STOLProtocol
import STOLRuntime
import Synchronization

/// Decides which database answers: the reference database when the activation
/// state asks for it and it is usable, otherwise the bundled one (saying why).
///
/// The import coordinator owns the activation state; this server only reads it.
/// Each request costs two `stat(2)` calls to notice a switch, which is far
/// cheaper than any query and needs no inotify plumbing.
public final class ActiveDatabaseProvider: Sendable {
    public struct Selection: Sendable {
        public let database: TaxonomyDatabase
        public let referencePresent: Bool
        public let referenceRequested: Bool
        /// Why the bundled DB serves although the reference was requested.
        public let fallbackReason: String?
    }

    private struct Key: Equatable {
        var activation: FileStat?
        var reference: FileStat?
    }

    private struct State {
        var key: Key?
        var selection: Selection?
    }

    public let bundledPath: String
    public let referencePath: String
    private let activationPath: String
    private let logger: Logger
    private let bundled: TaxonomyDatabase
    private let state = Mutex(State())

    /// Fails when the bundled database itself is unusable: without it there is
    /// nothing to fall back to, so the daemon must not start.
    public init(bundledPath: String, referencePath: String, activationPath: String, logger: Logger) throws(TaxonomyError) {
        self.bundledPath = bundledPath
        self.referencePath = referencePath
        self.activationPath = activationPath
        self.logger = logger
        self.bundled = try TaxonomyDatabase(path: bundledPath, kind: .bundled)
    }

    /// The database to answer the current request with.
    public func current() -> Selection {
        let key = Key(activation: FileStat(path: activationPath), reference: FileStat(path: referencePath))
        return state.withLock { state in
            if let selection = state.selection, state.key == key { return selection }
            let selection = select(key)
            if let previous = state.selection, previous.database.fingerprint != selection.database.fingerprint {
                logger.notice("active database switched", metadata: [
                    "kind": "\(selection.database.kind)", "fallback": "\(selection.fallbackReason ?? "none")"])
            }
            state.key = key
            state.selection = selection
            return selection
        }
    }

    private func select(_ key: Key) -> Selection {
        let requested = ActivationState.read(path: activationPath).useReferenceDB
        let present = key.reference != nil
        guard requested else {
            return Selection(database: bundled, referencePresent: present, referenceRequested: false, fallbackReason: nil)
        }
        guard present else {
            return Selection(database: bundled, referencePresent: false, referenceRequested: true,
                             fallbackReason: "the reference database is not installed")
        }
        do {
            let reference = try TaxonomyDatabase(path: referencePath, kind: .reference)
            return Selection(database: reference, referencePresent: true, referenceRequested: true, fallbackReason: nil)
        } catch {
            logger.error("reference database unusable; serving the bundled one", metadata: ["error": "\(error)"])
            return Selection(database: bundled, referencePresent: true, referenceRequested: true,
                             fallbackReason: "the reference database is unusable: \(error.protocolError.message)")
        }
    }
}
