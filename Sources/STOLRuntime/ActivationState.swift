import Foundation
import Glibc

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
        try AtomicFile.replace(path: path, with: data)
    }
}

/// Whole-file replacement that a crash can never leave half-written.
public enum AtomicFile {
    public struct WriteError: Error, CustomStringConvertible {
        public let path: String
        public let errno: Int32
        public var description: String { "cannot write \(path): \(String(cString: strerror(errno)))" }
    }

    public static func replace(path: String, with data: Data, mode: mode_t = 0o644) throws {
        let temporary = path + ".tmp-\(getpid())"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode)
        guard fd >= 0 else { throw WriteError(path: temporary, errno: errno) }
        var ok = data.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                let written = Glibc.write(fd, raw.baseAddress! + offset, raw.count - offset)
                if written <= 0 { return false }
                offset += written
            }
            return true
        }
        ok = ok && fsync(fd) == 0
        let savedErrno = errno
        close(fd)
        guard ok else {
            unlink(temporary)
            throw WriteError(path: temporary, errno: savedErrno)
        }
        guard rename(temporary, path) == 0 else {
            let code = errno
            unlink(temporary)
            throw WriteError(path: path, errno: code)
        }
        fsyncDirectory(of: path)
    }

    /// Makes a rename durable by syncing the directory that holds `path`.
    public static func fsyncDirectory(of path: String) {
        let directory = (path as NSString).deletingLastPathComponent
        let fd = open(directory.isEmpty ? "." : directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if fd >= 0 {
            _ = fsync(fd)
            close(fd)
        }
    }
}
