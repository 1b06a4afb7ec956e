import CSTOLSocket
import Foundation
import Glibc
import STOLTransport

/// One user's STOL, without root or systemd: what `systemd` and the units do for the
/// system service, done by one small process of the user's (`stol-client serve`).
/// It binds the four sockets in the user's private runtime directory
/// (``PrivateStackPaths``), starts each daemon on the first connection to its
/// socket with the listening socket handed over as systemd hands it (`LISTEN_FDS`),
/// a verifier per connection as `Accept=yes` does, starts a daemon again when a
/// connection comes after it exited (the daemons exit when idle), and ends when
/// told to (SIGTERM, SIGINT, SIGHUP: the daemons are stopped first) or when nothing
/// has run for its idle time.
///
/// It runs no request itself and reads no database: the daemons are the same
/// binaries, with the same protocol and their own sandboxes, as under systemd.
public final class ActivationSupervisor {
    /// One daemon and how it is activated.
    public struct Service: Sendable {
        public var name: String
        public var executable: String
        public var arguments: [String]
        /// One process per connection (the verifier), as a unit's `Accept=yes`.
        public var acceptsEachConnection: Bool

        public init(name: String, executable: String, arguments: [String], acceptsEachConnection: Bool = false) {
            self.name = name
            self.executable = executable
            self.arguments = arguments
            self.acceptsEachConnection = acceptsEachConnection
        }
    }

    public struct Configuration: Sendable {
        public var paths: PrivateStackPaths
        public var services: [Service]
        /// Exactly the daemons' environment (the supervisor's own is not passed on).
        public var environment: [String: String]
        /// Ends the supervisor after this long with no daemon running (nil: never).
        public var idleExit: Duration?
        /// A daemon failing this often within ``startLimitInterval`` is not started again
        /// (systemd's `StartLimitBurst=`): a daemon that cannot start must not spin.
        public var startLimitBurst = 5
        public var startLimitInterval: Duration = .seconds(10)
        /// Listening sockets a service manager passed (a systemd user manager's
        /// `stol.socket`), by the path each is bound to (``passedByPath(_:)``): served
        /// instead of binding, and left in place at the stop (they are the manager's,
        /// which starts the supervisor again on the next connection).
        public var passedListeners: [String: Int32] = [:]
        /// What the stack serves, as the user named it (the lock file's second line,
        /// ``PrivateStackPaths/running(uid:)``): the database, or the release file
        /// imported into it. By default the daemons' `STOL_BUNDLED_DB`.
        public var served: String?

        public init(paths: PrivateStackPaths, services: [Service], environment: [String: String], idleExit: Duration?) {
            self.paths = paths
            self.services = services
            self.environment = environment
            self.idleExit = idleExit
        }
    }

    private struct Slot {
        let service: Service
        /// -1 once closed (a daemon given up on).
        var listener: Int32
        let log: Int32
        /// The daemon serving the listener now (not for per-connection services).
        var running: pid_t?
        /// Per-connection processes running now.
        var connections: Set<pid_t> = []
        var failures: [ContinuousClock.Instant] = []
        var gaveUp = false
    }

    public let configuration: Configuration
    private var slots: [Slot] = []
    private var lock: Int32 = -1
    private var signals: Int32 = -1
    private var lastActivity = ContinuousClock.now
    /// Other children of the supervisor's (a release file's import), by name: reaped
    /// with the daemons, and reported when they fail.
    private var helpers: [pid_t: String] = [:]
    private let report: @Sendable (String) -> Void

    /// `report` receives the supervisor's own lines (a daemon that failed, the stop).
    public init(configuration: Configuration, report: @escaping @Sendable (String) -> Void) {
        self.configuration = configuration
        self.report = report
    }

    deinit {
        for slot in slots {
            if slot.listener >= 0 { close(slot.listener) }
            close(slot.log)
        }
        if signals >= 0 { close(signals) }
        if lock >= 0 { close(lock) }
    }

    /// Takes the user's lock, makes the private directories and binds every socket.
    /// Call before other threads start: it blocks the signals the supervisor reads.
    public func prepare() throws(PrivateStackError) {
        let paths = configuration.paths
        do {
            try PrivateStackPaths.preparePrivateDirectory(paths.runtimeDirectory)
            try PrivateStackPaths.preparePrivateDirectory(paths.stateDirectory)
        } catch {
            throw .directory(error)
        }
        lock = open(paths.lockFile, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard lock >= 0 else { throw .system("cannot open \(paths.lockFile)", errno) }
        guard stol_lock_exclusive(lock, 0) == 0 else {
            if errno == EWOULDBLOCK { throw .alreadyRunning(paths.runningSupervisor() ?? 0, paths.runtimeDirectory) }
            throw .system("cannot lock \(paths.lockFile)", errno)
        }
        let served = configuration.served ?? configuration.environment["STOL_BUNDLED_DB"] ?? ""
        let pid = Array("\(getpid())\n\(served)\n".utf8)
        guard ftruncate(lock, 0) == 0, pwrite(lock, pid, pid.count, 0) == pid.count else {
            throw .system("cannot write \(paths.lockFile)", errno)
        }
        signals = stol_supervisor_signalfd()
        guard signals >= 0 else { throw .system("cannot set up signal handling", errno) }
        let passed = configuration.passedListeners
        for service in configuration.services {
            let socket = paths.socket(named: service.name)
            let listener: Int32
            if !passed.isEmpty {
                guard let fd = passed[socket] else { throw .missingPassedSocket(socket, Array(passed.keys).sorted()) }
                listener = fd
            } else {
                // A systemd user manager's stol.socket listening there: binding would take
                // its socket away (stol_bind_unix replaces the file).
                guard !PrivateStackPaths.isListening(socket) else { throw .managedElsewhere(socket) }
                // 0600: the directory is the user's alone already; the socket says so too.
                listener = stol_bind_unix(socket, 0o600, 128)
                guard listener >= 0 else { throw .system("cannot bind \(socket)", errno) }
            }
            let logPath = paths.daemonLog(named: service.name)
            let log = open(logPath, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0o600)
            guard log >= 0 else {
                close(listener)
                throw .system("cannot open \(logPath)", errno)
            }
            _ = fcntl(listener, F_SETFL, fcntl(listener, F_GETFL) | O_NONBLOCK)
            slots.append(Slot(service: service, listener: listener, log: log))
        }
        lastActivity = .now
    }

    /// The passed listening sockets by the path each is bound to.
    public static func passedByPath(_ descriptors: [Int32]) throws(PrivateStackError) -> [String: Int32] {
        var found: [String: Int32] = [:]
        for fd in descriptors {
            var buffer = [CChar](repeating: 0, count: 256)
            guard stol_socket_path(fd, &buffer, buffer.count) > 0 else { throw .system("a passed socket (fd \(fd)) is not a bound Unix socket", errno) }
            found[String(cString: buffer)] = fd
        }
        return found
    }

    /// Starts `executable` with `arguments` beside the daemons, its output on this
    /// process's standard output (a release file's import, once the sockets listen);
    /// it is reaped with them and reported if it fails.
    public func startHelper(_ name: String, executable: String, arguments: [String],
                            environment: [String: String]) throws(PrivateStackError) {
        do {
            let pid = try ServiceSpawner.spawn(executable, arguments: arguments, environment: environment, descriptors: [],
                                               listenNames: nil, log: 1)
            helpers[pid] = name
        } catch {
            throw .system(error.description, error.errno)
        }
    }

    /// Serves until a stop signal or the idle exit; stops every daemon before it returns.
    public func run() throws(PrivateStackError) {
        while true {
            var descriptors = [pollfd(fd: signals, events: Int16(POLLIN), revents: 0)]
            var owners: [Int] = [-1]
            for (index, slot) in slots.enumerated() where !slot.gaveUp && (slot.running == nil || slot.service.acceptsEachConnection) {
                descriptors.append(pollfd(fd: slot.listener, events: Int16(POLLIN), revents: 0))
                owners.append(index)
            }
            let timeout = pollTimeout()
            let ready = poll(&descriptors, nfds_t(descriptors.count), timeout)
            if ready < 0 {
                if errno == EINTR { continue }
                throw .system("poll", errno)
            }
            if ready == 0 {
                if isIdle, let idleExit = configuration.idleExit, ContinuousClock.now - lastActivity >= idleExit {
                    report("no request for \(idleExit.components.seconds) s: the private stack stops (it starts again with stol-client serve)")
                    stopAll()
                    return
                }
                continue
            }
            if descriptors[0].revents != 0, handleSignals() { return }
            for (position, descriptor) in descriptors.enumerated().dropFirst() where descriptor.revents != 0 {
                activate(owners[position])
            }
        }
    }

    /// No daemon and no per-connection process runs.
    private var isIdle: Bool { slots.allSatisfy { $0.running == nil && $0.connections.isEmpty } }

    private func pollTimeout() -> Int32 {
        guard let idleExit = configuration.idleExit, isIdle else { return -1 }
        let left = idleExit - (ContinuousClock.now - lastActivity)
        let milliseconds = left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000
        return Int32(clamping: max(0, milliseconds) + 1)
    }

    /// A connection waits on slot `index`'s socket: start its daemon (or, for a
    /// per-connection service, accept it and start one for it).
    private func activate(_ index: Int) {
        lastActivity = .now
        let service = slots[index].service
        let environment = configuration.environment
        do {
            if service.acceptsEachConnection {
                let connection = stol_accept(slots[index].listener)
                guard connection >= 0 else { return }  // gone already (EAGAIN) or refused
                defer { close(connection) }
                let pid = try ServiceSpawner.spawn(service.executable, arguments: service.arguments, environment: environment,
                                                   descriptors: [connection], listenNames: [service.name], log: slots[index].log)
                slots[index].connections.insert(pid)
            } else {
                let pid = try ServiceSpawner.spawn(service.executable, arguments: service.arguments, environment: environment,
                                                   descriptors: [slots[index].listener], listenNames: [service.name],
                                                   log: slots[index].log)
                slots[index].running = pid
            }
        } catch {
            report("\(error)")
            recordFailure(index)
        }
    }

    /// Reads the pending signals; true when one asked the supervisor to stop (it then has).
    private func handleSignals() -> Bool {
        var stop = false
        while true {
            let signal = stol_read_signal(signals)
            if signal <= 0 { break }
            if signal == SIGCHLD { reapChildren() } else { stop = true }
        }
        if stop {
            report("stopping the private stack")
            stopAll()
        }
        return stop
    }

    /// Collects every exited child, and notes the daemons that failed.
    private func reapChildren() {
        while true {
            var status: Int32 = 0
            let pid = waitpid(-1, &status, WNOHANG)
            if pid <= 0 { return }
            lastActivity = .now
            let ended = WaitStatus(status)
            if let helper = helpers.removeValue(forKey: pid) {
                if !ended.succeeded { report("\(helper) \(ended)") }
                continue
            }
            guard let index = slots.firstIndex(where: { $0.running == pid || $0.connections.contains(pid) }) else { continue }
            if slots[index].running == pid { slots[index].running = nil } else { slots[index].connections.remove(pid) }
            if !ended.succeeded {
                let name = slots[index].service.name
                report("stol-\(name)d \(ended); see \(configuration.paths.daemonLog(named: name))")
                recordFailure(index)
            }
        }
    }

    /// Counts a failure of slot `index`'s daemon; past the start limit, its socket is
    /// closed (clients are refused at once, instead of a daemon started and failing in a loop).
    private func recordFailure(_ index: Int) {
        let now = ContinuousClock.now
        slots[index].failures = slots[index].failures.filter { now - $0 < configuration.startLimitInterval } + [now]
        guard slots[index].failures.count >= configuration.startLimitBurst, !slots[index].gaveUp else { return }
        slots[index].gaveUp = true
        if configuration.passedListeners.isEmpty {
            // Closed, not only unlinked: a client waiting in its backlog is refused now
            // instead of at its deadline.
            unlink(configuration.paths.socket(named: slots[index].service.name))
            close(slots[index].listener)
            slots[index].listener = -1
        }
        report("stol-\(slots[index].service.name)d failed \(configuration.startLimitBurst) times in "
               + "\(configuration.startLimitInterval.components.seconds) s: not started again (restart the private stack)")
    }

    /// SIGTERM to every daemon, then waits for them (SIGKILL after 10 s), removes the
    /// sockets and lets the lock go.
    private func stopAll() {
        let children = slots.flatMap { slot in (slot.running.map { [$0] } ?? []) + Array(slot.connections) }
        for pid in children { kill(pid, SIGTERM) }
        var left = Set(children)
        let deadline = ContinuousClock.now + .seconds(10)
        while !left.isEmpty {
            let pending = left.compactMap { pid -> pid_t? in
                var status: Int32 = 0
                return waitpid(pid, &status, WNOHANG) == 0 ? pid : nil
            }
            left = Set(pending)
            guard !left.isEmpty else { break }
            if ContinuousClock.now >= deadline {
                for pid in left { kill(pid, SIGKILL) }
                for pid in left { var status: Int32 = 0; _ = waitpid(pid, &status, 0) }
                break
            }
            // Woken by the next SIGCHLD (blocked, so it waits in the signalfd), or after 100 ms.
            var descriptor = pollfd(fd: signals, events: Int16(POLLIN), revents: 0)
            _ = poll(&descriptor, 1, 100)
            while stol_read_signal(signals) > 0 {}
        }
        for slot in slots where configuration.passedListeners.isEmpty {
            unlink(configuration.paths.socket(named: slot.service.name))
        }
        if lock >= 0 { _ = ftruncate(lock, 0) }
    }
}
