import Foundation
import Glibc

/// What the `fuzz-*` executables call: libFuzzer's per-input entry point, and the
/// replayer an ordinary build makes of them.
public enum FuzzRunner {
    /// The target's one instance; a set-up failure ends the process (exit 2) saying why,
    /// since a fuzzer that cannot start must not look like a fuzzer that found nothing.
    public static func load<T: FuzzTarget>(_ type: T.Type) -> T {
        do {
            return try T.make()
        } catch {
            FileHandle.standardError.write(Data("\(T.name): set-up failed: \(error)\n".utf8))
            exit(2)
        }
    }

    /// Whether this process's target reads request streams (for the custom mutator).
    nonisolated(unsafe) static var inputIsRequestStream = false

    /// The target instance of this process, per target type (libFuzzer calls from one thread).
    nonisolated(unsafe) private static var loaded: [ObjectIdentifier: AnyObject] = [:]

    /// The body of `LLVMFuzzerTestOneInput`: a broken invariant aborts, which libFuzzer
    /// reports as a crash and saves the input as `crash-<sha1>`.
    public static func fuzzOne<T: FuzzTarget>(_ type: T.Type, _ start: UnsafeRawPointer?, _ count: Int) -> CInt {
        let target = loaded[ObjectIdentifier(type)] as? T ?? {
            let made = load(T.self)
            loaded[ObjectIdentifier(type)] = made
            return made
        }()
        let input = start.map { [UInt8](UnsafeRawBufferPointer(start: $0, count: count)) } ?? []
        do {
            try target.run(input)
        } catch {
            FileHandle.standardError.write(Data("\(T.name): invariant broken: \(error)\n".utf8))
            abort()
        }
        return 0
    }

    /// libFuzzer's command line for `T`: `arguments` (the program's name first), with
    /// the target's ``FuzzTarget/maximumInputBytes`` as `-max_len` unless one is given.
    public static func libFuzzerArguments<T: FuzzTarget>(_ type: T.Type, _ arguments: [String]) -> [String] {
        guard !arguments.contains(where: { $0.hasPrefix("-max_len=") }) else { return arguments }
        var arguments = arguments
        arguments.insert("-max_len=\(T.maximumInputBytes)", at: min(1, arguments.count))
        return arguments
    }

    #if FUZZING
    /// Hands the process to libFuzzer's driver (`-runs`, `-max_total_time`, corpus
    /// directories: its usual command line), which calls `testOneInput` per input.
    ///
    /// SwiftPM links every executable with its entry point renamed (`main` is defined
    /// as `<module>_main`, so that tests can link the module), which leaves no room for
    /// libFuzzer's own `main`; this is the documented way in instead.
    public static func libFuzzerMain<T: FuzzTarget>(_ type: T.Type,
                                                    _ testOneInput: @convention(c) (UnsafeRawPointer?, Int) -> CInt) -> Never {
        inputIsRequestStream = T.inputIsRequestStream
        let arguments = libFuzzerArguments(T.self, CommandLine.arguments)
        // libFuzzer keeps argv for the life of the process: the copies are never freed.
        let pointers: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        let base = UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>.allocate(capacity: pointers.count)
        base.initialize(from: pointers, count: pointers.count)
        var argc = CInt(arguments.count)
        var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = base
        exit(LLVMFuzzerRunDriver(&argc, &argv, testOneInput))
    }
    #endif

    /// The replayer: `fuzz-x FILE|DIR…` runs every file (a directory: each file in it,
    /// in name order) through the target and exits 1 at the first broken invariant;
    /// `fuzz-x --write-seeds DIR` writes the target's generated seeds into DIR.
    public static func replayMain<T: FuzzTarget>(_ type: T.Type) -> Never {
        let arguments = Array(CommandLine.arguments.dropFirst())
        if arguments.first == "--write-seeds", arguments.count == 2 {
            do {
                for seed in try T.generatedSeeds() {
                    try Data(seed.bytes).write(to: URL(fileURLWithPath: arguments[1] + "/" + seed.name))
                    print("\(T.name): wrote \(seed.name) (\(seed.bytes.count) bytes)")
                }
                exit(0)
            } catch {
                FileHandle.standardError.write(Data("\(T.name): cannot write the seeds: \(error)\n".utf8))
                exit(2)
            }
        }
        guard !arguments.isEmpty, !arguments.contains(where: { $0.hasPrefix("-") }) else {
            print("""
                usage: \(T.name) FILE|DIRECTORY…     replay inputs (a crash-* file, a corpus) through the target
                       \(T.name) --write-seeds DIR   write the target's generated seed inputs into DIR
                This is the replayer of an ordinary build; `make fuzz` builds the libFuzzer binary.
                """)
            exit(arguments.isEmpty ? 64 : 0)
        }
        do {
            let files = try inputFiles(arguments)
            let target = load(T.self)
            for file in files {
                let input = try [UInt8](Data(contentsOf: URL(fileURLWithPath: file)))
                do {
                    try target.run(input)
                } catch {
                    print("\(T.name): \(file): invariant broken: \(error)")
                    exit(1)
                }
            }
            print("\(T.name): \(files.count) inputs replayed, every invariant held")
            exit(0)
        } catch {
            FileHandle.standardError.write(Data("\(T.name): \(error)\n".utf8))
            exit(2)
        }
    }

    /// The files named, with each directory replaced by the files in it (name order,
    /// hidden files such as `.gitkeep` left out).
    public static func inputFiles(_ paths: [String]) throws -> [String] {
        var files: [String] = []
        for path in paths {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
                throw FuzzFailure("no such file or directory: \(path)")
            }
            if isDirectory.boolValue {
                files += try FileManager.default.contentsOfDirectory(atPath: path)
                    .filter { !$0.hasPrefix(".") }.sorted().map { path + "/" + $0 }
            } else {
                files.append(path)
            }
        }
        return files
    }
}

#if FUZZING
/// libFuzzer's C entry (`int LLVMFuzzerRunDriver(int *, char ***, int (*)(const uint8_t *, size_t))`),
/// in `libclang_rt.fuzzer` that `-sanitize=fuzzer` links.
@_silgen_name("LLVMFuzzerRunDriver")
private func LLVMFuzzerRunDriver(_ argc: UnsafeMutablePointer<CInt>,
                                 _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
                                 _ callback: @convention(c) (UnsafeRawPointer?, Int) -> CInt) -> CInt
#endif
