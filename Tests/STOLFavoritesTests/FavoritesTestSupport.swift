import Foundation
import Glibc
import GRDB
import Logging
import STOLFavorites
import STOLTestFixtures
import XCTest

/// Shared helpers: real SQLite files in fresh temporary directories (the kit's), no mocks.


/// The permission bits of `path`, nil when it does not exist.
func permissions(of path: String) -> mode_t? {
    var info = stat()
    guard stat(path, &info) == 0 else { return nil }
    return info.st_mode & 0o7777
}

/// Every file the store may leave for `databasePath`.
func databaseFiles(_ databasePath: String) -> [String] {
    ["", "-wal", "-shm", "-journal"].map { databasePath + $0 }.filter(fileExists)
}

/// Reads the file with a connection of its own (the store must be closed).
func inspect<T>(_ path: String, _ body: (Database) throws -> T) throws -> T {
    let queue = try DatabaseQueue(path: path)
    defer { try? queue.close() }
    return try queue.read(body)
}

/// Overwrites `path` from `offset` to its end (at least `minimumBytes`) with bytes that are no SQLite.
func scribble(over path: String, from offset: UInt64 = 0, minimumBytes: Int = 4096) throws {
    let handle = try XCTUnwrap(FileHandle(forUpdatingAtPath: path))
    defer { try? handle.close() }
    let size = try handle.seekToEnd()
    try handle.seek(toOffset: offset)
    let count = max(minimumBytes, Int(size) - Int(offset))
    let garbage = "this is not a database, just a scribble over it. ".utf8
    handle.write(Data((0..<count).map { garbage[garbage.index(garbage.startIndex, offsetBy: $0 % garbage.count)] }))
}
