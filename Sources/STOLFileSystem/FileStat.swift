import Glibc

/// The parts of `stat(2)` that identify one version of a file.
///
/// A database is never written in place (a new one replaces it by rename), so a
/// new version always has a new inode or size or mtime: the taxonomy server
/// notices a switch by comparing these, and both it and the import coordinator
/// show ``fingerprint`` so that an administrator can match `db status` with the
/// identity every taxonomy answer carries.
public struct FileStat: Equatable, Sendable {
    public let device: UInt64
    public let inode: UInt64
    public let size: UInt64
    public let modifiedNanoseconds: Int64

    public init?(path: String) {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        self.init(info)
    }

    /// The same of an open file (`fstat(2)`): the version a reader holds, whatever the path names now.
    public init?(descriptor: Int32) {
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { return nil }
        self.init(info)
    }

    private init(_ info: stat) {
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
        size = UInt64(info.st_size)
        modifiedNanoseconds = Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec)
    }

    /// Hex of device, inode, size and mtime: `fd01-1a2b-5000000-65f1c0de…`.
    public var fingerprint: String {
        [device, inode, size, UInt64(bitPattern: modifiedNanoseconds)].map { String($0, radix: 16) }.joined(separator: "-")
    }
}
