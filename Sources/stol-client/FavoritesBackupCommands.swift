import ArgumentParser
import Foundation
import Glibc
import STOLClientKit
import STOLFileSystem
import STOLProtocol

// MARK: - A user's own export and import

struct FavImport: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import", abstract: "Add the favourites of a `fav export --format json` file to yours.",
        discussion: """
            Merges: a favourite you do not have is added with the time it was first saved; one \
            you have keeps its own time; nothing is ever removed. The whole file is checked first: \
            a damaged or foreign file (not made by `fav export --format json`) is refused with exit \
            65 and nothing changes; a file that cannot be read (missing, a directory, no permission) \
            exits 1. Ids the active release does not know are kept, as `fav add` \
            keeps them, and listed. Importing the same file twice adds nothing the second time.

            Examples:
              stol-client fav export --format json > favourites.json    # on the old machine
              stol-client fav import favourites.json                    # on the new one
            """)
    @OptionGroup var global: GlobalOptions
    @Argument(help: ArgumentHelp("The export to read (- for standard input).", valueName: "file"))
    var file: String

    /// Entries per request: well inside the 64 KiB request frame.
    static let chunk = 1000

    func run() throws {
        try global.run { () throws(ClientError) in
            let entries: [Stol_V1_FavoriteEntry]
            do throws(FavoritesExportDocument.ReadError) {
                entries = try FavoritesExportDocument.read(file)
            } catch .unreadable(let reason) {
                // A file that is not there or not readable is a failure (1), as the man page says; 65 is for a
                // file read but damaged or foreign (issue 34).
                throw .local("cannot read \(file): \(reason); nothing was imported")
            } catch {
                throw .badFile("\(file): \(error); nothing was imported")
            }
            let ids = Set(entries.map(\.taxonID))
            // Checked before anything is added, so that the limit never stops an import half-way.
            let current = Set(try favorites(global, .list(Stol_V1_ListFavorites()), as: Stol_V1_FavoriteList.self)
                .entries.map(\.taxonID))
            let total = current.union(ids).count
            guard total <= 50_000 else {
                throw .server(ProtocolError(.invalidRequest, "importing would make \(total) favourites, over the limit of 50000; "
                                            + "nothing was imported"))
            }
            var added: UInt64 = 0, present: UInt64 = 0
            for start in stride(from: 0, to: entries.count, by: Self.chunk) {
                let part = Array(entries[start..<min(start + Self.chunk, entries.count)])
                let merged = try favorites(global, .merge(.with { $0.entries = part }), as: Stol_V1_Merged.self)
                added += merged.added
                present += merged.alreadyPresent
            }
            // Only the report depends on the taxonomy service: the import is done.
            let known = try? global.taxonomy().taxa(ids: Array(ids), language: "en")
            let unknown = known.map { known in ids.filter { known[$0] == nil }.sorted() }
            if global.json {
                print(TextFormatter.json(ImportReport(added: added, alreadyPresent: present, unknownIDs: unknown)))
                return
            }
            print("imported \(file == "-" ? "standard input" : file): \(added) added, \(present) already present")
            if let unknown, !unknown.isEmpty {
                let shown = unknown.prefix(20).map(String.init).joined(separator: ", ")
                print("\(unknown.count) not in the active release (kept, as fav add keeps them): \(shown)"
                      + (unknown.count > 20 ? ", …" : ""))
            } else if unknown == nil {
                print("whether the active release knows every id could not be checked (the taxonomy service is not running)")
            }
        }
    }

    struct ImportReport: Encodable {
        let added: UInt64
        let alreadyPresent: UInt64
        /// Nil when the taxonomy service could not be asked.
        let unknownIDs: [Int64]?
        enum CodingKeys: String, CodingKey { case added, alreadyPresent = "already_present", unknownIDs = "unknown_ids" }
    }
}

// MARK: - The administrator's backup and restore

/// What `fav backup` writes beside the copies, and `fav restore` reads.
struct FavoritesBackupManifest: Codable {
    static let formatName = "stol-favorites-backup"
    struct User: Codable { let uid: UInt32; let file: String; let favorites: UInt64 }
    let format: String
    let version: Int
    let takenAt: String
    let users: [User]
    enum CodingKeys: String, CodingKey { case format, version, takenAt = "taken_at", users }
}

/// Backup and restore are root's: the daemon checks SO_PEERCRED; saying so here first spares a round trip.
private func requireRoot(_ what: String) throws(ClientError) {
    guard geteuid() == 0 else {
        throw .server(ProtocolError(.permissionDenied, "only root may \(what): it covers every user's favourites (try sudo)"))
    }
}

struct FavBackup: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "backup", abstract: "Back up every user's favourites while the service runs (root only).",
        discussion: """
            stol-favoritesd copies each user's file with SQLite's online backup API between two of \
            that user's requests, so every favourite acknowledged before the backup began is in \
            it, while users keep adding and removing. DIR (created 0700, and empty if it exists) \
            receives one <uid>.sqlite per user (the same two columns as the live file) and \
            manifest.json. `fav restore DIR` puts them back.

            Example: sudo stol-client fav backup /var/backups/stol/$(date +%F)
            """)
    @OptionGroup var global: GlobalOptions
    @Argument(help: ArgumentHelp("A new or empty directory to write the backup into.", valueName: "dir"))
    var directory: String

    func run() throws {
        try global.run { () throws(ClientError) in
            try requireRoot("back up favourites")
            try BackupFiles.prepareEmptyDirectory(directory)
            let client = FavoritesClient(service: "favorites", path: global.paths.favoritesSocket,
                                         timeout: global.answerTimeout(standard: .seconds(600)))
            let done = try client.ask(.with { $0.body = .backup(.init()) }, as: Stol_V1_BackupDone.self)
            defer {
                // The daemon's copy, then its `.backup` directory when no other backup runs
                // (rmdir(2) leaves a directory that is not empty): nothing stays behind.
                try? FileManager.default.removeItem(atPath: done.directory)
                rmdir(AtomicFile.directory(of: done.directory))
            }
            var users: [FavoritesBackupManifest.User] = []
            for user in done.users {
                let name = "\(user.uid).sqlite"
                try BackupFiles.copy(done.directory + "/" + user.fileName, to: directory + "/" + name, owner: nil)
                users.append(.init(uid: user.uid, file: name, favorites: user.favorites))
            }
            let manifest = FavoritesBackupManifest(format: FavoritesBackupManifest.formatName, version: 1,
                                                   takenAt: ISO8601DateFormatter().string(from: Date()), users: users)
            try BackupFiles.write(Data(TextFormatter.json(manifest).utf8), to: directory + "/manifest.json", owner: nil)
            let total = users.reduce(0) { $0 + $1.favorites }
            print(global.json ? TextFormatter.json(manifest)
                  : "backed up the favourites of \(users.count) users (\(total) favourites) into \(directory)")
        }
    }
}

struct FavRestore: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "restore", abstract: "Merge a `fav backup` back into the users' favourites (root only).",
        discussion: """
            For each <uid>.sqlite of DIR (or only --uid ones), the favourites that user lacks are \
            added with their original times; what users saved since the backup stays, and nothing \
            is removed. Every file is checked by stol-favoritesd first: if one is damaged or not a \
            favourites file, the command fails with exit 6 and nobody's favourites change. Runs \
            while the service serves users.
            """)
    @OptionGroup var global: GlobalOptions
    @Argument(help: ArgumentHelp("A directory written by `fav backup`.", valueName: "dir"))
    var directory: String
    @Option(name: .customLong("uid"), help: ArgumentHelp("Restore only this user (repeatable).", valueName: "uid"))
    var uids: [UInt32] = []

    func run() throws {
        try global.run { () throws(ClientError) in
            try requireRoot("restore favourites")
            let files = try BackupFiles.userFiles(in: directory).filter { uids.isEmpty || uids.contains($0.uid) }
            if let missing = uids.first(where: { uid in !files.contains { $0.uid == uid } }) {
                throw .usage("\(directory) holds no backup of uid \(missing)")
            }
            let client = FavoritesClient(service: "favorites", path: global.paths.favoritesSocket,
                                         timeout: global.answerTimeout(standard: .seconds(600)))
            let staging = try client.ask(.with { $0.body = .prepareRestore(.init()) }, as: Stol_V1_RestoreStaging.self).directory
            var owner = stat()
            guard stat(staging, &owner) == 0 else { throw .local("cannot reach the restore directory \(staging)") }
            // The daemon deletes each staged file; the directory goes when no other restore uses it.
            defer { rmdir(staging) }
            /// Stages one file (owned by the daemon's user) and asks for it; the daemon deletes it.
            func send(_ file: BackupFiles.UserFile, checkOnly: Bool) throws(ClientError) -> Stol_V1_Merged {
                let name = "\(file.uid)-\(getpid())-\(checkOnly ? "check" : "merge").sqlite"
                try BackupFiles.copy(file.path, to: staging + "/" + name, owner: (owner.st_uid, owner.st_gid))
                return try client.ask(.with {
                    $0.body = .restore(.with { $0.uid = file.uid; $0.fileName = name; $0.checkOnly = checkOnly })
                }, as: Stol_V1_Merged.self)
            }
            for file in files { _ = try send(file, checkOnly: true) }
            var results: [Stol_V1_Merged] = []
            for file in files { results.append(try send(file, checkOnly: false)) }
            if global.json {
                print("[" + results.map { TextFormatter.json($0) }.joined(separator: ",") + "]")
                return
            }
            for result in results {
                print("uid \(result.uid): \(result.added) added, \(result.alreadyPresent) already present")
            }
            print("restored \(results.count) users from \(directory)")
        }
    }
}

/// The files of a backup directory, written so that a crash leaves either the old
/// or the whole new file (``AtomicFile``), mode 0600.
enum BackupFiles {
    struct UserFile { let uid: UInt32; let path: String }

    static func prepareEmptyDirectory(_ path: String) throws(ClientError) {
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) {
            guard isDirectory.boolValue else { throw .usage("\(path) exists and is not a directory") }
            let entries = (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []
            guard entries.isEmpty else { throw .usage("\(path) is not empty: back up into a new or empty directory") }
            return
        }
        do {
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o700])
        } catch {
            throw .local("cannot create \(path): \((error as NSError).localizedDescription)")
        }
    }

    /// `<uid>.sqlite` files of `directory`, by ascending uid.
    static func userFiles(in directory: String) throws(ClientError) -> [UserFile] {
        let names: [String]
        do { names = try FileManager.default.contentsOfDirectory(atPath: directory) } catch {
            throw .usage("cannot read the backup directory \(directory): \((error as NSError).localizedDescription)")
        }
        let files = names.compactMap { name -> UserFile? in
            guard name.hasSuffix(".sqlite"), let uid = UInt32(name.dropLast(".sqlite".count)) else { return nil }
            return UserFile(uid: uid, path: directory + "/" + name)
        }.sorted { $0.uid < $1.uid }
        guard !files.isEmpty else { throw .badFile("\(directory) holds no <uid>.sqlite backup; nothing was restored") }
        return files
    }

    static func copy(_ source: String, to destination: String, owner: (uid_t, gid_t)?) throws(ClientError) {
        guard let data = FileManager.default.contents(atPath: source) else { throw .local("cannot read \(source)") }
        try write(data, to: destination, owner: owner)
    }

    /// Through the package's one atomic, durable writer (a temporary file, fsync, rename,
    /// fsync of the directory), handed to `owner` before it is published.
    static func write(_ data: Data, to path: String, owner: (uid_t, gid_t)?) throws(ClientError) {
        do throws(AtomicFileError) {
            let file = try AtomicFile(path: path)
            try file.append(Array(data))
            if let owner, fchown(file.fd, owner.0, owner.1) != 0 {
                throw AtomicFileError(path: path, operation: "hand over", errno: errno)
            }
            try file.commit(mode: 0o600)
        } catch {
            throw .local("cannot write \(path): \(error)")
        }
    }
}
