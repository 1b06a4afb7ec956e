import Dispatch

/// Runs `body` on the concurrency pool and blocks the calling thread (libFuzzer's,
/// which calls a target synchronously: never one of the pool's) until it finishes,
/// so that a fuzz target can call a daemon's async handler and check its answer, one
/// request at a time. Tests do not use it: they are `async` and await the handler.
func runBlocking<T: Sendable>(_ body: @escaping @Sendable () async -> T) -> T {
    let box = ResultBox<T>()
    let done = DispatchSemaphore(value: 0)
    Task {
        box.value = await body()
        done.signal()
    }
    done.wait()
    return box.value!
}

private final class ResultBox<T>: @unchecked Sendable {
    var value: T?
}
