import Glibc

/// The size limits of a `.stol` file, and checks 1–2 of `protocol/STOL-FORMAT.md` §6
/// on an open descriptor without reading a byte of it.
///
/// This is all of the format that `stol-importd` runs: it `fstat`s the descriptor
/// it was handed before it passes it to a verifier, and it bounds what a verifier
/// may send back. The container itself (`StolFile.verify`, gzip) lives in
/// STOLContainer, which only the verifier, the pipeline and the tools link; the
/// coordinator never parses untrusted bytes, so it does not link that code at all.
/// `StolFile`'s limits are these (`StolFileLimitsTests` holds them equal).
public enum StolFileLimits {
    public static let minimumFileBytes: UInt64 = 1
    public static let maximumFileBytes: UInt64 = 2 * 1024 * 1024 * 1024
    public static let maximumDecompressedBytes: UInt64 = 4 * 1024 * 1024 * 1024

    /// Checks 1–2 of the list: a readable regular file of 1 byte … `maximumFileBytes`,
    /// with the errors `StolFile.verify` throws for them.
    public static func checkedSize(ofDescriptor fd: Int32,
                                   maximumFileBytes: UInt64 = maximumFileBytes) throws(StolFormatError) -> UInt64 {
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw .fileUnreadable("fstat failed: \(errnoDescription())") }
        guard (info.st_mode & S_IFMT) == S_IFREG else { throw .fileUnreadable("not a regular file") }
        let size = UInt64(info.st_size)
        guard size >= minimumFileBytes else { throw .fileTooSmall(bytes: size) }
        guard size <= maximumFileBytes else { throw .fileTooLarge(bytes: size, limit: maximumFileBytes) }
        return size
    }
}
