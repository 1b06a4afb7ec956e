import Dispatch

/// Runs an async handler to completion from libFuzzer's synchronous entry point.
///
/// The daemons call `respond` from the NIO event loop through a Swift task; here
/// the fuzz thread (never one of the task pool's) starts the task and waits on a
/// semaphore, so each input is answered completely before the next one starts.
enum BlockingTask {
    static func run<T: Sendable>(_ body: @escaping @Sendable () async -> T) -> T {
        let box = Box<T>()
        let done = DispatchSemaphore(value: 0)
        Task {
            box.value = await body()
            done.signal()
        }
        done.wait()
        return box.value!
    }

    private final class Box<T>: @unchecked Sendable {
        var value: T?
    }
}
