import Foundation

/// A thread's time slice in nanoseconds as the kernel reports it: `se.slice` of a `sched`
/// file of /proc (`/proc/thread-self/sched`, `/proc/self/task/TID/sched`), or nil where the
/// kernel is built without scheduler debugging.
public func schedulerSlice(inFile path: String) -> UInt64? {
    guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return nil }
    for line in text.split(separator: "\n") where line.hasPrefix("se.slice") {
        return line.split(separator: ":").last.flatMap { UInt64(String($0).trimmingCharacters(in: .whitespaces)) }
    }
    return nil
}
