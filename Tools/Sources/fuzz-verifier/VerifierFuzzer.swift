import STOLFuzzTargets

#if FUZZING
/// libFuzzer's per-input entry point (`make fuzz` builds with `-sanitize=fuzzer -D FUZZING`).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer?, _ count: Int) -> CInt {
    FuzzRunner.fuzzOne(VerifierFuzzTarget.self, start, count)
}
#endif

/// `fuzz-verifier`: libFuzzer on ``VerifierFuzzTarget`` when built for fuzzing; in an
/// ordinary build, a replayer of the files it is given (a crash, a corpus).
@main
enum VerifierFuzzer {
    static func main() {
        #if FUZZING
        FuzzRunner.libFuzzerMain(VerifierFuzzTarget.self, fuzz)
        #else
        FuzzRunner.replayMain(VerifierFuzzTarget.self)
        #endif
    }
}
