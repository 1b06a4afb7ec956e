import Foundation

/// The activation state: whether the reference database should serve.
///
/// Stored as `{"useReferenceDB": true}` in `databases/activation.json`. Only the
/// import coordinator writes it (atomically: temp file, fsync, rename, fsync of
/// the directory); the taxonomy server only reads it (the writing half lives with the coordinator,
/// in STOLImport). Missing or unreadable means "bundled": a broken or absent state
/// file must never make the server serve a database nobody activated.
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
}
