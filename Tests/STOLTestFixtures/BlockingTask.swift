import Dispatch

/// Runs `body` on the concurrency pool and blocks the calling thread (a test's, or
/// libFuzzer's: never one of the pool's) until it finishes, so that synchronous code
/// can call a daemon's async handler and check its answer, one request at a time.
public func runBlocking<T: Sendable>(_ body: @escaping @Sendable () async -> T) -> T {
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
