import Dispatch
import Foundation
import Logging

/// Test-only: with `STOL_TEST_HANG_ON_SIGUSR2=1`, SIGUSR2 blocks one serving loop
/// for good (an event loop, or the blocking server's accept loop), as a handler
/// stuck in a loop would, so that tests can see the watchdog stop pinging and
/// systemd kill and restart the daemon.
///
/// Compiled in only with `STOL_TEST_HOOKS` (debug builds, and `make test`'s build of the
/// tests, which it installs for the systemd boot test); without it
/// ``installIfRequested(logger:hang:)`` does nothing and the variable's name is
/// not in the binary (`Tests/tools/check_binaries.py` checks).
package enum ServingLoopHangHook {
    #if STOL_TEST_HOOKS
    static let variable = "STOL_TEST_HANG_ON_SIGUSR2"
    #endif

    /// Calls `hang` on SIGUSR2 when armed; keep the returned source alive.
    package static func installIfRequested(logger: Logger, hang: @escaping @Sendable () -> Void) -> (any DispatchSourceSignal)? {
        #if STOL_TEST_HOOKS
        guard ProcessInfo.processInfo.environment[variable] == "1" else { return nil }
        signal(SIGUSR2, SIG_IGN)
        let source = DispatchSource.makeSignalSource(signal: SIGUSR2)
        source.setEventHandler {
            logger.warning("test hook: blocking a serving loop")
            hang()
        }
        source.resume()
        // Said once the source listens: a test that waits for this line before sending
        // SIGUSR2 cannot lose it (ignored before the source was resumed).
        logger.warning("test hook armed: SIGUSR2 blocks a serving loop")
        return source
        #else
        return nil
        #endif
    }
}
