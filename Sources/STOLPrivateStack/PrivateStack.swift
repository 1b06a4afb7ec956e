import CSTOLSocket
import Foundation
import Glibc
import STOLTransport

/// What `stol-client serve` needs besides the supervisor: where the daemons and the
/// bundled database are (beside the client, as a wheel, a tarball or `make build`
/// lays them out, else where the Debian package puts them), the daemons' command
/// lines and environment, a detached start that returns once the sockets listen,
/// and the stop.
public enum PrivateStack {
    /// The daemons, in the order they are bound.
    public static let serviceNames = ["taxonomy", "favorites", "import", "verify"]

    /// How long the daemons (and then the supervisor) wait without a request before
    /// they exit (`--idle-exit`): a cluster node does not keep a stack nobody uses.
    public static let defaultIdleExitSeconds = 900

    /// The running executable's file, links resolved (`/proc/self/exe`).
    public static func ownExecutable() -> String? {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let count = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        return count > 0 ? String(cString: buffer) : nil
    }

    /// The first directory holding all four daemons: `explicit`, beside the client,
    /// `../libexec/stol` from it, then the Debian package's `/usr/libexec/stol`.
    public static func daemonDirectory(explicit: String?, clientDirectory: String?) -> String? {
        var candidates: [String] = []
        if let explicit { return hasDaemons(explicit) ? explicit : nil }
        if let clientDirectory {
            candidates += [clientDirectory, clientDirectory + "/../libexec/stol"]
        }
        candidates.append("/usr/libexec/stol")
        return candidates.first(where: hasDaemons).map { ($0 as NSString).standardizingPath }
    }

    private static func hasDaemons(_ directory: String) -> Bool {
        serviceNames.allSatisfy { access(directory + "/stol-\($0)d", X_OK) == 0 }
    }

    /// The bundled database when none is named: `$STOL_BUNDLED_DB` (as for the daemons),
    /// else `../share/stol/bundled.sqlite` from the client (a wheel or tarball), else
    /// the Debian package's.
    public static func defaultDatabase(clientDirectory: String?,
                                       environment: [String: String] = ProcessInfo.processInfo.environment) -> String? {
        var candidates: [String] = []
        if let variable = environment["STOL_BUNDLED_DB"], variable.hasPrefix("/") { candidates.append(variable) }
        if let clientDirectory { candidates.append(clientDirectory + "/../share/stol/bundled.sqlite") }
        candidates.append(RuntimePaths.installedBundledDatabase)
        return candidates.first { access($0, R_OK) == 0 }.map { ($0 as NSString).standardizingPath }
    }

    /// Whether `path` is an SQLite database (served as it is) rather than a release
    /// file (imported into the stack's state, then made its default): its first 16
    /// bytes are SQLite's header string.
    public static func isSQLiteDatabase(_ path: String) -> Bool {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var header = [UInt8](repeating: 0, count: 16)
        return read(fd, &header, 16) == 16 && header == Array("SQLite format 3".utf8) + [0]
    }

    /// The arguments of `stol-client` that import `file` into the private stack at
    /// `runtimeDirectory` and make its release the default (`db import --activate`;
    /// a release already installed with exactly this content changes nothing).
    public static func importArguments(_ file: String, runtimeDirectory: String) -> [String] {
        ["db", "import", "--activate", "--runtime-dir", runtimeDirectory, file]
    }

    /// Runs `executable` with `arguments` to its end, its output on this process's
    /// standard output and error; its exit status (128 + the signal that ended it).
    public static func run(_ executable: String, arguments: [String]) throws(PrivateStackError) -> Int32 {
        let pid: pid_t
        do {
            pid = try ServiceSpawner.spawn(executable, arguments: arguments, environment: ProcessInfo.processInfo.environment,
                                           descriptors: [], listenNames: nil, log: -1)
        } catch {
            throw .system(error.description, error.errno)
        }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        return WaitStatus(status).code
    }

    /// The user's own trusted keys when none are named: `$XDG_CONFIG_HOME/stol/keys`
    /// (else `~/.config/stol/keys`) when it exists; nil leaves the system's
    /// (`/usr/share/stol/keys`, `/etc/stol/keys`).
    public static func defaultTrustedKeys(environment: [String: String]) -> String? {
        let config = environment["XDG_CONFIG_HOME"].flatMap { $0.hasPrefix("/") ? $0 : nil }
            ?? environment["HOME"].map { $0 + "/.config" }
        guard let config else { return nil }
        let keys = config + "/stol/keys"
        return FileManager.default.fileExists(atPath: keys) ? keys : nil
    }

    /// The supervisor's configuration: the four daemons of `daemons`, serving
    /// `database`, the user owning them all.
    public static func configuration(paths: PrivateStackPaths, daemons: String, database: String, trustedKeys: String?,
                                     idleExitSeconds: Int, logLevel: String,
                                     environment: [String: String]) -> ActivationSupervisor.Configuration {
        let idle = idleExitSeconds > 0 ? ["--idle-exit", "\(idleExitSeconds)"] : []
        let services = [
            ActivationSupervisor.Service(name: "taxonomy", executable: daemons + "/stol-taxonomyd", arguments: idle),
            ActivationSupervisor.Service(name: "favorites", executable: daemons + "/stol-favoritesd", arguments: idle),
            ActivationSupervisor.Service(name: "import", executable: daemons + "/stol-importd",
                                         arguments: idle + ["--admin-uid", "\(getuid())"]),
            ActivationSupervisor.Service(name: "verify", executable: daemons + "/stol-verifyd", arguments: [],
                                         acceptsEachConnection: true),
        ]
        var daemonEnvironment = [
            "STOL_RUNTIME_DIR": paths.runtimeDirectory,
            "STOL_STATE_DIR": paths.stateDirectory,
            "STOL_BUNDLED_DB": database,
            "STOL_LOG_LEVEL": logLevel,
            // As systemd's CacheDirectory= hands it over: the taxonomy server's tree images.
            "CACHE_DIRECTORY": paths.cacheDirectory + "/taxonomy",
            "PATH": "/usr/bin:/bin",
        ]
        if let trustedKeys { daemonEnvironment["STOL_TRUSTED_KEY"] = trustedKeys }
        for passed in ["TMPDIR", "STOL_ALLOW_FORMAT_1", "LANG"] {
            if let value = environment[passed], !value.isEmpty { daemonEnvironment[passed] = value }
        }
        return ActivationSupervisor.Configuration(paths: paths, services: services, environment: daemonEnvironment,
                                                  idleExit: idleExitSeconds > 0 ? .seconds(idleExitSeconds) : nil)
    }

    /// Starts `executable` with `arguments` (a `serve` without `--detach`, with
    /// `--ready-fd 3`) in a session of its own, its output to `log`, and returns
    /// once it says its sockets listen; or throws what it printed instead.
    public static func startDetached(executable: String, arguments: [String], log: String) throws(PrivateStackError) {
        var pipe: [Int32] = [-1, -1]
        guard stol_pipe(&pipe) == 0 else { throw .system("pipe", errno) }
        let logFD = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard logFD >= 0 else {
            close(pipe[0]); close(pipe[1])
            throw .system("cannot open \(log)", errno)
        }
        let logStart = lseek(logFD, 0, SEEK_END)
        let pid: pid_t
        do {
            pid = try ServiceSpawner.spawn(executable, arguments: arguments + ["--ready-fd", "3"],
                                           environment: ProcessInfo.processInfo.environment, descriptors: [pipe[1]],
                                           listenNames: nil, log: logFD, newSession: true)
        } catch {
            close(pipe[0]); close(pipe[1]); close(logFD)
            throw .system(error.description, error.errno)
        }
        close(pipe[1])
        close(logFD)
        defer { close(pipe[0]) }
        var byte: UInt8 = 0
        var count: Int
        repeat { count = read(pipe[0], &byte, 1) } while count < 0 && errno == EINTR
        if count == 1 { return }
        // Ended without saying it is ready: collect it, and show what it wrote.
        var status: Int32 = 0
        _ = waitpid(pid, &status, 0)
        let handle = FileHandle(forReadingAtPath: log)
        try? handle?.seek(toOffset: UInt64(max(0, logStart)))
        let written = (try? handle?.readToEnd()).map { String(decoding: $0 ?? Data(), as: UTF8.self) } ?? ""
        try? handle?.close()
        throw .startFailed(written.trimmingCharacters(in: .whitespacesAndNewlines))
    }

    /// Takes the user's start lock (`<sockets>/start.lock`, waiting for it): starts of
    /// one user are taken in turn, so that parallel jobs of a workflow that each start
    /// the stack see the first one running instead of racing it for the supervisor's
    /// lock. Held until the start has its sockets listening, or has failed; closing
    /// the descriptor lets it go.
    public static func takeStartLock(_ paths: PrivateStackPaths) throws(PrivateStackError) -> Int32 {
        do {
            try PrivateStackPaths.preparePrivateDirectory(paths.runtimeDirectory)
        } catch {
            throw .directory(error)
        }
        let path = paths.startLockFile
        let lock = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard lock >= 0 else { throw .system("cannot open \(path)", errno) }
        guard stol_lock_exclusive(lock, 1) == 0 else {
            let code = errno
            close(lock)
            throw .system("cannot lock \(path)", code)
        }
        return lock
    }

    /// Stops the user's running private stack: SIGTERM to its supervisor, which stops
    /// the daemons, and waits until it has exited. Nil when none ran; else its pid.
    public static func stop(paths: PrivateStackPaths, timeout: Duration = .seconds(30)) throws(PrivateStackError) -> pid_t? {
        guard let pid = paths.runningSupervisor(), pid > 0 else { return nil }
        let handle = stol_pidfd_open(pid)
        guard handle >= 0 else {
            if errno == ESRCH { return pid }
            throw .system("cannot watch pid \(pid)", errno)
        }
        defer { close(handle) }
        guard kill(pid, SIGTERM) == 0 else {
            if errno == ESRCH { return pid }
            throw .system("cannot stop pid \(pid)", errno)
        }
        var descriptor = pollfd(fd: handle, events: Int16(POLLIN), revents: 0)
        let milliseconds = Int32(timeout.components.seconds * 1000)
        var ready: Int32
        repeat { ready = poll(&descriptor, 1, milliseconds) } while ready < 0 && errno == EINTR
        guard ready == 1 else { throw .stopTimedOut(pid) }
        return pid
    }
}
