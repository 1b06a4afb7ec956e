import CSTOLSocket
import Foundation
import Glibc

/// Where one user's private stack (`stol-client serve`) keeps its sockets and state,
/// and how a client tells whether it runs. One definition for the supervisor that
/// binds the sockets and for every client that looks for them (the Python package
/// follows the same order: docs/private-stack.md).
///
/// - Sockets: `$XDG_RUNTIME_DIR/stol` when `XDG_RUNTIME_DIR` is set (systemd-logind
///   makes it per user, mode 0700), else `/tmp/stol-<uid>` (a Slurm job, a container,
///   a CI runner: no login session).
/// - State (installed releases, favourites): `$XDG_STATE_HOME/stol`, else
///   `~/.local/state/stol`.
///
/// Either directory is made mode 0700 when missing and refused when it is not the
/// user's own with no access for anyone else: another user who made
/// `/tmp/stol-<uid>` first (it is a predictable name in a shared directory) must not
/// get the sockets, nor be able to swap them.
public struct PrivateStackPaths: Sendable, Equatable {
    public var runtimeDirectory: String
    public var stateDirectory: String

    /// The supervisor's lock: held (`flock`) while it runs, so a client can tell a
    /// running private stack from sockets a crash left behind without connecting
    /// (a connection would start a daemon). Its content: the supervisor's pid, then the database it serves.
    public var lockFile: String { runtimeDirectory + "/serve.lock" }
    /// Held by a start of this user until its sockets listen (starts are taken in turn).
    public var startLockFile: String { runtimeDirectory + "/start.lock" }
    /// A daemon's socket: `<runtime-dir>/<name>.sock`, as ``RuntimePaths/socket(named:)``.
    public func socket(named name: String) -> String { runtimeDirectory + "/" + name + ".sock" }
    /// A daemon's output and errors, beside its socket.
    public func daemonLog(named name: String) -> String { runtimeDirectory + "/" + name + ".log" }
    /// The supervisor's log when it runs detached (`--detach`).
    public var logFile: String { stateDirectory + "/serve.log" }

    /// What the daemons may rebuild from the rest (the taxonomy server's tree images,
    /// `taxonomy/`): `$XDG_CACHE_HOME/stol`, else `~/.cache/stol`.
    public var cacheDirectory: String

    /// - Parameter cacheDirectory: by default `cache/` in the state directory.
    public init(runtimeDirectory: String, stateDirectory: String, cacheDirectory: String? = nil) {
        self.runtimeDirectory = runtimeDirectory
        self.stateDirectory = stateDirectory
        self.cacheDirectory = cacheDirectory ?? stateDirectory + "/cache"
    }

    /// The paths for `uid` from `environment` (XDG variables, `HOME`), else the
    /// user database's home directory.
    public static func forUser(_ uid: uid_t = getuid(),
                               environment: [String: String] = ProcessInfo.processInfo.environment) -> PrivateStackPaths {
        let runtime: String
        if let xdg = environment["XDG_RUNTIME_DIR"], xdg.hasPrefix("/") {
            runtime = xdg + "/stol"
        } else {
            runtime = "/tmp/stol-\(uid)"
        }
        let home = environment["HOME"].flatMap { $0.hasPrefix("/") ? $0 : nil } ?? homeDirectory(of: uid) ?? "/tmp/stol-\(uid)-home"
        func xdg(_ variable: String, else fallback: String) -> String {
            if let value = environment[variable], value.hasPrefix("/") { return value + "/stol" }
            return home + fallback
        }
        return PrivateStackPaths(runtimeDirectory: runtime, stateDirectory: xdg("XDG_STATE_HOME", else: "/.local/state/stol"),
                                 cacheDirectory: xdg("XDG_CACHE_HOME", else: "/.cache/stol"))
    }

    /// The supervisor running this stack now and the database it serves (the lock
    /// file's two lines), nil when none runs.
    public func running(uid: uid_t = getuid()) -> (pid: pid_t, database: String)? {
        guard let pid = runningSupervisor(uid: uid) else { return nil }
        let lines = ((try? String(contentsOfFile: lockFile, encoding: .utf8)) ?? "").split(separator: "\n")
        return (pid, lines.count > 1 ? String(lines[1]) : "")
    }

    /// The pid of the supervisor that runs this stack now, nil when none does (no
    /// lock file, or nobody holds its lock). Never connects to a socket.
    /// A directory another user made or can enter is never taken for the user's own:
    /// its sockets could be anyone's.
    public func runningSupervisor(uid: uid_t = getuid()) -> pid_t? {
        guard Self.isPrivateDirectory(runtimeDirectory, uid: uid) else { return nil }
        let fd = open(lockFile, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        // Taking the lock succeeds only when nobody holds it: then nothing runs (and it
        // is let go at once, with the descriptor).
        guard stol_lock_exclusive(fd, 0) != 0, errno == EWOULDBLOCK else { return nil }
        var bytes = [UInt8](repeating: 0, count: 32)
        let count = read(fd, &bytes, bytes.count)
        guard count > 0 else { return 0 }
        let firstLine = String(decoding: bytes[..<count], as: UTF8.self).split(separator: "\n").first ?? ""
        return pid_t(firstLine.trimmingCharacters(in: .whitespaces)) ?? 0
    }

    /// Whether this stack serves: its supervisor runs (``runningSupervisor(uid:)``), or a
    /// service manager listens on its taxonomy socket (a systemd user manager's
    /// `stol.socket`, which starts the supervisor on the next connection), in a
    /// directory that is the user's alone. Read from `/proc/net/unix`: nothing connects.
    public func isServing(uid: uid_t = getuid()) -> Bool {
        guard Self.isPrivateDirectory(runtimeDirectory, uid: uid) else { return false }
        return runningSupervisor(uid: uid) != nil || Self.isListening(socket(named: "taxonomy"))
    }

    /// Whether a socket listens at `path`: the file is a socket, and a line of
    /// `/proc/net/unix` with the listening flag (`__SO_ACCEPTCON`, 00010000) names it.
    /// (A socket still listening after its file was removed keeps its path there:
    /// without the file, nothing can connect to it.)
    public static func isListening(_ path: String) -> Bool {
        var status = stat()
        guard lstat(path, &status) == 0, (status.st_mode & S_IFMT) == S_IFSOCK else { return false }
        guard let handle = FileHandle(forReadingAtPath: "/proc/net/unix"),
              let data = try? handle.readToEnd() else { return false }
        try? handle.close()
        for line in String(decoding: data, as: UTF8.self).split(separator: "\n").dropFirst() {
            // Num RefCount Protocol Flags Type St Inode Path: the path is the rest after seven fields.
            let fields = line.split(separator: " ", maxSplits: 7, omittingEmptySubsequences: true)
            if fields.count == 8, fields[3] == "00010000", fields[7] == path { return true }
        }
        return false
    }

    /// The user's home directory from the user database (`getpwuid_r`).
    static func homeDirectory(of uid: uid_t) -> String? {
        var entry = passwd()
        var result: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 4096)
        guard getpwuid_r(uid, &entry, &buffer, buffer.count, &result) == 0, result != nil, let home = entry.pw_dir else {
            return nil
        }
        let path = String(cString: home)
        return path.hasPrefix("/") ? path : nil
    }
}

/// Why a private directory cannot be used.
public enum PrivateDirectoryError: Error, Equatable, CustomStringConvertible {
    case cannotCreate(path: String, errno: Int32)
    case notADirectory(path: String)
    case notOwned(path: String, owner: uid_t)
    case openToOthers(path: String, mode: mode_t)

    public var description: String {
        switch self {
        case .cannotCreate(let path, let code): "cannot create \(path): \(String(cString: strerror(code)))"
        case .notADirectory(let path): "\(path) is not a directory (a link or a file is in its place); remove it"
        case .notOwned(let path, let owner):
            "\(path) belongs to uid \(owner), not to you: another user made it first; remove it or set XDG_RUNTIME_DIR"
        case .openToOthers(let path, let mode):
            "\(path) has mode \(String(mode & 0o7777, radix: 8)): others may enter it; chmod 700 it or remove it"
        }
    }
}

extension PrivateStackPaths {
    /// Whether `path` is a directory (not a link) of `uid`'s with no access for group or others.
    public static func isPrivateDirectory(_ path: String, uid: uid_t = getuid()) -> Bool {
        var status = stat()
        return lstat(path, &status) == 0 && (status.st_mode & S_IFMT) == S_IFDIR && status.st_uid == uid
            && status.st_mode & 0o077 == 0
    }

    /// Makes `path` (and its missing parents, mode 0700) when missing, then checks it
    /// is a directory (not a link), owned by `uid`, with no access for group or others.
    public static func preparePrivateDirectory(_ path: String, uid: uid_t = getuid()) throws(PrivateDirectoryError) {
        var status = stat()
        if lstat(path, &status) != 0 {
            guard errno == ENOENT else { throw .cannotCreate(path: path, errno: errno) }
            let parent = (path as NSString).deletingLastPathComponent
            if !parent.isEmpty, parent != path, lstat(parent, &status) != 0 {
                // Parents of the state directory (~/.local/state) are the user's own to make.
                do { try FileManager.default.createDirectory(atPath: parent, withIntermediateDirectories: true,
                                                             attributes: [.posixPermissions: 0o700]) }
                catch { throw .cannotCreate(path: parent, errno: EACCES) }
            }
            if mkdir(path, 0o700) != 0, errno != EEXIST { throw .cannotCreate(path: path, errno: errno) }
            guard lstat(path, &status) == 0 else { throw .cannotCreate(path: path, errno: errno) }
        }
        guard (status.st_mode & S_IFMT) == S_IFDIR else { throw .notADirectory(path: path) }
        guard status.st_uid == uid else { throw .notOwned(path: path, owner: status.st_uid) }
        guard status.st_mode & 0o077 == 0 else { throw .openToOthers(path: path, mode: status.st_mode) }
    }
}
