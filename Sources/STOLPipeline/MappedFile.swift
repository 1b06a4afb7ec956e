import Foundation
import Glibc

/// A source file mapped into memory read-only, for the byte-level readers.
///
/// The big sources (NCBI taxdump: 2.6 M nodes, GBIF backbone: 7 M rows) are read
/// by splitting bytes directly, never by building one `String` of the file.
final class MappedFile {
    let path: String
    let bytes: UnsafeBufferPointer<UInt8>
    private let mapped: Bool

    init(path: String) throws(SourceError) {
        self.path = path
        let descriptor = open(path, O_RDONLY)
        guard descriptor >= 0 else {
            if errno == ENOENT { throw .missingFile(path) }
            throw .unreadable(file: path, detail: String(cString: strerror(errno)))
        }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else {
            throw .unreadable(file: path, detail: String(cString: strerror(errno)))
        }
        let size = Int(status.st_size)
        guard size > 0 else {
            bytes = UnsafeBufferPointer(start: nil, count: 0)
            mapped = false
            return
        }
        guard let address = mmap(nil, size, PROT_READ, MAP_PRIVATE, descriptor, 0), address != MAP_FAILED else {
            throw .unreadable(file: path, detail: "cannot map: \(String(cString: strerror(errno)))")
        }
        _ = madvise(address, size, MADV_SEQUENTIAL)
        bytes = UnsafeBufferPointer(start: address.assumingMemoryBound(to: UInt8.self), count: size)
        mapped = true
    }

    deinit {
        if mapped, let base = bytes.baseAddress {
            munmap(UnsafeMutableRawPointer(mutating: base), bytes.count)
        }
    }
}
