import CSTOLSocket
import Glibc

/// Starts a daemon as a service manager would (`stol_spawn_service`): the
/// descriptors it is handed at 3, 4, … and, for a socket-activated one, the
/// activation variables `sd_listen_fds(3)` reads (`LISTEN_PID` filled in by the
/// child, whose pid exists only after the fork).
enum ServiceSpawner {
    struct SpawnFailed: Error, CustomStringConvertible {
        let executable: String
        let errno: Int32
        var description: String { "cannot start \(executable): \(String(cString: strerror(errno)))" }
    }

    /// Spawns `executable` with `arguments` (without argv[0]) and exactly `environment`;
    /// `descriptors` become 3, 4, …; `listenNames` (one per descriptor) adds the
    /// activation variables; output and errors go to `log`.
    static func spawn(_ executable: String, arguments: [String], environment: [String: String],
                      descriptors: [Int32], listenNames: [String]?, log: Int32, newSession: Bool = false) throws(SpawnFailed) -> pid_t {
        var variables = environment.filter { !$0.key.hasPrefix("LISTEN_") }.map { "\($0.key)=\($0.value)" }.sorted()
        if let listenNames {
            variables.append("LISTEN_FDS=\(descriptors.count)")
            variables.append("LISTEN_FDNAMES=\(listenNames.joined(separator: ":"))")
        }
        var cArguments: [UnsafeMutablePointer<CChar>?] = ([executable] + arguments).map { strdup($0) } + [nil]
        var cEnvironment: [UnsafeMutablePointer<CChar>?] = variables.map { strdup($0) }
        // The child writes "LISTEN_PID=<pid>" here: 11 bytes and at most 10 digits.
        let listenPID: UnsafeMutablePointer<CChar>? = listenNames == nil ? nil : .allocate(capacity: 32)
        if let listenPID {
            listenPID.initialize(repeating: 0, count: 32)
            cEnvironment.append(listenPID)
        }
        cEnvironment.append(nil)
        defer {
            for pointer in cArguments { free(pointer) }
            for pointer in cEnvironment where pointer != listenPID { free(pointer) }
            listenPID?.deallocate()
        }
        let pid = descriptors.withUnsafeBufferPointer { fds in
            stol_spawn_service(executable, &cArguments, &cEnvironment, listenPID, fds.baseAddress, Int32(fds.count), log,
                               newSession ? 1 : 0)
        }
        guard pid > 0 else { throw SpawnFailed(executable: executable, errno: errno) }
        return pid
    }
}
