import Glibc
import Synchronization

/// A file descriptor with exactly one owner, closed when the owner lets go.
///
/// Descriptors received over SCM_RIGHTS are resources the peer handed us; wrapping
/// them at once guarantees that every error path closes them.
public final class OwnedFileDescriptor: Sendable {
    /// The descriptor, -1 once closed or taken. The object is `Sendable` (it
    /// travels in a ``RequestContext`` from the transport to the handler), so
    /// `take()` and `close()` may race on different threads: exactly one of them
    /// gets the descriptor, and it is never closed twice.
    private let descriptor: Mutex<Int32>

    public init(_ descriptor: Int32) {
        self.descriptor = Mutex(descriptor)
    }

    /// The descriptor, still owned by this object (-1 once closed or taken).
    public var rawValue: Int32 { descriptor.withLock { $0 } }

    /// Gives up ownership: the caller must close the returned descriptor.
    public func take() -> Int32 {
        descriptor.withLock { descriptor in
            let fd = descriptor
            descriptor = -1
            return fd
        }
    }

    public func close() {
        let fd = take()
        if fd >= 0 { _ = Glibc.close(fd) }
    }

    deinit {
        close()
    }
}
