import Glibc

/// Standard output in writes of 256 KiB: a batch of 100,000 lines written one by one
/// costs a system call each (and the JSON lines of 100,000 whole-tree lineages are
/// 240 MB).
///
/// A write that fails (a full disk, a closed pipe when SIGPIPE is ignored, EIO) is
/// kept: nothing more is written, ``failure`` says why, and ``finish()`` throws it,
/// so that a batch whose output was cut never exits 0 (issue 34).
public final class BatchOutput {
    public let descriptor: Int32
    private var buffer: [UInt8] = []
    private let flushAt: Int
    /// The first write that failed: what `finish()` throws.
    public private(set) var failure: ClientError?
    /// `--column N`: each answer line keeps its input line (``InputColumns``).
    public var columns: InputColumns?

    public init(descriptor: Int32 = STDOUT_FILENO, flushAt: Int = 1 << 18) {
        self.descriptor = descriptor
        self.flushAt = flushAt
        buffer.reserveCapacity(flushAt + (1 << 16))
    }

    public func line(_ text: String) {
        let start = copiesThrough()
        buffer.append(contentsOf: text.utf8)
        columns?.rewrite(&buffer, from: start)
        buffer.append(0x0A)
        if buffer.count >= flushAt { flush() }
    }

    /// A line that `write` appends to the buffer itself (a JSON line written in place).
    public func line<E: Error>(_ write: (inout [UInt8]) throws(E) -> Void) throws(E) {
        let start = copiesThrough()
        try write(&buffer)
        columns?.rewrite(&buffer, from: start)
        buffer.append(0x0A)
        if buffer.count >= flushAt { flush() }
    }

    /// Writes the input lines ``columns`` copies through before the next answer; the
    /// buffer's end, where that answer starts.
    private func copiesThrough() -> Int {
        guard let columns else { return buffer.count }
        for copy in columns.copiesBeforeNext() {
            buffer.append(contentsOf: copy)
            buffer.append(0x0A)
        }
        return buffer.count
    }

    /// write(2) straight from the buffer (no copy into a `Data`); a failure is kept in ``failure``.
    public func flush() {
        defer { buffer.removeAll(keepingCapacity: true) }
        guard !buffer.isEmpty, failure == nil else { return }
        let error: Int32? = buffer.withUnsafeBytes { bytes in
            var offset = 0
            while offset < bytes.count {
                let count = write(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
                if count > 0 {
                    offset += count
                } else if count < 0 && errno == EINTR {
                    continue
                } else if count < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) {
                    // A non-blocking descriptor (inherited so): wait until it takes more.
                    var ready = pollfd(fd: descriptor, events: Int16(POLLOUT), revents: 0)
                    _ = poll(&ready, 1, -1)
                } else {
                    return count < 0 ? errno : EIO
                }
            }
            return nil
        }
        if let error {
            failure = .local("cannot write standard output: \(String(cString: strerror(error)))")
        }
    }

    /// Flushes, and throws when any write failed.
    public func finish() throws(ClientError) {
        _ = copiesThrough()
        flush()
        if let failure { throw failure }
    }

    deinit { flush() }
}

/// The exit status a batch command collects line by line: 0 when every line was
/// answered, 3 when some line names nothing (or was refused, ``BatchRefusal``), and
/// the worst of what else it records.
public struct BatchStatus {
    public private(set) var code: ClientError.ExitCode = .success

    public init() {}

    /// A line answered with an error (not found, ambiguous, too large to send): exit 3.
    public mutating func lineFailed() { record(.notFound) }

    /// Records `code`; the status is the first code other than success (later ones do not replace it).
    public mutating func record(_ code: ClientError.ExitCode) {
        if self.code == .success { self.code = code }
    }

    public var failed: Bool { code != .success }
}
