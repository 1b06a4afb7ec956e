import Foundation
import Glibc
import Logging
import STOLTestFixtures
import Synchronization

/// Temporary directories of a fuzz process, removed when it exits.
///
/// In `/dev/shm` when it is writable: the targets write state files and SQLite
/// pages for every input, and a RAM-backed directory keeps that from costing
/// disk flushes (thousands of inputs per second), and from wearing the disk.
enum FuzzScratch {
    private static let made = Mutex<[String]>([])
    private static let registered: Void = {
        atexit {
            for path in FuzzScratch.made.withLock({ $0 }) { try? FileManager.default.removeItem(atPath: path) }
        }
    }()

    static var base: String {
        if access("/dev/shm", W_OK) == 0 { return "/dev/shm" }
        if let tmp = ProcessInfo.processInfo.environment["TMPDIR"], !tmp.isEmpty { return tmp }
        return "/tmp"
    }

    /// A fresh directory, removed at exit (not after a crash: its files may help).
    static func makeDirectory(_ prefix: String) throws -> String {
        _ = registered
        let path: String
        do { path = try TemporaryDirectory.make(prefix: prefix, in: base) } catch { throw FuzzFailure("\(error)") }
        made.withLock { $0.append(path) }
        return path
    }
}
