import CSTOLSocket
import Foundation
import Glibc
import STOLFormat
import STOLTestFixtures
import STOLTransport
import XCTest

/// `stol-client serve`: one user's stack without root or systemd, through the real
/// client and daemons. The client finds it with no `STOL_RUNTIME_DIR` (the order of
/// ``ServiceDiscovery``), each daemon starts on its first connection, a daemon that
/// dies is started again by the next request, stopping it leaves no process and no
/// socket, two users' stacks cannot reach each other, and an import trusts the
/// user's own keys.
final class PrivateStackIntegrationTests: XCTestCase {
    /// One user's private stack: a home and a runtime directory of its own, and the
    /// client run without `STOL_RUNTIME_DIR`, as that user would.
    final class User {
        let uid: UInt32?
        let home: String
        let environment: [String: String]
        var runtimeDirectory: String

        /// `runtime`: `XDG_RUNTIME_DIR` (nil: unset, so `/tmp/stol-UID`).
        init(root: String, name: String, uid: UInt32? = nil, runtime: String?) throws {
            self.uid = uid
            home = root + "/" + name
            try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o700])
            if let uid { XCTAssertEqual(chown(home, uid, uid), 0) }
            var environment = ["HOME": home, "PATH": "/usr/bin:/bin", "TMPDIR": home]
            if let runtime {
                try FileManager.default.createDirectory(atPath: runtime, withIntermediateDirectories: true,
                                                        attributes: [.posixPermissions: 0o700])
                if let uid { XCTAssertEqual(chown(runtime, uid, uid), 0) }
                environment["XDG_RUNTIME_DIR"] = runtime
                runtimeDirectory = runtime + "/stol"
            } else {
                runtimeDirectory = "/tmp/stol-\(uid ?? getuid())"
            }
            self.environment = environment
        }

        /// The real client, as this user, with exactly this user's environment (and `extra`).
        func client(_ arguments: [String], input: String? = nil, extra: [String: String] = [:],
                    timeoutSeconds: Double = 60) throws -> ProcessOutput {
            var command = StackHarness.binDirectory + "/stol-client"
            var all = arguments
            if let uid {
                all = ["--reuid=\(uid)", "--regid=\(uid)", "--clear-groups", command] + all
                command = "/usr/bin/setpriv"
            }
            return try ChildProcess.run(command, all, environment: environment.merging(extra) { $1 }, inheritEnvironment: false,
                                        input: input,
                                        timeoutSeconds: timeoutSeconds)
        }

        func socket(_ name: String) -> String { runtimeDirectory + "/\(name).sock" }

        /// The supervisor's pid, read from its lock file (nil when nothing holds the lock).
        var supervisor: pid_t? { PrivateStackPaths(runtimeDirectory: runtimeDirectory, stateDirectory: "").runningSupervisor(uid: uid ?? getuid()) }
    }

    private var root = ""
    private var database = ""
    private var started: [User] = []

    override func setUpWithError() throws {
        root = try StackHarness.makeDirectory(prefix: "stolpriv")
        // Readable by the test users: the harness's own database is in a directory of root's.
        database = root + "/db.sqlite"
        try FileManager.default.copyItem(atPath: try StackHarness.database(), toPath: database)
        chmod(database, 0o644)
    }

    override func tearDown() {
        for user in started where user.supervisor != nil { _ = try? user.client(["serve", "--stop"]) }
        try? FileManager.default.removeItem(atPath: root)
    }

    private func serveDetached(_ user: User, _ extra: [String] = []) throws -> ProcessOutput {
        started.append(user)
        return try user.client(["serve", "--database", database, "--detach"] + extra)
    }

    /// The pids of the supervisor's children, by their executable's name.
    private func daemons(of supervisor: pid_t) -> [String: pid_t] {
        var found: [String: pid_t] = [:]
        for entry in (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? [] {
            guard let pid = pid_t(entry),
                  let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
                  let close = stat.lastIndex(of: ")") else { continue }
            let fields = stat[stat.index(close, offsetBy: 2)...].split(separator: " ")
            guard fields.count > 1, fields[0] != "Z", pid_t(fields[1]) == supervisor else { continue }
            let name = stat[stat.index(after: stat.firstIndex(of: "(")!)..<close]
            found[String(name)] = pid
        }
        return found
    }

    func testServeDetached_answersEveryCommandOfTheUser_andStopLeavesNoProcessNorSocket() throws {
        let user = try User(root: root, name: "alice", runtime: root + "/xdg-alice")
        let start = try serveDetached(user)
        XCTAssertEqual(start.status, 0, start.stderr)
        XCTAssertTrue(start.stdout.contains(user.runtimeDirectory), start.stdout)
        let supervisor = try XCTUnwrap(user.supervisor, "no supervisor holds the lock after a detached start")
        // Nothing has asked yet: no daemon runs (each starts on its first connection).
        XCTAssertEqual(daemons(of: supervisor), [:])

        let lineage = try user.client(["lineage", "--no-header"], input: "9606\n")
        XCTAssertEqual(lineage.status, 0, lineage.stderr)
        XCTAssertTrue(lineage.stdout.contains("Homo sapiens"), lineage.stdout)
        XCTAssertEqual(Set(daemons(of: supervisor).keys), ["stol-taxonomyd"])
        let status = try user.client(["status"])
        XCTAssertTrue(status.stdout.contains("your private stack at \(user.runtimeDirectory)"), status.stdout)
        XCTAssertEqual(try user.client(["fav", "toggle", "9689"]).status, 0)
        XCTAssertTrue(try user.client(["fav", "list"]).stdout.contains("9689"))
        // Favourites live in the user's state directory.
        XCTAssertTrue(FileManager.default.fileExists(atPath: user.home + "/.local/state/stol/favorites"))
        // The tree's image, in the user's cache directory (written once the first start built the tree),
        // private to the user: every later start reads it instead of building the tree.
        let images = user.home + "/.cache/stol/taxonomy"
        XCTAssertTrue(waitUntil(seconds: 60) {
            ((try? FileManager.default.contentsOfDirectory(atPath: images)) ?? []).contains { $0.hasSuffix(".tree") }
        }, "no tree image in \(images)")
        var cacheInfo = stat()
        XCTAssertEqual(lstat(images, &cacheInfo), 0)
        XCTAssertEqual(cacheInfo.st_mode & 0o777, 0o700, "the tree images are open to others")
        for name in ["taxonomy", "favorites", "import", "verify"] {
            var info = stat()
            XCTAssertEqual(lstat(user.socket(name), &info), 0, name)
            XCTAssertEqual(info.st_mode & 0o777, 0o600, "\(name).sock is open to others")
        }

        // A job script that starts it every time: the same database running is success; another is refused.
        let again = try user.client(["serve", "--database", database, "--detach"])
        XCTAssertEqual(again.status, 0, again.stderr)
        XCTAssertTrue(again.stdout.contains("already runs on \(database) (pid \(supervisor)"), again.stdout)
        let other = root + "/other.sqlite"
        try FileManager.default.copyItem(atPath: database, toPath: other)
        let refused = try user.client(["serve", "--database", other, "--detach"])
        XCTAssertEqual(refused.status, 1)
        XCTAssertTrue(refused.stderr.contains("already runs (pid \(supervisor)"), refused.stderr)
        XCTAssertEqual(user.supervisor, supervisor)

        let children = daemons(of: supervisor)
        let stop = try user.client(["serve", "--stop"])
        XCTAssertEqual(stop.status, 0, stop.stderr)
        XCTAssertTrue(stop.stdout.contains("stopped your private stack (pid \(supervisor))"), stop.stdout)
        for (name, pid) in children { XCTAssertFalse(isRunning(pid), "\(name) outlived the stop") }
        XCTAssertNil(user.supervisor)
        for name in ["taxonomy", "favorites", "import", "verify"] {
            XCTAssertFalse(FileManager.default.fileExists(atPath: user.socket(name)), "\(name).sock left behind")
        }
        // The client now looks for the system service, not the stopped stack's sockets.
        let after = try user.client(["search", "lion"])
        XCTAssertEqual(after.status, 5)
        XCTAssertTrue(after.stderr.contains("/run/stol/taxonomy.sock"), after.stderr)
        XCTAssertEqual(try user.client(["serve", "--stop"]).stdout.contains("no private stack"), true)
    }

    func testADaemonThatDies_isStartedAgainByTheNextRequest_andTheFailureIsLogged() throws {
        let user = try User(root: root, name: "bob", runtime: root + "/xdg-bob")
        XCTAssertEqual(try serveDetached(user).status, 0)
        let supervisor = try XCTUnwrap(user.supervisor)
        XCTAssertEqual(try user.client(["taxon", "9606"]).status, 0)
        let first = try XCTUnwrap(daemons(of: supervisor)["stol-taxonomyd"])
        let watch = stol_pidfd_open(first)
        kill(first, SIGKILL)
        waitForExit(watch)
        let search = try user.client(["search", "lion"])
        XCTAssertEqual(search.status, 0, search.stderr)
        let second = try XCTUnwrap(daemons(of: supervisor)["stol-taxonomyd"])
        XCTAssertNotEqual(first, second)
        let log = try String(contentsOfFile: user.home + "/.local/state/stol/serve.log", encoding: .utf8)
        XCTAssertTrue(log.contains("stol-taxonomyd was killed by signal 9"), log)
    }

    /// A daemon that cannot start is started at most five times in ten seconds (as
    /// systemd's start limit), then its socket goes: the waiting client is refused
    /// at once instead of at its deadline, and the supervisor does not spin.
    func testADaemonThatCannotStart_isGivenUpAfterFiveTries_andTheClientIsRefused() throws {
        let user = try User(root: root, name: "frank", runtime: root + "/xdg-frank")
        let broken = root + "/broken"
        try FileManager.default.createDirectory(atPath: broken, withIntermediateDirectories: true)
        for name in ["taxonomy", "favorites", "import", "verify"] {
            let path = broken + "/stol-\(name)d"
            try "#!/bin/sh\necho cannot start >&2\nexit 1\n".write(toFile: path, atomically: true, encoding: .utf8)
            chmod(path, 0o755)
        }
        XCTAssertEqual(try serveDetached(user, ["--daemon-dir", broken]).status, 0)
        // No deadline of its own (--timeout 0): it ends only if the supervisor refuses it
        // (else the harness kills it after 60 s, and the status says so).
        let refused = try user.client(["taxon", "9606", "--timeout", "0"], timeoutSeconds: 60)
        XCTAssertEqual(refused.status, 5, refused.stderr)
        let log = try String(contentsOfFile: user.home + "/.local/state/stol/serve.log", encoding: .utf8)
        XCTAssertEqual(log.components(separatedBy: "stol-taxonomyd exited with status 1").count - 1, 5, log)
        XCTAssertTrue(log.contains("stol-taxonomyd failed 5 times in 10 s: not started again"), log)
        XCTAssertFalse(FileManager.default.fileExists(atPath: user.socket("taxonomy")))
        // The other daemons' sockets are still there.
        XCTAssertTrue(FileManager.default.fileExists(atPath: user.socket("favorites")))
    }

    func testForeground_printsWhereItListens_andSIGTERMStopsItsDaemons() throws {
        let user = try User(root: root, name: "carol", runtime: root + "/xdg-carol")
        var pipe: [Int32] = [0, 0]
        XCTAssertEqual(Glibc.pipe(&pipe), 0)
        let serve = try ChildProcess.spawn(StackHarness.binDirectory + "/stol-client", ["serve", "--database", database],
                                           environment: user.environment, inheritEnvironment: false,
                                           stdout: .descriptor(pipe[1]), stderr: .null, closing: [pipe[0]])
        close(pipe[1])
        defer { close(pipe[0]) }
        // The banner is printed once every socket listens: read it, no waiting by the clock.
        let banner = readLine(pipe[0])
        XCTAssertTrue(banner.contains("STOL private stack (pid \(serve.pid))"), banner)
        XCTAssertEqual(try user.client(["taxon", "9689"]).status, 0)
        XCTAssertEqual(try user.client(["fav", "count"]).status, 0)
        let children = daemons(of: serve.pid)
        XCTAssertEqual(Set(children.keys), ["stol-taxonomyd", "stol-favoritesd"])
        XCTAssertEqual(serve.terminate(), 0)
        for (name, pid) in children { XCTAssertFalse(isRunning(pid), "\(name) outlived its supervisor") }
        XCTAssertFalse(FileManager.default.fileExists(atPath: user.socket("taxonomy")))
    }

    /// Under a service manager (a systemd user manager's `stol.socket`; here
    /// `systemd-socket-activate`, which execs `serve` on the first connection): the
    /// client finds the stack by its listening socket before any supervisor runs, and
    /// the supervisor serves the four sockets it was passed, binding none.
    func testSocketActivatedByAServiceManager_servesThePassedSockets_andIsFoundBeforeItRuns() throws {
        let user = try User(root: root, name: "erin", runtime: root + "/xdg-erin")
        try FileManager.default.createDirectory(atPath: user.runtimeDirectory, withIntermediateDirectories: false,
                                                attributes: [.posixPermissions: 0o700])
        started.append(user)
        var arguments: [String] = []
        for name in ["taxonomy", "favorites", "import", "verify"] { arguments += ["-l", user.socket(name)] }
        arguments += ["--fdname=stol", StackHarness.binDirectory + "/stol-client", "serve", "--database", database]
        var pipe: [Int32] = [0, 0]
        XCTAssertEqual(Glibc.pipe(&pipe), 0)
        let manager = try ChildProcess.spawn("/usr/bin/systemd-socket-activate", arguments, environment: user.environment,
                                             inheritEnvironment: false, stdout: .null, stderr: .descriptor(pipe[1]),
                                             closing: [pipe[0]])
        close(pipe[1])
        defer {
            close(pipe[0])
            manager.terminate()
        }
        // "Listening on …" once per socket, on standard error, before it waits for a connection.
        var said = ""
        var byte: UInt8 = 0
        while said.components(separatedBy: "Listening on").count < 5, read(pipe[0], &byte, 1) == 1 {
            said.append(Character(UnicodeScalar(byte)))
        }
        XCTAssertNil(user.supervisor, "a supervisor runs before any connection")
        let status = try user.client(["status"])
        XCTAssertEqual(status.status, 0, status.stderr)
        XCTAssertTrue(status.stdout.contains("your private stack at \(user.runtimeDirectory)"), status.stdout)
        XCTAssertEqual(user.supervisor, manager.pid, "the manager's process did not become the supervisor")
        XCTAssertEqual(try user.client(["lineage", "--no-header"], input: "9606\n").stdout.contains("Homo sapiens"), true)
        XCTAssertEqual(Set(daemons(of: manager.pid).keys), ["stol-taxonomyd", "stol-importd"])
        XCTAssertEqual(manager.terminate(), 0)
        XCTAssertNil(user.supervisor)
    }

    func testTwoUsersStacks_cannotReachEachOther_andASquattedDirectoryIsRefused() throws {
        try XCTSkipUnless(StackHarness.isRoot, "needs root to play three users with setpriv")
        let alice = try User(root: root, name: "u61200", uid: 61200, runtime: nil)
        let mallory = try User(root: root, name: "u61201", uid: 61201, runtime: nil)
        let victim = try User(root: root, name: "u61202", uid: 61202, runtime: nil)
        for user in [alice, mallory, victim] { try? FileManager.default.removeItem(atPath: user.runtimeDirectory) }
        defer {
            // Stopped before its directory goes (tearDown finds a stack by its directory).
            _ = try? alice.client(["serve", "--stop"])
            for user in [alice, mallory, victim] { try? FileManager.default.removeItem(atPath: user.runtimeDirectory) }
        }

        let start = try serveDetached(alice)
        XCTAssertEqual(start.status, 0, start.stderr)
        XCTAssertEqual(try alice.client(["taxon", "9606"]).status, 0)
        // Another user naming Alice's sockets: refused by their directory's mode (exit 4).
        var env = mallory.environment
        env["STOL_RUNTIME_DIR"] = alice.runtimeDirectory
        let direct = try ChildProcess.run("/usr/bin/setpriv", ["--reuid=61201", "--regid=61201", "--clear-groups",
                                                               StackHarness.binDirectory + "/stol-client", "taxon", "9606"],
                                          environment: env, inheritEnvironment: false)
        XCTAssertEqual(direct.status, 4, "another user reached a private stack: \(direct.stdout) \(direct.stderr)")
        // Mallory's client does not take Alice's stack for its own.
        XCTAssertFalse(try mallory.client(["status"]).stdout.contains(alice.runtimeDirectory))

        // Mallory makes the victim's predictable directory first, open to all, with a lock she holds.
        XCTAssertEqual(mkdir(victim.runtimeDirectory, 0o777), 0)
        XCTAssertEqual(chown(victim.runtimeDirectory, 61201, 61201), 0)
        XCTAssertEqual(chmod(victim.runtimeDirectory, 0o777), 0)
        let squat = try serveDetached(victim)
        XCTAssertEqual(squat.status, 1)
        XCTAssertTrue(squat.stderr.contains("belongs to uid 61201"), squat.stderr)
        // And the victim's client never uses sockets in it.
        let status = try victim.client(["status"])
        XCTAssertFalse(status.stdout.contains(victim.runtimeDirectory), status.stdout)
    }

    func testImport_intoAPrivateStack_trustsTheUsersOwnKeys_andAVerifierRunsPerImport() throws {
        let user = try User(root: root, name: "dana", runtime: root + "/xdg-dana")
        let files = try releaseFiles(for: user)
        XCTAssertEqual(try serveDetached(user).status, 0)
        let imported = try user.client(["db", "import", files.trusted], timeoutSeconds: 120)
        XCTAssertEqual(imported.status, 0, imported.stderr + imported.stdout)
        XCTAssertTrue(FileManager.default.fileExists(atPath: user.home + "/.local/state/stol/databases/releases/2099.1.1.sqlite"))
        XCTAssertTrue(try user.client(["db", "list"]).stdout.contains("2099.1.1"))
        XCTAssertEqual(try user.client(["taxon", "9606", "--release", "2099.1.1"]).status, 0)

        // A file signed by a key the user does not trust changes nothing.
        let refused = try user.client(["db", "import", files.foreign], timeoutSeconds: 120)
        XCTAssertEqual(refused.status, 7, refused.stderr)
    }

    /// A release file named to `serve` is imported (checked whole by a verifier, with
    /// the user's keys) and made the default before a detached start returns; starting
    /// it again on the same file changes nothing; a file the user does not trust stops
    /// the stack again with the import's exit status.
    func testServeOnAReleaseFile_importsItAndMakesItTheDefault_beforeADetachedStartReturns() throws {
        let user = try User(root: root, name: "gina", runtime: root + "/xdg-gina")
        let files = try releaseFiles(for: user)
        started.append(user)
        // The bundled database it starts from: the client's default one, named by the daemons' variable.
        let bundled = ["STOL_BUNDLED_DB": database]
        let serve = try user.client(["serve", "--database", files.trusted, "--detach"], extra: bundled, timeoutSeconds: 120)
        XCTAssertEqual(serve.status, 0, serve.stdout + serve.stderr)
        XCTAssertTrue(serve.stdout.contains("release 2099.1.1"), serve.stdout)
        let status = try user.client(["status"])
        XCTAssertTrue(status.stdout.contains("release:          2099.1.1 (the default)"), status.stdout)
        let again = try user.client(["serve", "--database", files.trusted, "--detach"])
        XCTAssertEqual(again.status, 0, again.stderr)
        XCTAssertTrue(again.stdout.contains("already runs on \(files.trusted)"), again.stdout)
        XCTAssertEqual(try user.client(["serve", "--stop"]).status, 0)

        let refused = try user.client(["serve", "--database", files.foreign, "--detach"], extra: bundled, timeoutSeconds: 120)
        XCTAssertEqual(refused.status, 7, refused.stdout + refused.stderr)
        XCTAssertTrue(refused.stderr.contains("the private stack was stopped"), refused.stderr)
        XCTAssertNil(user.supervisor)
    }

    /// `stol-pipeline build` writes the tree's image beside the database it builds (or
    /// `tree-image` for one built without it): a private stack's very first start on the
    /// pair — a cluster node's first job, nothing in the user's cache — reads it instead
    /// of building the tree, says so in `diagnostics`, and writes no image of its own.
    func testAFirstStart_onADatabaseThePipelineBuilt_readsTheImageShippedBesideIt() throws {
        let pipeline = StackHarness.binDirectory + "/stol-pipeline"
        let built = root + "/shipped.sqlite", bare = root + "/bare.sqlite"
        let build = try StackHarness.run(pipeline, ["build", "--source", StackHarness.repositoryRoot + "/Pipeline/curated",
                                                    "--output", built, "--json"])
        XCTAssertEqual(build.status, 0, build.stderr)
        let report = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(build.stdout.utf8)) as? [String: Any])
        let image = try XCTUnwrap(report["tree_image"] as? [String: Any], build.stdout)
        XCTAssertEqual(image["path"] as? String, built + ".tree")
        XCTAssertGreaterThan(image["nodes"] as? Int ?? 0, 300)
        XCTAssertTrue(FileManager.default.fileExists(atPath: built + ".tree"))
        let without = try StackHarness.run(pipeline, ["build", "--source", StackHarness.repositoryRoot + "/Pipeline/curated",
                                                      "--output", bare, "--no-tree-image"])
        XCTAssertEqual(without.status, 0, without.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: bare + ".tree"))
        let later = try StackHarness.run(pipeline, ["tree-image", bare])
        XCTAssertEqual(later.status, 0, later.stderr)
        XCTAssertTrue(later.stdout.hasPrefix("wrote \(bare).tree ("), later.stdout)
        let notADatabase = try StackHarness.run(pipeline, ["tree-image", root + "/missing.sqlite"])
        XCTAssertEqual(notADatabase.status, 1)
        XCTAssertTrue(notADatabase.stderr.contains("cannot read the database"), notADatabase.stderr)
        for file in [built, built + ".tree"] { chmod(file, 0o644) }

        let user = try User(root: root, name: "hana", runtime: root + "/xdg-hana")
        started.append(user)
        let serve = try user.client(["serve", "--database", built, "--detach"])
        XCTAssertEqual(serve.status, 0, serve.stderr)
        let lineage = try user.client(["lineage", "--no-header", "--ranks", "all"], input: "9606\n")
        XCTAssertEqual(lineage.status, 0, lineage.stderr)
        XCTAssertTrue(lineage.stdout.contains("Homo sapiens"), lineage.stdout)
        var diagnostics = ""
        XCTAssertTrue(waitUntil(seconds: 60) {
            diagnostics = (try? user.client(["diagnostics"]).stdout) ?? ""
            return diagnostics.contains("tree read from:")
        }, diagnostics)
        XCTAssertTrue(diagnostics.contains("tree read from:   its image beside the database (\(built).tree)"), diagnostics)
        let images = user.home + "/.cache/stol/taxonomy"
        XCTAssertEqual(((try? FileManager.default.contentsOfDirectory(atPath: images)) ?? []).filter { $0.hasSuffix(".tree") }, [],
                       "the user's cache holds no image of its own")
    }

    // MARK: - Helpers

    /// The user's own trusted key directory (`~/.config/stol/keys`), a release file
    /// signed by that key (release 2099.1.1) and the same database signed by a key
    /// the user does not trust.
    private func releaseFiles(for user: User) throws -> (trusted: String, foreign: String) {
        let harness = try StackHarness()
        try CorpusKeys.writeTrustDirectory(user.home + "/.config/stol/keys", trusting: StackHarness.signingKey.publicKey)
        let signed = try harness.signedDatabase(name: "lab", release: "2099.1.1")
        let foreign = root + "/\(user.home.split(separator: "/").last!)-foreign.stol"
        try Data(StolCorpus.sign(signed.sqlite, key: Ed25519.PrivateKey.generate())).write(to: URL(fileURLWithPath: foreign))
        let trusted = root + "/\(user.home.split(separator: "/").last!)-lab.stol"
        try FileManager.default.copyItem(atPath: signed.stol, toPath: trusted)
        for file in [trusted, foreign] { chmod(file, 0o644) }
        return (trusted, foreign)
    }

    private func isRunning(_ pid: pid_t) -> Bool {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return false }
        return !stat[stat.index(close, offsetBy: 2)...].hasPrefix("Z")
    }

    /// Waits on a pidfd until its process has exited (30 s at most).
    private func waitForExit(_ pidfd: Int32) {
        guard pidfd >= 0 else { return }
        defer { close(pidfd) }
        var descriptor = pollfd(fd: pidfd, events: Int16(POLLIN), revents: 0)
        XCTAssertEqual(poll(&descriptor, 1, 30_000), 1, "the process did not exit")
    }

    /// Reads up to the first blank line or the end of the stream (the banner's lines).
    private func readLine(_ fd: Int32) -> String {
        var bytes: [UInt8] = []
        var byte: UInt8 = 0
        while read(fd, &byte, 1) == 1 {
            bytes.append(byte)
            if byte == UInt8(ascii: "\n"), String(decoding: bytes, as: UTF8.self).contains("stop it:") { break }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
