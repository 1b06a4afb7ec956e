import Dispatch
import Foundation
import Synchronization

/// Threads at the test's priority that spin until stopped: cores taken by others, as
/// on a lab machine where someone compiles or runs an analysis beside the service.
public final class Spinners: Sendable {
    private let running = Atomic<Bool>(true)
    private let done = DispatchGroup()

    public init(count: Int) {
        for _ in 0..<count {
            done.enter()
            Thread { [self] in
                while running.load(ordering: .relaxed) {}
                done.leave()
            }.start()
        }
    }

    public func stop() {
        running.store(false, ordering: .relaxed)
        done.wait()
    }
}
