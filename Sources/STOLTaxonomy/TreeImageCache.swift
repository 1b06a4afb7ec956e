import Foundation
import Glibc
import STOLFileSystem
import STOLModel

/// Where the taxonomy server keeps the image of each database's tree
/// (``TaxonomyTree/writeImage(key:_:)``), so that every start after the first
/// reads the tree (a fraction of a second for NCBI's 2.6 M nodes) instead of
/// building it from the database (2 s quiet, 5–6 s under load): under socket
/// activation each first request after an idle exit waited for that build.
///
/// The directory is the server's own (systemd's `CacheDirectory=`, handed over as
/// `$CACHE_DIRECTORY`; a private stack's `~/.cache/stol/taxonomy`), mode 0700:
/// the server is the only writer and the only reader of its images, so an image
/// is trusted as far as the server trusts itself, and still checked on reading
/// (``TaxonomyTree/readImage(from:expectedKey:)``). A signed database is never
/// touched: the image is derived from it, one file per database path, and names
/// the database's path and fingerprint (device, inode, size, modification time),
/// so a release replaced under the same name is built and imaged again.
///
/// Without a directory (tests, a server started by hand) every start builds, as
/// before images existed.
public struct TreeImageCache: Sendable {
    public let directory: String

    public init(directory: String) {
        self.directory = directory
    }

    /// `$CACHE_DIRECTORY` (the first, when systemd lists several), nil when unset.
    public static func fromEnvironment(_ environment: [String: String] = ProcessInfo.processInfo.environment) -> TreeImageCache? {
        guard let value = environment["CACHE_DIRECTORY"], let first = value.split(separator: ":").first, first.hasPrefix("/") else {
            return nil
        }
        return TreeImageCache(directory: String(first))
    }

    /// The image of one database file as it was opened: the server's own
    /// (``TreeImageCache/entry(databasePath:fingerprint:)``) or the one the pipeline
    /// wrote beside the database (``ShippedTreeImage``).
    public struct Entry: Sendable {
        public let path: String
        /// What the image must name: the database's path and fingerprint (the server's),
        /// its build and SQLite header (one shipped beside it).
        public let key: String
        /// Written by the pipeline beside the database, not by the server.
        public var shipped = false
    }

    public func entry(databasePath: String, fingerprint: String) -> Entry {
        // FNV-1a of the path: a short, stable file name; the key inside tells two paths apart.
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in databasePath.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        let name = String(hash, radix: 16)
        return Entry(path: "\(directory)/\(String(repeating: "0", count: 16 - name.count))\(name).tree",
                     key: "\(databasePath)\n\(fingerprint)")
    }
}

extension TreeImageCache.Entry {
    /// Why there is no tree from the image: absent, or refused as ``TaxonomyTree/ImageError`` says.
    public enum Miss: Error, Equatable {
        case absent
        case refused(TaxonomyTree.ImageError)
    }

    /// The tree of the image, when there is one of this database as it was opened.
    public func load() -> Result<TaxonomyTree, Miss> {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return .failure(.absent) }
        defer { close(descriptor) }
        do throws(TaxonomyTree.ImageError) {
            return .success(try TaxonomyTree.readImage(from: descriptor, expectedKey: key))
        } catch {
            return .failure(.refused(error))
        }
    }

    /// Writes the image of `tree` (atomically: a reader sees the old file or the whole new one),
    /// first removing the images of databases that are gone (a deleted release's).
    public func store(_ tree: TaxonomyTree) throws {
        // Created private, parents included (a private stack's ~/.cache/stol/taxonomy);
        // systemd makes the service's own.
        try FileManager.default.createDirectory(atPath: AtomicFile.directory(of: path), withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        removeLeftovers()
        try write(tree, mode: 0o600)
    }

    /// Writes `tree`'s image at ``path`` with `mode`, atomically.
    func write(_ tree: TaxonomyTree, mode: mode_t) throws {
        let file = try AtomicFile(path: path)
        defer { file.discard() }
        try tree.writeImage(key: key) { bytes in try file.append(bytes) }
        try file.commit(mode: mode)
    }

    /// One pass over the directory: what a server stopped or killed while writing this
    /// image left (``AtomicFile``'s `.<name>.tmp-XXXXXX`, up to 245 MB each: only this
    /// process writes this image, and not twice at once, one open database per path),
    /// and every image whose database no longer exists (each names its database's path
    /// first in its key; another version's file or one that cannot be read is left alone:
    /// nothing of it is trusted anyway).
    func removeLeftovers() {
        let directory = AtomicFile.directory(of: path)
        let unfinished = "." + (path.split(separator: "/").last.map(String.init) ?? "") + ".tmp-"
        for name in (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [] {
            let file = directory + "/" + name
            if name.hasPrefix(unfinished) {
                unlink(file)
                continue
            }
            guard name.hasSuffix(".tree") else { continue }
            let descriptor = open(file, O_RDONLY | O_CLOEXEC)
            guard descriptor >= 0 else { continue }
            let key = try? TaxonomyTree.readImageKey(from: descriptor)
            close(descriptor)
            guard let database = key?.split(separator: "\n", maxSplits: 1).first.map(String.init) else { continue }
            var status = stat()
            if stat(database, &status) != 0 && errno == ENOENT { unlink(file) }
        }
    }
}
