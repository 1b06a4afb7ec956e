import Foundation
import Glibc

/// Standard output in writes of 256 KiB: a batch of 100,000 lines written one by one
/// costs a system call each (and the JSON lines of 100,000 whole-tree lineages are
/// 240 MB).
final class BufferedOutput {
    private var buffer: [UInt8] = []
    private static let flushAt = 1 << 18

    init() { buffer.reserveCapacity(Self.flushAt + (1 << 16)) }

    func line(_ text: String) {
        buffer.append(contentsOf: text.utf8)
        buffer.append(0x0A)
        if buffer.count >= Self.flushAt { flush() }
    }

    /// A line that `write` appends to the buffer itself (a JSON line written in place).
    func line<E: Error>(_ write: (inout [UInt8]) throws(E) -> Void) throws(E) {
        try write(&buffer)
        buffer.append(0x0A)
        if buffer.count >= Self.flushAt { flush() }
    }

    /// write(2) straight from the buffer (no copy into a `Data`); what it cannot write
    /// (an error other than EINTR) goes to FileHandle, which reports it as before.
    func flush() {
        guard !buffer.isEmpty else { return }
        let written = buffer.withUnsafeBytes { bytes -> Int in
            var offset = 0
            while offset < bytes.count {
                let count = Glibc.write(STDOUT_FILENO, bytes.baseAddress! + offset, bytes.count - offset)
                if count > 0 {
                    offset += count
                } else if count < 0 && errno == EINTR {
                    continue
                } else {
                    break
                }
            }
            return offset
        }
        if written < buffer.count { FileHandle.standardOutput.write(Data(buffer[written...])) }
        buffer.removeAll(keepingCapacity: true)
    }

    deinit { flush() }
}
