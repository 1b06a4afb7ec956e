import Dispatch

/// Work done on another thread while its caller goes on, joined for its value: at a
/// start on the full NCBI tree the tree's build and the prominent names' sort (each
/// about a second) beside the names' read; a row delta's base hashed beside the
/// application of its rows. The machines have a second core.
public final class BackgroundWork<Value: Sendable>: @unchecked Sendable {
    private let group = DispatchGroup()
    /// Written once by the work, read after ``join()``'s wait.
    private var value: Value?

    /// On the default QoS: libdispatch on Linux gives a worker the niceness of its queue's
    /// QoS (user-initiated: -2, where the unit allows it), and background work should not
    /// outrank the users' lookups at the daemon's own priority.
    public init(_ body: @escaping @Sendable () -> Value) {
        DispatchQueue.global(qos: .default).async(group: group) { [self] in value = body() }
    }

    /// Waits for the work and returns what it made.
    public func join() -> Value {
        group.wait()
        return value!
    }
}
