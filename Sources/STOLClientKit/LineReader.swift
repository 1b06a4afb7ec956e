import Glibc
import STOLProtocol

/// The lines of a batch command's input (standard input), read lazily with a bound;
/// gzip input is inflated as it is read (``InputBytes``).
///
/// Swift's `readLine()` grows one line without limit (a line of `/dev/zero` took the
/// client to 2.1 GB, issue 34) and reports a failed read as the end of the input, so
/// a client out of memory printed its header and exited 0. This reader keeps at most
/// ``maximumLineBytes`` plus one read's worth, refuses a longer line at once with a
/// typed error naming it (memory stays bounded, the rest is never read), and reports
/// a failed `read(2)` as an error, never as the end.
///
/// Lines are what `readLine()` gives: split at `\n`, a `\r` before it dropped, the
/// last line without a newline kept, invalid UTF-8 repaired with U+FFFD.
public final class LineReader {
    /// The longest line a batch command reads: a request frame's body (64 KiB). No query
    /// longer than that can ever be sent, and a line never costs more memory than a request.
    public static let maximumLineBytes = ProtocolLimits.maximumRequestFrameBytes

    /// Why reading stopped before the end.
    public enum Failure: Error, Equatable, CustomStringConvertible {
        /// Line `line` (1-based) is longer than `limit` bytes (its newline aside).
        case lineTooLong(line: Int, limit: Int, source: String)
        /// `read(2)` failed with `errno`.
        case unreadable(errno: Int32, source: String)
        /// A whole input read at once (``readAll(descriptor:limit:source:)``) is longer than `limit` bytes.
        case tooLarge(limit: Int, source: String)
        /// Gzip input (``InputBytes``) that is damaged or cut short.
        case corrupt(String, source: String)

        init(_ failure: InputBytes.Failure, source: String) {
            switch failure {
            case .unreadable(let code): self = .unreadable(errno: code, source: source)
            case .corrupt(let message): self = .corrupt(message, source: source)
            }
        }

        public var description: String {
            switch self {
            case .lineTooLong(let line, let limit, let source):
                "\(source), line \(line): longer than \(limit) bytes, the longest line a batch reads "
                    + "(no query can be longer than a request); nothing after it was read"
            case .unreadable(let code, let source):
                "cannot read \(source): \(String(cString: strerror(code)))"
            case .tooLarge(let limit, let source):
                "\(source) is longer than \(limit) bytes, the most this command reads; nothing after that was read"
            case .corrupt(let message, let source):
                "\(source) is gzip data that cannot be read (\(message)); the lines before the damage were read"
            }
        }

        /// The user's error: a line too long is input the command does not take (exit 65),
        /// a failed read a failure (exit 1).
        public var clientError: ClientError {
            switch self {
            case .lineTooLong, .tooLarge, .corrupt: .badFile(description)
            case .unreadable: .local(description)
            }
        }
    }

    public let descriptor: Int32
    public let maximumLineBytes: Int
    /// Named in errors: "standard input".
    public let source: String
    /// The number of the last line returned (1-based; 0 before the first).
    public private(set) var lineNumber = 0

    /// The descriptor's bytes, inflated when they are gzip.
    private let input: InputBytes
    private let storage: UnsafeMutableBufferPointer<UInt8>
    private let readBytes: Int
    private var start = 0
    private var end = 0
    private var atEOF = false
    private var failure: Failure?

    /// - Parameters:
    ///   - descriptor: read, never closed (standard input by default).
    ///   - readBytes: the most one `read(2)` asks for.
    public init(descriptor: Int32 = STDIN_FILENO, maximumLineBytes: Int = LineReader.maximumLineBytes,
                source: String = "standard input", readBytes: Int = 1 << 16) {
        precondition(maximumLineBytes > 0 && readBytes > 0)
        self.descriptor = descriptor
        self.maximumLineBytes = maximumLineBytes
        self.source = source
        self.readBytes = readBytes
        input = InputBytes(descriptor: descriptor)
        // A whole line with its "\r\n", and room for one more read after it.
        storage = .allocate(capacity: maximumLineBytes + 2 + readBytes)
    }

    deinit { storage.deallocate() }

    /// The next line, nil at the end of the input. After a failure every call throws it again.
    public func next() throws(Failure) -> String? {
        if let failure { throw failure }
        let base = storage.baseAddress!
        var searched = start
        while true {
            if searched < end, let found = memchr(base + searched, 0x0A, end - searched) {
                let newline = base.distance(to: found.assumingMemoryBound(to: UInt8.self))
                var last = newline
                if last > start && base[last - 1] == 0x0D { last -= 1 }
                return try take(start..<last, resumingAt: newline + 1)
            }
            searched = end
            if end - start > maximumLineBytes + 1 {
                // Not even "\r\n" could end it within the limit.
                try refuse()
            }
            if atEOF {
                guard start < end else { return nil }
                return try take(start..<end, resumingAt: end)
            }
            if start > 0 {
                // Keep the partial line at the front: the storage then always has room for a read.
                let count = end - start
                if count > 0 { memmove(base, base + start, count) }
                searched -= start
                start = 0
                end = count
            }
            let room = min(readBytes, storage.count - end)
            let count: Int
            do {
                count = try input.read(into: base + end, count: room)
            } catch {
                failure = Failure(error, source: source)
                throw failure!
            }
            if count > 0 { end += count } else { atEOF = true }
        }
    }

    /// ``next()``, its failure as the user's error (``Failure/clientError``).
    public func nextLine() throws(ClientError) -> String? {
        do { return try next() } catch { throw error.clientError }
    }

    private func take(_ line: Range<Int>, resumingAt next: Int) throws(Failure) -> String {
        guard line.count <= maximumLineBytes else { try refuse() }
        lineNumber += 1
        start = next
        return String(decoding: UnsafeBufferPointer(rebasing: storage[line]), as: UTF8.self)
    }

    private func refuse() throws(Failure) -> Never {
        failure = .lineTooLong(line: lineNumber + 1, limit: maximumLineBytes, source: source)
        throw failure!
    }

    /// All of `descriptor` up to its end, refused when longer than `limit` bytes (read no
    /// further than that): for an input taken whole, a Newick tree.
    public static func readAll(descriptor: Int32, limit: Int, source: String) throws(Failure) -> [UInt8] {
        var bytes: [UInt8] = []
        let chunk = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 16, alignment: 1)
        defer { chunk.deallocate() }
        let input = InputBytes(descriptor: descriptor)
        while true {
            let count: Int
            do throws(InputBytes.Failure) {
                count = try input.read(into: chunk.baseAddress!, count: chunk.count)
            } catch {
                throw Failure(error, source: source)
            }
            guard count > 0 else { return bytes }
            guard bytes.count + count <= limit else { throw .tooLarge(limit: limit, source: source) }
            bytes.append(contentsOf: chunk[..<count])
        }
    }
}
