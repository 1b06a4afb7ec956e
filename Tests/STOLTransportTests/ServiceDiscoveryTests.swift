import Foundation
import Glibc
import STOLTestFixtures
import STOLTransport
import XCTest

/// ``PrivateStackPaths`` and ``ServiceDiscovery``: where a user's private stack lives,
/// and which service a client uses — `STOL_RUNTIME_DIR`, else the user's running
/// private stack, else the system's — never taking sockets a crash left, nor a
/// directory someone else can enter, for the user's own.
final class ServiceDiscoveryTests: XCTestCase {
    private var root = ""

    override func setUpWithError() throws {
        root = try TemporaryDirectory.make(prefix: "stoldisc", mode: 0o700)
    }

    override func tearDown() {
        try? FileManager.default.removeItem(atPath: root)
    }

    func testPrivatePaths_followXDG_elseTmpAndHome() {
        let xdg = PrivateStackPaths.forUser(1000, environment: ["XDG_RUNTIME_DIR": "/run/user/1000", "XDG_STATE_HOME": "/data/state",
                                                                "XDG_CACHE_HOME": "/scratch/cache", "HOME": "/home/a"])
        XCTAssertEqual(xdg, PrivateStackPaths(runtimeDirectory: "/run/user/1000/stol", stateDirectory: "/data/state/stol",
                                              cacheDirectory: "/scratch/cache/stol"))
        // A Slurm job or a container: no login session, so no XDG_RUNTIME_DIR (or an empty or relative one).
        for runtime in [nil, "", "relative"] {
            var environment = ["HOME": "/home/a"]
            environment["XDG_RUNTIME_DIR"] = runtime
            XCTAssertEqual(PrivateStackPaths.forUser(1000, environment: environment),
                           PrivateStackPaths(runtimeDirectory: "/tmp/stol-1000", stateDirectory: "/home/a/.local/state/stol",
                                             cacheDirectory: "/home/a/.cache/stol"))
        }
    }

    func testDiscovery_takesTheVariable_thenARunningPrivateStack_thenTheSystem() throws {
        let environment = ["XDG_RUNTIME_DIR": root, "HOME": root]
        let runtime = root + "/stol"
        XCTAssertEqual(ServiceDiscovery.locate(environment: environment).origin, .system)
        XCTAssertEqual(ServiceDiscovery.locate(environment: environment).paths.taxonomySocket, "/run/stol/taxonomy.sock")

        // Sockets and a lock file nobody holds (a supervisor that crashed): still the system's.
        try PrivateStackPaths.preparePrivateDirectory(runtime)
        FileManager.default.createFile(atPath: runtime + "/serve.lock", contents: Data("4242\n".utf8))
        XCTAssertEqual(ServiceDiscovery.locate(environment: environment).origin, .system)

        // A supervisor holds the lock: the private stack.
        let lock = open(runtime + "/serve.lock", O_RDWR)
        XCTAssertEqual(flock(lock, LOCK_EX), 0)
        defer { close(lock) }
        let found = ServiceDiscovery.locate(environment: environment)
        XCTAssertEqual(found.origin, .privateStack)
        XCTAssertEqual(found.paths.taxonomySocket, runtime + "/taxonomy.sock")
        XCTAssertEqual(found.paths.stateDirectory, root + "/.local/state/stol")
        XCTAssertEqual(PrivateStackPaths.forUser(getuid(), environment: environment).runningSupervisor(), 4242)

        // The variable, or --runtime-dir, wins over it.
        XCTAssertEqual(ServiceDiscovery.locate(environment: environment.merging(["STOL_RUNTIME_DIR": "/x"]) { $1 }).origin, .explicit)
        XCTAssertEqual(ServiceDiscovery.locate(runtimeDirectory: "/y", environment: environment).paths.runtimeDirectory, "/y")

        // A directory others may enter is never the user's private stack, lock or not
        // (nor a socket listening in it, below).
        XCTAssertEqual(chmod(runtime, 0o755), 0)
        XCTAssertEqual(ServiceDiscovery.locate(environment: environment).origin, .system)
    }

    func testAListeningSocketWithoutSupervisor_isAServiceManagersStack() throws {
        let environment = ["XDG_RUNTIME_DIR": root, "HOME": root]
        let runtime = root + "/stol"
        try PrivateStackPaths.preparePrivateDirectory(runtime)
        // Bound but not listening: nothing serves.
        let bound = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let path = runtime + "/taxonomy.sock"
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in path.utf8.enumerated() { raw[index] = byte }
        }
        let length = socklen_t(MemoryLayout<sockaddr_un>.size)
        XCTAssertEqual(withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(bound, $0, length) } }, 0)
        defer { close(bound) }
        XCTAssertEqual(ServiceDiscovery.locate(environment: environment).origin, .system)
        XCTAssertEqual(listen(bound, 8), 0)
        XCTAssertEqual(ServiceDiscovery.locate(environment: environment).origin, .privateStack)
        XCTAssertNil(PrivateStackPaths.forUser(getuid(), environment: environment).runningSupervisor())
        XCTAssertEqual(chmod(runtime, 0o711), 0)
        XCTAssertEqual(ServiceDiscovery.locate(environment: environment).origin, .system)
    }

    func testPreparePrivateDirectory_makesIt0700_andRefusesOneThatIsNotTheUsersAlone() throws {
        let made = root + "/a/b/stol"
        try PrivateStackPaths.preparePrivateDirectory(made)
        var info = stat()
        XCTAssertEqual(lstat(made, &info), 0)
        XCTAssertEqual(info.st_mode & 0o777, 0o700)

        let open = root + "/open"
        XCTAssertEqual(mkdir(open, 0o700), 0)
        XCTAssertEqual(chmod(open, 0o770), 0)
        XCTAssertThrowsError(try PrivateStackPaths.preparePrivateDirectory(open)) { error in
            XCTAssertEqual(error as? PrivateDirectoryError, .openToOthers(path: open, mode: 0o40770))
        }
        let link = root + "/link"
        XCTAssertEqual(symlink(made, link), 0)
        XCTAssertThrowsError(try PrivateStackPaths.preparePrivateDirectory(link)) { error in
            XCTAssertEqual(error as? PrivateDirectoryError, .notADirectory(path: link))
        }
        XCTAssertThrowsError(try PrivateStackPaths.preparePrivateDirectory(made, uid: getuid() + 1)) { error in
            XCTAssertEqual(error as? PrivateDirectoryError, .notOwned(path: made, owner: getuid()))
        }
    }
}
