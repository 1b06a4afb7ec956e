import Glibc

/// Why an atomic write failed: the operation, the path, and errno.
public struct AtomicFileError: Error, Equatable, Sendable, CustomStringConvertible {
    public let path: String
    public let operation: String
    public let errno: Int32

    public init(path: String, operation: String, errno: Int32) {
        self.path = path
        self.operation = operation
        self.errno = errno
    }

    public var description: String { "cannot \(operation) \(path): \(String(cString: strerror(errno)))" }
}

/// A file written under a temporary name in its final directory and published
/// with one `rename(2)` (or `link(2)`, to refuse replacing an existing file)
/// after `fsync`, followed by an `fsync` of the directory. Until ``commit(mode:replace:)``
/// nothing is visible under the final name; a failure or `deinit` removes the temporary file.
public final class AtomicFile {
    /// Where ``commit(mode:replace:)`` publishes the file. A staged file (``init(path:stagingPath:)``)
    /// may be given its final name late: the import coordinator learns it (the release) from
    /// the verified database.
    public var path: String
    public private(set) var temporaryPath: String
    public private(set) var fd: Int32
    private var published = false

    public init(path: String) throws(AtomicFileError) {
        self.path = path
        let directory = AtomicFile.directory(of: path)
        let name = path.split(separator: "/", omittingEmptySubsequences: false).last.map(String.init) ?? path
        var template = Array("\(directory)/.\(name).tmp-XXXXXX".utf8CString)
        let descriptor = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard descriptor >= 0 else { throw AtomicFileError(path: directory, operation: "create a file in", errno: errno) }
        _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC)
        fd = descriptor
        temporaryPath = template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
    }

    /// A file staged at `stagingPath` (created exclusively; it may be in another
    /// directory of the same file system, as the import coordinator's
    /// `databases/.staging/`) and published at `path` by ``commit(mode:replace:)``.
    public init(path: String, stagingPath: String) throws(AtomicFileError) {
        self.path = path
        let descriptor = open(stagingPath, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw AtomicFileError(path: stagingPath, operation: "create", errno: errno) }
        fd = descriptor
        temporaryPath = stagingPath
    }

    deinit { discard() }

    public static func directory(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        let directory = String(path[..<slash])
        return directory.isEmpty ? "/" : directory
    }

    public func append(_ bytes: UnsafeRawBufferPointer) throws(AtomicFileError) {
        guard var base = bytes.baseAddress else { return }
        var remaining = bytes.count
        while remaining > 0 {
            let written = write(fd, base, remaining)
            if written < 0 {
                if errno == EINTR { continue }
                throw AtomicFileError(path: path, operation: "write", errno: errno)
            }
            base += written
            remaining -= written
        }
    }

    public func append(_ bytes: [UInt8]) throws(AtomicFileError) {
        var failure: AtomicFileError?
        bytes.withUnsafeBytes { raw in
            do throws(AtomicFileError) { try append(raw) } catch { failure = error }
        }
        if let failure { throw failure }
    }

    public func overwrite(_ bytes: [UInt8], at offset: Int) throws(AtomicFileError) {
        var done = 0
        while done < bytes.count {
            let written = bytes.withUnsafeBytes { pwrite(fd, $0.baseAddress! + done, bytes.count - done, off_t(offset + done)) }
            if written < 0 {
                if errno == EINTR { continue }
                throw AtomicFileError(path: path, operation: "write", errno: errno)
            }
            done += written
        }
    }

    /// Flushes what was written to the disk (``commit(mode:replace:)`` does it too;
    /// calling this first keeps the long part of a large file's commit out of a lock).
    public func sync() throws(AtomicFileError) {
        guard fsync(fd) == 0 else { throw AtomicFileError(path: path, operation: "fsync", errno: errno) }
    }

    /// Publishes the file under ``path`` with `mode`. With `replace` false an existing file is
    /// never replaced (`link(2)` fails with `EEXIST`).
    public func commit(mode: mode_t, replace: Bool = true) throws(AtomicFileError) {
        guard fchmod(fd, mode) == 0 else { throw AtomicFileError(path: path, operation: "chmod", errno: errno) }
        guard fsync(fd) == 0 else { throw AtomicFileError(path: path, operation: "fsync", errno: errno) }
        close(fd)
        fd = -1
        if replace {
            guard rename(temporaryPath, path) == 0 else {
                throw AtomicFileError(path: path, operation: "rename to", errno: errno)
            }
        } else {
            guard link(temporaryPath, path) == 0 else {
                throw AtomicFileError(path: path, operation: "create", errno: errno)
            }
            unlink(temporaryPath)
        }
        published = true
        let directory = open(AtomicFile.directory(of: path), O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if directory >= 0 {
            _ = fsync(directory)
            close(directory)
        }
    }

    /// Removes the temporary file (no effect after a commit).
    public func discard() {
        if fd >= 0 { close(fd); fd = -1 }
        if !published { unlink(temporaryPath); published = true }
    }
}

extension AtomicFile {
    /// Replaces `path` with `bytes` atomically and durably: a crash leaves either
    /// the old file or the new one, never a mix.
    public static func replace(path: String, with bytes: [UInt8], mode: mode_t = 0o644) throws(AtomicFileError) {
        let file = try AtomicFile(path: path)
        try file.append(bytes)
        try file.commit(mode: mode)
    }
}
