import Glibc

/// `strerror(errno)` as a String (`package`: STOLContainer reads and writes files with it too).
package func errnoDescription(_ code: Int32 = errno) -> String { String(cString: strerror(code)) }

/// `Array.withUnsafe…Bytes` rethrow untyped errors; the bodies here throw only StolFormatError.
package func typed<T>(_ body: () throws -> T) throws(StolFormatError) -> T {
    do { return try body() } catch let error as StolFormatError { throw error } catch { throw .outputFailed("\(error)") }
}
