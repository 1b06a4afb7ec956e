import Foundation
import Glibc

/// Where the tests find the repository and the built executables.
public enum Workspace {
    /// The repository's root, found from this file.
    public static let repositoryRoot: String = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent()  // STOLTestFixtures
        .deletingLastPathComponent()  // Tests
        .deletingLastPathComponent().path

    /// The directory of the built `stol-*` executables: `STOL_BIN_DIR`, else the one
    /// next to the test bundle (`.build/debug`) that holds `stol-client`.
    public static let binDirectory: String = {
        if let explicit = ProcessInfo.processInfo.environment["STOL_BIN_DIR"] { return explicit }
        let bundle = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        for candidate in [bundle, bundle.deletingLastPathComponent()] {
            if FileManager.default.isExecutableFile(atPath: candidate.appendingPathComponent("stol-client").path) {
                return candidate.path
            }
        }
        return Bundle.main.bundleURL.path
    }()

    /// The built executable `name` (`stol-pipeline`, …), nil when it is not built.
    public static func builtExecutable(_ name: String) -> String? {
        let path = binDirectory + "/" + name
        return FileManager.default.isExecutableFile(atPath: path) ? path : nil
    }
}

/// Results gathered by many threads, in the order they were added.
public final class LockedLog<Element>: @unchecked Sendable {
    private let lock = NSLock()
    private var elements: [Element] = []

    public init() {}

    public func append(contentsOf new: [Element]) {
        lock.lock()
        elements += new
        lock.unlock()
    }

    public var all: [Element] {
        lock.lock()
        defer { lock.unlock() }
        return elements
    }

    public var count: Int {
        lock.lock()
        defer { lock.unlock() }
        return elements.count
    }
}

/// Starts `count` real threads running `body(index)`; `wait()` on the group joins them.
public func startThreads(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) -> DispatchGroup {
    let group = DispatchGroup()
    for index in 0..<count {
        group.enter()
        Thread {
            body(index)
            group.leave()
        }.start()
    }
    return group
}

/// Runs `body(index)` on `count` real threads at once and waits for all of them.
public func onThreads(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) {
    startThreads(count, body).wait()
}
