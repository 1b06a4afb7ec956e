import Foundation
import Glibc

/// The administrator's backup and restore of every user's favourites while the
/// service runs (root only; `stol-client fav backup DIR` and `fav restore DIR`).
///
/// The daemon's sandbox lets it write only its own state directory, and the
/// client must not need SQLite, so the work is split as OpenSSH splits it: the
/// daemon does what needs the files (SQLite's online backup into a new directory
/// it owns; reading and checking a staged file, then merging it) and root's
/// client does what needs root (copying the backups out to `DIR`, placing a
/// file to restore into ``restoreStaging``).
///
/// **Consistency.** Each user's copy is made by their ``FavoritesStore`` actor,
/// so it lies between two of that user's operations: every favourite
/// acknowledged before the backup began is in it, and none is half-written.
/// **Restore merges**: it adds the backed-up favourites a user lacks, with their
/// original times, and never removes what the user saved since.
public struct FavoritesBackup: Sendable {
    public struct UserCopy: Sendable, Equatable {
        public let uid: UInt32
        public let fileName: String
        public let favorites: Int
    }

    /// A backup directory older than this is a client's leftover (it died
    /// before removing it) and is deleted by the next backup.
    public static let staleAfter: TimeInterval = 3600

    public let registry: FavoritesRegistry

    public init(registry: FavoritesRegistry) {
        self.registry = registry
    }

    /// Where backups are made: `<favorites>/.backup/<random>/`.
    public var backupRoot: String { registry.directory + "/.backup" }
    /// Where root places a file to restore.
    public var restoreStaging: String { registry.directory + "/.restore" }

    /// Copies every user's file into a new directory; returns it with one entry per
    /// user who has a file, by ascending uid.
    public func backupAll() async throws(FavoritesError) -> (directory: String, users: [UserCopy]) {
        let directory = try makeBackupDirectory()
        var users: [UserCopy] = []
        for uid in try usersWithFiles() {
            let name = "\(uid).sqlite"
            let copied = try await registry.withStore(for: uid) { store throws(FavoritesError) in
                try await store.backup(to: directory + "/" + name)
            }
            if let copied { users.append(UserCopy(uid: uid, fileName: name, favorites: copied)) }
        }
        return (directory, users)
    }

    /// The staging directory, created 0700 when absent.
    public func prepareRestore() throws(FavoritesError) -> String {
        try Self.makeDirectory(restoreStaging)
        return restoreStaging
    }

    /// Checks the staged `fileName` and merges its favourites into `uid`'s (with
    /// `checkOnly`, only checks it: nil); the staged file is deleted whatever happens.
    public func restore(uid: UInt32, fileName: String,
                        checkOnly: Bool = false) async throws(FavoritesError) -> (added: Int, alreadyPresent: Int)? {
        guard !fileName.isEmpty, !fileName.contains("/"), fileName != ".", fileName != ".." else {
            throw .invalidBackup("the staged name \"\(fileName.prefix(80))\" is not a plain file name")
        }
        let path = restoreStaging + "/" + fileName
        defer { for suffix in ["", "-journal", "-wal", "-shm"] { unlink(path + suffix) } }
        var status = stat()
        guard lstat(path, &status) == 0, status.st_mode & S_IFMT == S_IFREG else {
            throw .invalidBackup("nothing regular is staged as \(fileName)")
        }
        let entries = try FavoritesBackupFile.entries(at: path)
        if checkOnly { return nil }
        return try await registry.withStore(for: uid) { store throws(FavoritesError) in try await store.merge(entries) }
    }

    // MARK: - Files

    /// The uids of the `<uid>.sqlite` files, ascending.
    func usersWithFiles() throws(FavoritesError) -> [UInt32] {
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: registry.directory)
        } catch CocoaError.fileReadNoSuchFile {
            return []
        } catch {
            throw .storageFailure("cannot list the favourites directory")
        }
        return names.compactMap { name -> UInt32? in
            guard name.hasSuffix(".sqlite") else { return nil }
            let stem = name.dropLast(".sqlite".count)
            guard !stem.isEmpty, stem.allSatisfy(\.isASCII), stem.allSatisfy(\.isNumber) else { return nil }
            return UInt32(stem)
        }.sorted()
    }

    /// A new directory under ``backupRoot``; leftovers older than ``staleAfter`` go first.
    private func makeBackupDirectory() throws(FavoritesError) -> String {
        try Self.makeDirectory(registry.directory)
        try Self.makeDirectory(backupRoot)
        let cutoff = Date().addingTimeInterval(-Self.staleAfter)
        for name in (try? FileManager.default.contentsOfDirectory(atPath: backupRoot)) ?? [] {
            let path = backupRoot + "/" + name
            if let modified = (try? FileManager.default.attributesOfItem(atPath: path))?[.modificationDate] as? Date,
               modified < cutoff {
                try? FileManager.default.removeItem(atPath: path)
            }
        }
        var template = Array((backupRoot + "/XXXXXX").utf8CString)
        guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            throw .storageFailure("cannot create a backup directory: \(String(cString: strerror(errno)))")
        }
        return String(cString: made)
    }

    private static func makeDirectory(_ path: String) throws(FavoritesError) {
        if mkdir(path, 0o700) != 0 && errno != EEXIST {
            throw .storageFailure("cannot create a directory for favourites: \(String(cString: strerror(errno)))")
        }
    }
}
