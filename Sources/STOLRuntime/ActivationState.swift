import Foundation
import Glibc
import STOLFileSystem

/// The activation state: whether the reference database should serve.
///
/// Stored as `{"useReferenceDB": true}` in `databases/activation.json`. Only the
/// import coordinator writes it (atomically: temp file, fsync, rename, fsync of
/// the directory); the taxonomy server only reads it. Missing or unreadable means
/// "bundled", the safe default of seeds/000 §2.2.
public struct ActivationState: Codable, Equatable, Sendable {
    public var useReferenceDB: Bool

    public init(useReferenceDB: Bool) {
        self.useReferenceDB = useReferenceDB
    }

    public static func read(path: String) -> ActivationState {
        guard let data = FileManager.default.contents(atPath: path),
              let state = try? JSONDecoder().decode(ActivationState.self, from: data) else {
            return ActivationState(useReferenceDB: false)
        }
        return state
    }

    /// Replaces the state file atomically and durably.
    public func write(path: String) throws {
        let data = try JSONEncoder().encode(self)
        try AtomicFile.replace(path: path, with: Array(data))
    }
}
