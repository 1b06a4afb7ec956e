import Foundation

/// A program a test needs that is not on this machine: the test fails, it never skips
/// (`make deps` installs every one: the Makefile's DEB_PACKAGES and TEST_DEB_PACKAGES).
public struct MissingPrerequisite: Error, CustomStringConvertible {
    public let what: String
    public let debianPackage: String

    public init(_ what: String, debianPackage: String) {
        self.what = what
        self.debianPackage = debianPackage
    }

    public var description: String { "\(what) is not installed: apt-get install \(debianPackage) (make deps installs it)" }
}

/// `path` when it is an executable file, else ``MissingPrerequisite``.
@discardableResult
public func requireExecutable(_ path: String, debianPackage: String) throws -> String {
    guard FileManager.default.isExecutableFile(atPath: path) else { throw MissingPrerequisite(path, debianPackage: debianPackage) }
    return path
}
