import Foundation

/// The activation state: which database answers requests that name no release.
///
/// Stored as `{"useReferenceDB": true, "defaultRelease": "2024.9.7"}` in
/// `databases/activation.json`. Only the import coordinator writes it (atomically:
/// temp file, fsync, rename, fsync of the directory); the taxonomy server only
/// reads it (the writing half lives with the coordinator, in STOLImport). Missing
/// or unreadable means "bundled": a broken or absent state file must never make
/// the server serve a database nobody activated.
///
/// `defaultRelease` is absent in files written before releases were kept side by
/// side: the reference database then is the legacy `reference.sqlite`.
public struct ActivationState: Codable, Equatable, Sendable {
    public var useReferenceDB: Bool
    /// The installed release that serves by default while `useReferenceDB`; it stays
    /// recorded while the bundled database serves (deactivate), so that activating
    /// again without a name brings it back.
    public var defaultRelease: String?

    public init(useReferenceDB: Bool, defaultRelease: String? = nil) {
        self.useReferenceDB = useReferenceDB
        self.defaultRelease = defaultRelease
    }

    public static func read(path: String) -> ActivationState {
        guard let data = FileManager.default.contents(atPath: path),
              var state = try? JSONDecoder().decode(ActivationState.self, from: data) else {
            return ActivationState(useReferenceDB: false)
        }
        // A name that could leave the releases directory is no name.
        if let release = state.defaultRelease, !ReleaseName.isValid(release) { state.defaultRelease = nil }
        return state
    }

    /// The installed release that answers by default; nil when the bundled database does.
    public var servingRelease: String? { useReferenceDB ? defaultRelease : nil }
}
