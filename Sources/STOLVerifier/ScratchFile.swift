import CSTOLSandbox
import Foundation
import Glibc
import STOLImportCore

/// The verifier's only writable file: an anonymous temporary file that holds the
/// decompressed database while it is checked.
///
/// It has no name (`O_TMPFILE`, or `mkstemp` and an immediate `unlink` where the
/// file system lacks it), so a verifier killed at any moment leaves nothing
/// behind: the kernel frees the blocks when the last descriptor closes. SQLite
/// reads it through its descriptor (``DatabaseChecks/run(descriptor:headerSchemaVersion:progress:isCancelled:)``). Runs of zero bytes are
/// left as holes, so a decompression bomb of zeros costs CPU but no disk.
public final class ScratchFile: @unchecked Sendable {
    public let descriptor: Int32
    public private(set) var size: UInt64 = 0

    /// Creates the file in `directory` (default `$TMPDIR`, else `/var/tmp`: large
    /// files do not belong in a RAM-backed `/tmp`).
    public init(directory: String? = nil) throws(ImportError) {
        let directory = directory ?? ScratchFile.defaultDirectory()
        let fd = stol_anonymous_file(directory)
        guard fd >= 0 else {
            throw .storage("cannot create a temporary file in \(directory): \(String(cString: strerror(errno)))")
        }
        descriptor = fd
    }

    deinit { close(descriptor) }

    static func defaultDirectory() -> String {
        if let tmp = ProcessInfo.processInfo.environment["TMPDIR"], !tmp.isEmpty { return tmp }
        return "/var/tmp"
    }

    /// Empties the file for the next verification.
    public func reset() throws(ImportError) {
        guard ftruncate(descriptor, 0) == 0 else { throw Self.failure("truncate", errno) }
        size = 0
    }

    /// Appends `bytes`; a chunk of zeros only moves the end (a hole).
    public func append(_ bytes: UnsafeRawBufferPointer) throws(ImportError) {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return }
        if !Self.isAllZero(bytes) {
            var done = 0
            while done < bytes.count {
                let written = pwrite(descriptor, base + done, bytes.count - done, off_t(size) + off_t(done))
                if written < 0 {
                    if errno == EINTR { continue }
                    throw Self.failure("write", errno)
                }
                done += written
            }
        }
        size += UInt64(bytes.count)
    }

    /// Takes `length` bytes written some other way (a delta applied through a mapping).
    public func adopt(length: UInt64) { size = length }

    /// Sets the file's length to the bytes appended (a trailing hole needs it).
    public func finish() throws(ImportError) {
        guard ftruncate(descriptor, off_t(size)) == 0 else { throw Self.failure("truncate", errno) }
    }

    /// Reads up to `count` bytes at `offset`.
    public func read(into buffer: UnsafeMutableRawBufferPointer, at offset: UInt64) throws(ImportError) -> Int {
        while true {
            let got = pread(descriptor, buffer.baseAddress, buffer.count, off_t(offset))
            if got < 0 && errno == EINTR { continue }
            guard got >= 0 else { throw Self.failure("read", errno) }
            return got
        }
    }

    /// True when every byte is zero: the first byte is, and each equals the next
    /// (one vectorised `memcmp` of the buffer against itself shifted by a byte).
    static func isAllZero(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return true }
        return bytes[0] == 0 && memcmp(base, base + 1, bytes.count - 1) == 0
    }

    private static func failure(_ operation: String, _ code: Int32) -> ImportError {
        let detail = "cannot \(operation) the verifier's temporary file: \(String(cString: strerror(code)))"
        return code == ENOSPC || code == EDQUOT ? .noSpace(detail) : .storage(detail)
    }
}
