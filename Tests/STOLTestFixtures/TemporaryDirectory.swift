import Foundation
import Glibc
#if canImport(XCTest)
import XCTest
#endif

/// What a test-support helper throws: one sentence saying what failed.
public struct TestSupportError: Error, CustomStringConvertible, Sendable {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// Scratch directories of the tests, the fuzz targets and the benchmark.
///
/// Short paths (`/tmp/<prefix>.XXXXXX` by default): Unix socket paths inside them
/// must stay within 107 bytes.
public enum TemporaryDirectory {
    /// A fresh directory `<parent>/<prefix>.XXXXXX`; `mode` (e.g. 0o755, so that
    /// other users a test plays reach its sockets) is applied when given. The
    /// caller removes it.
    public static func make(prefix: String = "stoltest", in parent: String = "/tmp", mode: mode_t? = nil) throws -> String {
        var template = Array("\(parent)/\(prefix).XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else {
            throw TestSupportError("mkdtemp in \(parent): \(String(cString: strerror(errno)))")
        }
        let path = String(cString: made)
        if let mode { chmod(path, mode) }
        return path
    }
}

#if canImport(XCTest)
/// A fresh short temporary directory, removed when the test ends.
public func makeTemporaryDirectory(_ testCase: XCTestCase, prefix: String = "stoltest", mode: mode_t? = nil) throws -> String {
    let path = try TemporaryDirectory.make(prefix: prefix, mode: mode)
    testCase.addTeardownBlock { try? FileManager.default.removeItem(atPath: path) }
    return path
}
#endif
