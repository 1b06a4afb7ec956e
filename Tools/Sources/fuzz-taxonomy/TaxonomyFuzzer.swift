import STOLFuzzTargets

#if FUZZING
/// libFuzzer's per-input entry point (`make fuzz` builds with `-sanitize=fuzzer -D FUZZING`).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer?, _ count: Int) -> CInt {
    FuzzRunner.fuzzOne(TaxonomyFuzzTarget.self, start, count)
}
#endif

/// `fuzz-taxonomy`: libFuzzer on ``TaxonomyFuzzTarget`` when built for fuzzing; in an
/// ordinary build, a replayer of the files it is given (a crash, a corpus).
@main
enum TaxonomyFuzzer {
    static func main() {
        #if FUZZING
        FuzzRunner.libFuzzerMain(TaxonomyFuzzTarget.self, fuzz)
        #else
        FuzzRunner.replayMain(TaxonomyFuzzTarget.self)
        #endif
    }
}
