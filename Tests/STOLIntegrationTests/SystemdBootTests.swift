import Foundation
import STOLTestFixtures
import XCTest

/// The installed system under a real systemd 252 as PID 1: `systemd/test-under-systemd.sh`
/// boots it in private namespaces on a throw-away copy of / with the tree `make
/// install-files DESTDIR=` made layered in and the Swift toolchain hidden, and checks
/// it as the users of a lab machine would: socket activation, one identity per
/// daemon, favourites, imports, the sandbox tried from inside each daemon, idle
/// exits, kills, the watchdog and the per-user connection limit.
/// Skipped where systemd cannot run as PID 1 (not root, no namespaces, no overlayfs),
/// and when no installed tree was staged (`make test` stages one).
final class SystemdBootTests: XCTestCase {
    func testInstalledSystem_bootsUnderRealSystemd_andHoldsAsTheLabsUsersUseIt() throws {
        guard let installRoot = ProcessInfo.processInfo.environment["STOL_INSTALL_ROOT"] else {
            throw XCTSkip("no installed tree to boot: `make test` stages one (make install-files DESTDIR=…) and sets STOL_INSTALL_ROOT")
        }
        // The script keeps its own 180 s deadline; nothing it does may reach the host.
        let progress = try BootScriptRun(
            script: "test-under-systemd.sh", argument: installRoot, timeoutSeconds: 240,
            hostPaths: ["/etc/passwd", "/etc/group", "/etc/systemd/system", "/usr/share/stol", "/usr/libexec/stol",
                        "/usr/lib/systemd/system/stol.target", "/var/lib/stol", "/run/stol", "/srv"]).run()
        print(progress)
    }
}
