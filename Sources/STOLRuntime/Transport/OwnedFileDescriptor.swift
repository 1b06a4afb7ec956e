import Glibc

/// A file descriptor with exactly one owner, closed when the owner lets go.
///
/// Descriptors received over SCM_RIGHTS are resources the peer handed us; wrapping
/// them at once guarantees that every error path closes them.
public final class OwnedFileDescriptor: @unchecked Sendable {
    private var descriptor: Int32
    private let lock = NIOLockLite()

    public init(_ descriptor: Int32) {
        self.descriptor = descriptor
    }

    /// The descriptor, still owned by this object (-1 once closed or taken).
    public var rawValue: Int32 { lock.withLock { descriptor } }

    /// Gives up ownership: the caller must close the returned descriptor.
    public func take() -> Int32 {
        lock.withLock {
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
        if descriptor >= 0 { _ = Glibc.close(descriptor) }
    }
}

/// A tiny mutex so this file needs nothing beyond Glibc.
final class NIOLockLite: @unchecked Sendable {
    private var mutex = pthread_mutex_t()
    init() { pthread_mutex_init(&mutex, nil) }
    deinit { pthread_mutex_destroy(&mutex) }
    func withLock<T>(_ body: () throws -> T) rethrows -> T {
        pthread_mutex_lock(&mutex)
        defer { pthread_mutex_unlock(&mutex) }
        return try body()
    }
}
