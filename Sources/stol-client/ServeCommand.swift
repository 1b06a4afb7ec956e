import ArgumentParser
import Foundation
import Glibc
import STOLPrivateStack
import STOLTransport

/// `stol-client serve`: the four daemons for the calling user alone, without root
/// or systemd (a cluster node, a laptop, a CI runner). The supervisor is in
/// STOLPrivateStack; this file is its command line.
struct Serve: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run STOL for yourself, without root: the same daemons, on sockets only you can reach.",
        discussion: """
            Starts a private stack: each daemon starts on the first request to its socket, exits when \
            idle, and starts again on the next. Sockets in $XDG_RUNTIME_DIR/stol (else /tmp/stol-UID, \
            a directory only you can enter), installed releases and favourites in $XDG_STATE_HOME/stol \
            (else ~/.local/state/stol). While it runs, every stol-client command and the Python package \
            of yours on this machine use it (before the system service); `stol-client status` says which \
            answered. Runs in the foreground until Ctrl-C (a Slurm job, a container, CI), or in the \
            background with --detach; stops by itself after --idle-exit seconds without a request.

            What a private stack cannot have (a user per daemon, systemd's sandboxes) and what still \
            holds: docs/private-stack.md.

            Examples:
              stol-client serve --detach                         (the bundled database)
              stol-client serve --database reference.sqlite      (foreground; Ctrl-C stops it)
              stol-client serve --database lab-2024.9.7.stol --detach   (imported, then the default)
              stol-client lineage < ids.txt
              stol-client db import release.stol --public-key lab.pub && stol-client db activate
              stol-client serve --stop
            """)

    @Option(help: ArgumentHelp("The taxonomy database to serve (default: the bundled one installed beside stol-client); "
                               + "a signed release file (.stol) is imported and made the default (with --detach, before it returns).",
                               valueName: "file"))
    var database: String?

    @Flag(help: "Start in the background and return once the sockets listen (log: ~/.local/state/stol/serve.log).")
    var detach = false

    @Flag(help: "Stop your running private stack.")
    var stop = false

    @Option(help: ArgumentHelp("Seconds without a request before the daemons, then the stack, exit (0: never).",
                               valueName: "seconds"))
    var idleExit: Int = PrivateStack.defaultIdleExitSeconds

    @Option(help: ArgumentHelp("The public key file or directory that imports trust (default: ~/.config/stol/keys when it "
                               + "exists, else the system's keys).", valueName: "path"))
    var trustedKey: String?

    @Option(help: ArgumentHelp("The directory of the stol-*d daemons (default: beside stol-client, else /usr/libexec/stol).",
                               valueName: "dir"))
    var daemonDir: String?

    @Option(help: ArgumentHelp("The daemons' log level (their logs: in the sockets' directory, one file each).",
                               valueName: "level"))
    var logLevel: String = "notice"

    /// Set by a detached start in the process it starts: "ready" is written to this descriptor.
    @Option(help: .private) var readyFD: Int32?

    func validate() throws {
        guard idleExit >= 0 else { throw ValidationError("--idle-exit must be 0 (never) or a number of seconds") }
        if stop && (detach || database != nil) { throw ValidationError("--stop takes no other option") }
    }

    func run() throws {
        var paths = PrivateStackPaths.forUser()
        if stop { return try stopStack(paths) }
        // Started by a systemd user manager (stol.socket): its four listening sockets, and
        // their directory is the stack's, whatever the environment says.
        var passed: [String: Int32] = [:]
        do {
            passed = try ActivationSupervisor.passedByPath(SocketActivation.passedSockets().map(\.fd))
        } catch let error as SocketActivationError {
            throw fail(error.description, code: 1)
        } catch {
            throw fail("\(error)", code: 1)
        }
        if !passed.isEmpty {
            if detach { throw fail("--detach makes no sense under a service manager (it passed sockets)", code: 64) }
            if let taxonomy = passed.keys.first(where: { $0.hasSuffix("/taxonomy.sock") }) {
                paths.runtimeDirectory = (taxonomy as NSString).deletingLastPathComponent
            }
        }
        let environment = ProcessInfo.processInfo.environment
        let client = PrivateStack.ownExecutable()
        let clientDirectory = client.map { ($0 as NSString).deletingLastPathComponent }
        guard let daemons = PrivateStack.daemonDirectory(explicit: daemonDir, clientDirectory: clientDirectory) else {
            throw fail("the daemons (stol-taxonomyd, stol-favoritesd, stol-importd, stol-verifyd) are not "
                       + (daemonDir.map { "in \($0)" } ?? "beside stol-client nor in /usr/libexec/stol") + "; name them with --daemon-dir",
                       code: 64)
        }
        guard let database = database.map(Self.absolute) ?? PrivateStack.defaultDatabase(clientDirectory: clientDirectory) else {
            throw fail("no database to serve: name one with --database (a .sqlite file `make db` or stol-pipeline built)", code: 64)
        }
        var status = stat()
        guard stat(database, &status) == 0, (status.st_mode & S_IFMT) == S_IFREG, access(database, R_OK) == 0 else {
            throw fail("cannot read the database \(database)" + (errno == 0 ? "" : ": \(String(cString: strerror(errno)))"), code: 64)
        }
        // A release file (a signed .stol) is imported into the stack's state and made its
        // default; the stack starts from the bundled database, as the system service does.
        let releaseFile = PrivateStack.isSQLiteDatabase(database) ? nil : database
        // Starts of one user are taken in turn (parallel jobs of a workflow each starting the
        // stack): the second sees the first running, instead of racing it for the lock. A
        // detached start's own child (--ready-fd) runs while its parent holds this.
        var startLock: Int32?
        if readyFD == nil {
            do { startLock = try PrivateStack.takeStartLock(paths) } catch { throw fail(error.description, code: 1) }
        }
        defer { if let startLock { close(startLock) } }
        if let running = paths.running() {
            // A job script may start the stack each time: the same database running is success.
            if detach, running.database == database {
                print("your private stack already runs on \(database) (pid \(running.pid), sockets in \(paths.runtimeDirectory))")
                return
            }
            throw fail("your private stack already runs (pid \(running.pid), sockets in \(paths.runtimeDirectory), "
                       + "database \(running.database)); stop it with stol-client serve --stop", code: 1)
        }
        var startingDatabase = database
        if releaseFile != nil {
            guard let bundled = PrivateStack.defaultDatabase(clientDirectory: clientDirectory) else {
                throw fail("\(database) is not an SQLite database, so it is imported as a release file, which needs the "
                           + "bundled database to start from (installed beside stol-client, or $STOL_BUNDLED_DB); none was found",
                           code: 64)
            }
            startingDatabase = bundled
        }
        if detach {
            guard let client else { throw fail("cannot find stol-client's own file (/proc/self/exe)", code: 1) }
            return try startDetached(client: client, paths: paths, database: database, releaseFile: releaseFile)
        }

        var configuration = PrivateStack.configuration(
                paths: paths, daemons: daemons, database: startingDatabase,
                trustedKeys: trustedKey.map(Self.absolute) ?? PrivateStack.defaultTrustedKeys(environment: environment),
                idleExitSeconds: idleExit, logLevel: logLevel, environment: environment)
        configuration.passedListeners = passed
        configuration.served = database
        let supervisor = ActivationSupervisor(
            configuration: configuration,
            report: { line in FileHandle.standardError.write(Data("stol-client serve: \(line)\n".utf8)) })
        do {
            try supervisor.prepare()
        } catch {
            throw fail(error.description, code: 1)
        }
        if let lock = startLock {  // listening: the next start sees it running
            close(lock)
            startLock = nil
        }
        print(banner(paths: paths, database: database, pid: getpid(), background: readyFD != nil))
        fflush(nil)
        if let readyFD {
            _ = write(readyFD, "ready\n", 6)
            close(readyFD)
        } else if let releaseFile, let client {
            // In the foreground the stack serves at once; the release becomes the default
            // once imported (`status` says which). A detached start imports before it returns.
            do {
                try supervisor.startHelper("the import of \(releaseFile)", executable: client,
                                           arguments: PrivateStack.importArguments(releaseFile, runtimeDirectory: paths.runtimeDirectory),
                                           environment: environment)
            } catch {
                throw fail(error.description, code: 1)
            }
        }
        do {
            try supervisor.run()
        } catch {
            throw fail(error.description, code: 1)
        }
    }

    private func banner(paths: PrivateStackPaths, database: String, pid: pid_t, background: Bool) -> String {
        """
        STOL private stack (pid \(pid)\(background ? ", in the background" : "")): \(database)
          sockets: \(paths.runtimeDirectory) (only you can reach them); state: \(paths.stateDirectory)
          query it from any shell of yours on this machine: stol-client search lion
          stop it: \(background ? "" : "Ctrl-C, or ")stol-client serve --stop\(idleExit > 0 ? "; it stops by itself after \(idleExit) s without a request" : "")
        """
    }

    private func startDetached(client executable: String, paths: PrivateStackPaths, database: String,
                               releaseFile: String?) throws {
        do {
            try PrivateStackPaths.preparePrivateDirectory(paths.stateDirectory)
        } catch {
            throw fail(error.description, code: 1)
        }
        var arguments = ["serve", "--database", database, "--idle-exit", "\(idleExit)", "--log-level", logLevel]
        if let trustedKey { arguments += ["--trusted-key", Self.absolute(trustedKey)] }
        if let daemonDir { arguments += ["--daemon-dir", Self.absolute(daemonDir)] }
        do {
            try PrivateStack.startDetached(executable: executable, arguments: arguments, log: paths.logFile)
        } catch {
            throw fail(error.description, code: 1)
        }
        if let releaseFile {
            // Imported and made the default before this returns: a job's next command is
            // answered from it. A file that cannot be imported stops the stack again.
            fflush(nil)
            let imported: Int32
            do {
                imported = try PrivateStack.run(executable, arguments: PrivateStack.importArguments(releaseFile,
                                                                                                   runtimeDirectory: paths.runtimeDirectory))
            } catch {
                _ = try? PrivateStack.stop(paths: paths)
                throw fail(error.description, code: 1)
            }
            guard imported == 0 else {
                _ = try? PrivateStack.stop(paths: paths)
                throw fail("the private stack was stopped: \(releaseFile) could not be imported (above)", code: imported)
            }
        }
        print(banner(paths: paths, database: database, pid: paths.runningSupervisor() ?? 0, background: true))
        print("  log: \(paths.logFile)")
    }

    private func stopStack(_ paths: PrivateStackPaths) throws {
        do {
            if let pid = try PrivateStack.stop(paths: paths) {
                print("stopped your private stack (pid \(pid))")
            } else {
                print("no private stack of yours is running (\(paths.runtimeDirectory))")
            }
        } catch {
            throw fail(error.description, code: 1)
        }
    }

    private func fail(_ message: String, code: Int32) -> ExitCode {
        FileHandle.standardError.write(Data("stol-client serve: \(message)\n".utf8))
        return ExitCode(code)
    }

    private static func absolute(_ path: String) -> String {
        path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
    }
}
