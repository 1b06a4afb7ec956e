import CSTOLSandbox
import Glibc
import STOLTransport

/// A file holding given bytes, as the open descriptor a client passes with a
/// request (SCM_RIGHTS): unnamed (`O_TMPFILE`, the verifier's own scratch-file
/// call) in the fuzz process's RAM-backed directory, so thousands of inputs per
/// second cost no disk and leave nothing behind.
enum FuzzFile {
    static func descriptor(for bytes: [UInt8], in directory: String) throws(FuzzFailure) -> OwnedFileDescriptor {
        let fd = stol_anonymous_file(directory)
        guard fd >= 0 else { throw FuzzFailure("cannot create an input file in \(directory): \(String(cString: strerror(errno)))") }
        let file = OwnedFileDescriptor(fd)
        var written = 0
        while written < bytes.count {
            let count = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + written, $0.count - written) }
            guard count > 0 else { throw FuzzFailure("writing the input file: \(String(cString: strerror(errno)))") }
            written += count
        }
        return file
    }
}
