import CSTOLSQLite
import Glibc
import STOLFormat
import STOLModel

/// The payload of a row delta (`protocol/STOL-FORMAT.md` §10.2): the SQLite patchset
/// (the session extension's changeset without the old values of changed and deleted
/// rows, which the base's signed digest already pins) of every row that differs between
/// the base and the new release, compressed as one zstd frame with the base's bytes as
/// its reference prefix.
///
/// Why rows and not bytes: the pipeline lays every release out anew, so a row added
/// early moves every later row to another place in its page, and a byte delta pays for
/// every page whose cell pointers moved (0.25 of the full file between NCBI 2023.11.4
/// and 2024.9.7, 0.4 over two years). A patchset names only the rows that changed;
/// applied to a copy of the base and written with VACUUM INTO, as the pipeline writes
/// every database, it yields the new release byte for byte, which the signed content
/// digest then proves.
public enum RowDelta {
    /// The largest patchset a row delta may decompress to.
    public static let maximumPatchsetBytes: UInt64 = 1 << 31

    /// A patchset made by ``patchset(base:target:)`` (sqlite3_malloc'd, freed with it).
    public final class Patchset {
        public let bytes: UnsafeRawBufferPointer

        init(pointer: UnsafeMutableRawPointer?, count: Int) {
            bytes = UnsafeRawBufferPointer(start: pointer, count: pointer == nil ? 0 : count)
        }

        deinit { stol_row_delta_free(UnsafeMutableRawPointer(mutating: bytes.baseAddress)) }
    }

    /// The rows that turn the database at `base` into the one at `target`. Throws
    /// ``StolFormatError/outputFailed(_:)`` with the reason when a patchset cannot
    /// express the difference (the schemas differ, a table has no primary key).
    public static func patchset(base: String, target: String) throws(StolFormatError) -> Patchset {
        var pointer: UnsafeMutableRawPointer?
        var size: Int64 = 0
        var error = [CChar](repeating: 0, count: 512)
        let rc = stol_row_delta_diff(base, target, &pointer, &size, &error, error.count)
        guard rc == 0 else {
            stol_row_delta_free(pointer)
            throw .outputFailed("no row delta: \(text(error))")
        }
        return Patchset(pointer: pointer, count: Int(size))
    }

    /// Applies `payload` (checked: one zstd frame, nothing after it, a stated size within
    /// ``maximumPatchsetBytes``) to a copy of the base (`baseDescriptor`, mapped as `base`)
    /// made in `work`, and writes the result into `output` (emptied first). Returns the
    /// result's size.
    static func apply(_ payload: UnsafeRawBufferPointer, base: UnsafeRawBufferPointer, baseDescriptor: Int32, work: Int32,
                      output: Int32) throws(StolFormatError) -> UInt64 {
        try ZstdDelta.checkFrame(payload, maximumSize: maximumPatchsetBytes)
        try copy(base, from: baseDescriptor, into: work)
        guard ftruncate(output, 0) == 0 else { throw .outputFailed("cannot empty the delta's output: \(errnoDescription())") }
        var corrupt: Int32 = 0
        var error = [CChar](repeating: 0, count: 512)
        let rc = stol_row_delta_apply(work, output, payload.baseAddress, payload.count, base.baseAddress, base.count,
                                      maximumPatchsetBytes, Int32(TaxonomySchema.fileSchemaCookie), &corrupt, &error, error.count)
        // The base's copy is not needed again: give its blocks back now.
        _ = ftruncate(work, 0)
        guard rc == 0 else {
            let reason = text(error)
            throw corrupt != 0 ? .corruptPayload(reason) : .outputFailed(reason)
        }
        var info = stat()
        guard fstat(output, &info) == 0 else { throw .fileUnreadable("the delta's result: \(errnoDescription())") }
        return UInt64(info.st_size)
    }

    /// A C function's NUL-terminated message.
    private static func text(_ message: [CChar]) -> String {
        String(decoding: message.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The base's bytes into `fd` (``stol_row_delta_copy_base``: by the kernel where it can).
    private static func copy(_ bytes: UnsafeRawBufferPointer, from source: Int32, into fd: Int32) throws(StolFormatError) {
        let failure = stol_row_delta_copy_base(source, fd, bytes.baseAddress, bytes.count)
        guard failure == 0 else { throw .outputFailed("cannot copy the base: \(String(cString: strerror(failure)))") }
    }
}
