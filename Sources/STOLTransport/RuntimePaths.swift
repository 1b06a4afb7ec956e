import Foundation

/// Where STOL's files live: the FHS paths of an installed system, overridable for
/// development and tests (docs/design/architecture.md §4). Every daemon and the client derive
/// their paths here, so one environment variable moves the whole stack.
public struct RuntimePaths: Sendable, Equatable {
    /// Sockets (`STOL_RUNTIME_DIR`, default `/run/stol`).
    public var runtimeDirectory: String
    /// Databases and favourites (`STOL_STATE_DIR`, default `/var/lib/stol`).
    public var stateDirectory: String
    /// The read-only bundled taxonomy (`STOL_BUNDLED_DB`).
    public var bundledDatabase: String

    public static let installedBundledDatabase = "/usr/share/stol/bundled.sqlite"

    public init(runtimeDirectory: String, stateDirectory: String, bundledDatabase: String) {
        self.runtimeDirectory = runtimeDirectory
        self.stateDirectory = stateDirectory
        self.bundledDatabase = bundledDatabase
    }

    /// Paths from the environment, falling back to the installed locations.
    public static func fromEnvironment(_ environment: [String: String] = ProcessInfo.processInfo.environment) -> RuntimePaths {
        RuntimePaths(
            runtimeDirectory: environment["STOL_RUNTIME_DIR"].nonEmpty ?? "/run/stol",
            stateDirectory: environment["STOL_STATE_DIR"].nonEmpty ?? "/var/lib/stol",
            bundledDatabase: environment["STOL_BUNDLED_DB"].nonEmpty ?? installedBundledDatabase
        )
    }

    /// A daemon's socket: `<runtime-dir>/<name>.sock` (the name is its `FileDescriptorName=`).
    public func socket(named name: String) -> String { runtimeDirectory + "/" + name + ".sock" }
    public var taxonomySocket: String { socket(named: "taxonomy") }
    public var favoritesSocket: String { socket(named: "favorites") }
    public var importSocket: String { socket(named: "import") }
    public var verifySocket: String { socket(named: "verify") }

    public var databasesDirectory: String { stateDirectory + "/databases" }
    /// The one reference database of installations before releases were kept side by
    /// side; `stol-importd` moves it into ``releasesDirectory`` when it starts.
    public var legacyReferenceDatabase: String { databasesDirectory + "/reference.sqlite" }
    /// The installed releases, one file each: `releases/<release>.sqlite`.
    public var releasesDirectory: String { databasesDirectory + "/releases" }
    /// The file of an installed release (`name` is a checked release name, ``ReleaseName``).
    public func releaseDatabase(_ name: String) -> String { releasesDirectory + "/" + name + ".sqlite" }
    /// The activation state file (`{"useReferenceDB": true, "defaultRelease": "2024.9.7"}`), replaced atomically.
    public var activationState: String { databasesDirectory + "/activation.json" }
    public var stagingDirectory: String { databasesDirectory + "/.staging" }
    public var favoritesDirectory: String { stateDirectory + "/favorites" }
}

extension Optional where Wrapped == String {
    fileprivate var nonEmpty: String? {
        guard let self, !self.isEmpty else { return nil }
        return self
    }
}
