import CMemory
import Logging

/// Gives the memory freed after a burst of work back to the kernel once the daemon
/// is idle again.
///
/// An allocator keeps freed memory for reuse; after an attack of large answers
/// taxonomyd (then on glibc's malloc) kept 2,239 of 2,768 MiB it no longer used
/// (issue 33), which on a shared machine is memory taken from everyone.
/// `stol_heap_return_freed` (`CMemory`) hands back what mimalloc holds free; it
/// walks segments (milliseconds), so it runs once per quiet spell: after a period
/// in which no request started, if any started since the last trim.
enum IdleMemoryTrim {
    /// Trims after each quiet `period` that follows activity; returns when cancelled.
    static func run(every period: Duration, lanes: UserLanes, logger: Logger) async {
        var seen = lanes.requestsStarted, trimmedAt = seen
        while !Task.isCancelled {
            try? await Task.sleep(for: period)
            let now = lanes.requestsStarted
            if now == seen, now != trimmedAt {
                stol_heap_return_freed()
                trimmedAt = now
                logger.debug("returned freed memory to the kernel (idle)")
            }
            seen = now
        }
    }
}
