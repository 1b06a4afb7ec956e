import Foundation
import Glibc

/// A test-only switch that stops a daemon at a named stage so that a fault
/// injection test can kill it exactly there.
///
/// Armed only when `STOL_TEST_PAUSE_AT` names stages (comma-separated, e.g.
/// `verify:decompressing,import:staged`) and `STOL_TEST_PAUSE_FILE` names a file.
/// The file is opened at start (before the verifier sandboxes itself); reaching
/// an armed stage appends `<stage> <pid>\n` to it and blocks the thread for good:
/// only a signal ends the process. Unarmed, ``reached(_:)`` costs one check of an
/// empty set.
///
/// Compiled in only with `STOL_TEST_HOOKS` (Package.swift defines it for debug
/// builds; `make test`'s build of the tests passes it and is installed for the systemd boot test). The installed release build keeps this type disarmed for good: its
/// callers compile unchanged, and neither variable's name is in its binaries
/// (`Tests/tools/check_binaries.py` checks).
///
/// Stages: `verify:checking-header`, `verify:verifying-checksum`,
/// `verify:verifying-signature`, `verify:decompressing`, `verify:checking-database`,
/// `verify:sending`; `import:received`, `import:receiving`, `import:staged`
/// (written and fsynced, not renamed), `import:installed` (renamed, not answered).
public final class TestPausePoints: Sendable {
    #if STOL_TEST_HOOKS
    public static let stagesVariable = "STOL_TEST_PAUSE_AT"
    public static let fileVariable = "STOL_TEST_PAUSE_FILE"
    #endif

    private let stages: Set<String>
    private let descriptor: Int32

    public static let disarmed = TestPausePoints(stages: [], descriptor: -1)

    private init(stages: Set<String>, descriptor: Int32) {
        self.stages = stages
        self.descriptor = descriptor
    }

    /// The pause points the environment arms; always ``disarmed`` without `STOL_TEST_HOOKS`.
    public static func fromEnvironment(_ environment: [String: String] = ProcessInfo.processInfo.environment) -> TestPausePoints {
        #if STOL_TEST_HOOKS
        guard let list = environment[stagesVariable], !list.isEmpty, let path = environment[fileVariable], !path.isEmpty else {
            return .disarmed
        }
        let fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o644)
        guard fd >= 0 else { return .disarmed }
        return TestPausePoints(stages: Set(list.split(separator: ",").map(String.init)), descriptor: fd)
        #else
        return .disarmed
        #endif
    }

    public var isArmed: Bool { !stages.isEmpty }
    public var armedStages: [String] { stages.sorted() }

    /// Blocks forever if `stage` is armed.
    public func reached(_ stage: String) {
        guard stages.contains(stage) else { return }
        let line = Array("\(stage) \(getpid())\n".utf8)
        _ = line.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        while true { _ = Glibc.pause() }
    }
}
