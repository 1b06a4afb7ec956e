import Glibc

/// A POSIX read-write lock: any number of readers at once, or one writer.
///
/// For maps read on every request and changed rarely (taxonomyd's `UserReaders`,
/// favoritesd's `FavoritesRegistry`): readers
/// take and release it with atomic operations alone and never sleep on each other,
/// so a reader preempted while it holds it (a heavy user's lane at nice +10) holds
/// up nobody but a writer. A `Mutex` there made every user's request wait on any
/// other's.
public final class ReadWriteLock: @unchecked Sendable {
    private let lock: UnsafeMutablePointer<pthread_rwlock_t>

    public init() {
        lock = .allocate(capacity: 1)
        lock.initialize(to: pthread_rwlock_t())
        precondition(pthread_rwlock_init(lock, nil) == 0, "pthread_rwlock_init failed")
    }

    deinit {
        pthread_rwlock_destroy(lock)
        lock.deallocate()
    }

    public func withReadLock<T>(_ body: () throws -> T) rethrows -> T {
        precondition(pthread_rwlock_rdlock(lock) == 0, "pthread_rwlock_rdlock failed")
        defer { pthread_rwlock_unlock(lock) }
        return try body()
    }

    public func withWriteLock<T>(_ body: () throws -> T) rethrows -> T {
        precondition(pthread_rwlock_wrlock(lock) == 0, "pthread_rwlock_wrlock failed")
        defer { pthread_rwlock_unlock(lock) }
        return try body()
    }
}
