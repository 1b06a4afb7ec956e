import Glibc

/// How a child ended, from the status `waitpid(2)` gives: an exit code, or the
/// signal that killed it.
struct WaitStatus: Equatable, CustomStringConvertible {
    let raw: Int32

    init(_ raw: Int32) { self.raw = raw }

    /// The signal that ended it; nil when it exited.
    var signal: Int32? { raw & 0x7f == 0 ? nil : raw & 0x7f }
    /// Its exit code; 128 + the signal for a killed child, as a shell says it.
    var code: Int32 { signal.map { 128 + $0 } ?? (raw >> 8) & 0xff }
    /// Exited with 0.
    var succeeded: Bool { raw == 0 }

    var description: String {
        signal.map { "was killed by signal \($0)" } ?? "exited with status \(code)"
    }
}
