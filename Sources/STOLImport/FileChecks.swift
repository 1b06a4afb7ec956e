import Glibc
import STOLFormat

/// Checks both the coordinator and the verifier run on a descriptor they were
/// handed: it is a readable regular file within the size limits.
enum FileChecks {
    static func size(of fd: Int32) throws(ImportError) -> UInt64 {
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw .fileUnreadable("fstat failed: \(String(cString: strerror(errno)))") }
        guard (info.st_mode & S_IFMT) == S_IFREG else { throw .fileUnreadable("not a regular file") }
        let size = UInt64(info.st_size)
        guard size >= ImportLimits.minimumFileBytes else { throw .fileTooSmall(bytes: size) }
        guard size <= ImportLimits.maximumFileBytes else {
            throw .fileTooLarge(bytes: size, limit: ImportLimits.maximumFileBytes)
        }
        return size
    }

    /// Reads up to `count` bytes at `offset` without moving the file position.
    static func read(_ fd: Int32, count: Int, at offset: Int) throws(ImportError) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        let got = bytes.withUnsafeMutableBytes { pread(fd, $0.baseAddress, count, off_t(offset)) }
        guard got >= 0 else { throw .fileUnreadable("read failed: \(String(cString: strerror(errno)))") }
        return Array(bytes.prefix(got))
    }
}
