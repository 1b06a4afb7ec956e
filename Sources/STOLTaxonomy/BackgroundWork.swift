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
