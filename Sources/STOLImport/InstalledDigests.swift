import Foundation
import Glibc
import STOLFileSystem
import STOLFormat

/// The SHA-256 of each installed release, written beside it when it is installed
/// (`releases/.<release>.sha256`: the digest, then the file's fingerprint — device,
/// inode, size, modification time), so that asking whether a release is installed
/// with some content, or checking a delta's base, does not read the whole release
/// again (1.4 GB for NCBI's). The verifier still hashes a delta's base itself (its
/// check 11), so with the record a base is hashed once per import instead of twice.
///
/// A record whose fingerprint is not the file's (a file replaced or written since,
/// copied back from a backup) is ignored and the file hashed, as without one; so is
/// a record that cannot be read. Only stol-importd writes the directory, and only
/// it reads these records.
struct InstalledDigests: Sendable {
    let directory: String

    func recordPath(_ release: String) -> String { directory + "/." + release + ".sha256" }

    /// Records `digest` for the file installed at `path` as `release`. Best effort:
    /// without a record the next check hashes the file.
    func record(_ digest: [UInt8], release: String, installedAt path: String) {
        guard let installed = FileStat(path: path), let file = try? AtomicFile(path: recordPath(release)) else { return }
        defer { file.discard() }
        try? file.append(Array("\(digest.hexString) \(installed.fingerprint)\n".utf8))
        try? file.commit(mode: 0o644)
    }

    /// The SHA-256 of `release` as open on `descriptor`: the record's when its
    /// fingerprint is this file's, else hashed from the descriptor.
    func digest(of release: String, descriptor: Int32) throws -> [UInt8] {
        if let recorded = recorded(release, descriptor: descriptor) { return recorded }
        return try SHA256.hash(fileDescriptor: descriptor).digest
    }

    /// The recorded digest when the record's fingerprint is the open file's.
    func recorded(_ release: String, descriptor: Int32) -> [UInt8]? {
        guard let file = FileStat(descriptor: descriptor),
              let text = try? String(contentsOfFile: recordPath(release), encoding: .utf8) else { return nil }
        let fields = text.split(whereSeparator: \.isWhitespace)
        guard fields.count == 2, fields[1] == file.fingerprint, let digest = [UInt8](hex: fields[0]), digest.count == 32 else {
            return nil
        }
        return digest
    }

    func remove(_ release: String) {
        unlink(recordPath(release))
    }
}
