import Foundation
import STOLTestFixtures
import XCTest

/// The Debian packages under a real systemd 252 as PID 1, as an administrator and the
/// lab's users meet them and as piuparts checks them: `systemd/test-deb-under-systemd.sh`
/// boots a throw-away copy of / with no STOL installed, installs `stol` and `python3-stol`
/// with apt (offline), uses them as two users (each their own favourites, an administrator's
/// import of a signed reference, Python's `stol`), upgrades to a newer build (favourites,
/// the installed reference and the operator's configuration survive; the running daemons
/// restart on the new binaries), removes (state stays) and purges (state, configuration,
/// users and groups gone; no file left behind).
/// Skipped where systemd cannot run as PID 1 (not root, no namespaces, no overlayfs), and
/// when no packages were built (`make test` builds two versions into STOL_DEB_DIR).
final class SystemdDebianPackageTests: XCTestCase {
    func testDebianPackage_installsUpgradesRemovesAndPurges_underRealSystemd() throws {
        guard let debDirectory = ProcessInfo.processInfo.environment["STOL_DEB_DIR"] else {
            throw XCTSkip("no Debian packages to install: `make test` builds two versions (make deb-package) and sets STOL_DEB_DIR")
        }
        // The script keeps its own 420 s deadline; nothing it does may reach the host: no package installed there.
        let progress = try BootScriptRun(
            script: "test-deb-under-systemd.sh", argument: debDirectory, timeoutSeconds: 480,
            hostPaths: ["/etc/passwd", "/etc/group", "/etc/systemd/system", "/etc/stol", "/usr/share/stol", "/usr/libexec/stol",
                        "/usr/lib/systemd/system/stol.target", "/var/lib/stol", "/run/stol", "/srv"]).run()
        print(progress)
    }
}
