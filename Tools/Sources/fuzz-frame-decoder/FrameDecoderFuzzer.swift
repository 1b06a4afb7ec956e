import STOLFuzzTargets

#if FUZZING
/// libFuzzer's per-input entry point (`make fuzz` builds with `-sanitize=fuzzer -D FUZZING`).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer?, _ count: Int) -> CInt {
    FuzzRunner.fuzzOne(FrameDecoderFuzzTarget.self, start, count)
}
#endif

/// `fuzz-frame-decoder`: libFuzzer on ``FrameDecoderFuzzTarget`` when built for fuzzing; in an
/// ordinary build, a replayer of the files it is given (a crash, a corpus).
@main
enum FrameDecoderFuzzer {
    static func main() {
        #if FUZZING
        FuzzRunner.libFuzzerMain(FrameDecoderFuzzTarget.self, fuzz)
        #else
        FuzzRunner.replayMain(FrameDecoderFuzzTarget.self)
        #endif
    }
}
