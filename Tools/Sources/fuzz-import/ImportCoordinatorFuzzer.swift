import STOLFuzzTargets

#if FUZZING
/// libFuzzer's per-input entry point (`make fuzz` builds with `-sanitize=fuzzer -D FUZZING`).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer?, _ count: Int) -> CInt {
    FuzzRunner.fuzzOne(ImportCoordinatorFuzzTarget.self, start, count)
}
#endif

/// `fuzz-import`: libFuzzer on ``ImportCoordinatorFuzzTarget`` when built for fuzzing; in an
/// ordinary build, a replayer of the files it is given (a crash, a corpus).
@main
enum ImportCoordinatorFuzzer {
    static func main() {
        #if FUZZING
        FuzzRunner.libFuzzerMain(ImportCoordinatorFuzzTarget.self, fuzz)
        #else
        FuzzRunner.replayMain(ImportCoordinatorFuzzTarget.self)
        #endif
    }
}
