import CSTOLSocket
import Foundation

extension Thread {
    /// A thread that names itself `name` as it starts, as `top -H`, `perf` and /proc show
    /// it (at most 15 bytes; no uid or query: every user can read thread names).
    /// Foundation's `name`, set before `start()`, never reached the kernel on Linux: each
    /// thread kept its creator's name, and `perf` showed the users' lanes as the event
    /// loops that made them (`NIO-ELT-1-#3`).
    public convenience init(named name: String, block: @escaping @Sendable () -> Void) {
        self.init {
            stol_set_thread_name(name)
            block()
        }
    }
}
