import Dispatch

/// Work done on another thread while its caller goes on: at a start on the full
/// NCBI tree the tree's build and the prominent names' sort each take about a
/// second, the names read meanwhile another, and the machine has a second core.
final class BackgroundWork<Value: Sendable>: @unchecked Sendable {
    private let group = DispatchGroup()
    /// Written once by the work, read after ``join()``'s wait.
    private var value: Value?

    /// On the default QoS: libdispatch on Linux gives a worker the niceness of its queue's
    /// QoS (user-initiated: -2, where the unit allows it), and a tree's build should not
    /// outrank the users' lookups at the daemon's own priority.
    init(_ body: @escaping @Sendable () -> Value) {
        DispatchQueue.global(qos: .default).async(group: group) { [self] in value = body() }
    }

    /// Waits for the work and returns what it made.
    func join() -> Value {
        group.wait()
        return value!
    }
}

/// One value handed to another thread, which takes it (the box then holds
/// nothing): a tree's builder handed to its build, so that its arrays are freed
/// as the build goes rather than held by whoever made it.
final class Handoff<Value>: @unchecked Sendable {
    private var value: Value?

    init(_ value: consuming Value) { self.value = value }

    /// The value; called once, by the thread it was handed to.
    func take() -> Value {
        defer { value = nil }
        return value!
    }
}
