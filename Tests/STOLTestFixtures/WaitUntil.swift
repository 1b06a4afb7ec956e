import Foundation
import Glibc

/// Checks `condition` every `interval` seconds until it holds or `seconds` have
/// passed: a wait for an observable event, bounded by a deadline. Returns whether
/// it held.
@discardableResult
public func waitUntil(seconds: Double = 30, interval: Double = 0.01, _ condition: () -> Bool) -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if condition() { return true }
        usleep(UInt32(interval * 1_000_000))
    }
    return condition()
}
