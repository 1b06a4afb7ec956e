import STOLFuzzTargets

#if FUZZING
/// libFuzzer's per-input entry point (`make fuzz` builds with `-sanitize=fuzzer -D FUZZING`).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer?, _ count: Int) -> CInt {
    FuzzRunner.fuzzOne(FavoritesFuzzTarget.self, start, count)
}
#endif

/// `fuzz-favorites`: libFuzzer on ``FavoritesFuzzTarget`` when built for fuzzing; in an
/// ordinary build, a replayer of the files it is given (a crash, a corpus).
@main
enum FavoritesFuzzer {
    static func main() {
        #if FUZZING
        FuzzRunner.libFuzzerMain(FavoritesFuzzTarget.self, fuzz)
        #else
        FuzzRunner.replayMain(FavoritesFuzzTarget.self)
        #endif
    }
}
