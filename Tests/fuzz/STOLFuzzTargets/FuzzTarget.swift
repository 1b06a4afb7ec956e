/// One fuzz target: the code a daemon runs on untrusted bytes, driven by one input
/// at a time, with the invariants that must hold for every input.
///
/// The same type serves three callers, so that a finding stays fixed once fixed:
/// libFuzzer (`LLVMFuzzerTestOneInput` in the `fuzz-*` executables built by
/// `make fuzz`), the replayer those executables are in an ordinary build, and the
/// regression tests (`STOLFuzzTests`), which replay `Tests/fuzz/regressions/`.
public protocol FuzzTarget: AnyObject {
    /// The executable's name (`fuzz-taxonomy`), also its corpus and regression folder.
    static var name: String { get }
    /// The one instance a process runs every input through. Costly set-up (a
    /// database, a state directory) happens here, once, never per input.
    static func make() throws -> Self
    /// Runs one input; a broken invariant is thrown, a crash or hang is the fuzzer's to catch.
    func run(_ input: [UInt8]) throws(FuzzFailure)
    /// Whether an input is a stream of request frames (``RequestStream``), which
    /// libFuzzer then mutates frame by frame (``RequestStreamMutator``).
    static var inputIsRequestStream: Bool { get }
    /// The longest input tried (libFuzzer's `-max_len`, which the executables pass
    /// unless told otherwise): a few requests for the daemons (a connection's worth of
    /// frames) by default.
    static var maximumInputBytes: Int { get }
    /// Seed inputs this target generates (files the committed corpus could not be
    /// written from by hand: signed `.stol` files, small databases), by file name.
    static func generatedSeeds() throws -> [(name: String, bytes: [UInt8])]
}

extension FuzzTarget {
    public static var inputIsRequestStream: Bool { false }
    public static var maximumInputBytes: Int { 4096 }
    public static func generatedSeeds() throws -> [(name: String, bytes: [UInt8])] { [] }
}

/// An invariant that did not hold, with what was seen.
public struct FuzzFailure: Error, CustomStringConvertible, Sendable {
    public let description: String

    public init(_ description: String) {
        self.description = description
    }
}

/// Throws `message` unless `condition` holds.
@inline(__always)
func expect(_ condition: Bool, _ message: @autoclosure () -> String) throws(FuzzFailure) {
    if !condition { throw FuzzFailure(message()) }
}
