import CSTOLSocket
import Foundation
import Glibc
import STOLTransport

/// Where `stol-web` listens, and the listening socket it made or was handed.
///
/// By default a Unix socket in the user's own runtime directory (`$XDG_RUNTIME_DIR/stol`,
/// mode 0700, the socket itself 0600): nobody else can even connect, and `ssh -L
/// 8080:/run/user/UID/stol/web.sock host` reaches it from a laptop. With `--port`, TCP on
/// 127.0.0.1 (every user of the machine can connect there, so every connection is checked:
/// ``ConnectionOwner``). Under systemd (`stol-web.socket`, a user unit) the socket is handed
/// over (LISTEN_FDS) and can be either.
public struct WebEndpoint: Sendable {
    public enum Kind: Sendable, Equatable {
        case unix(path: String)
        case tcp(host: String, port: Int)
    }

    public let kind: Kind
    /// The listening socket (close-on-exec).
    public let fd: Int32
    /// Whether systemd handed it over.
    public let activated: Bool

    /// The socket name stol-web.socket gives (`FileDescriptorName=`).
    public static let activationName = "web"

    /// The default socket: `web.sock` in the user's private runtime directory.
    public static func defaultSocketPath(environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        PrivateStackPaths.forUser(getuid(), environment: environment).socket(named: "web")
    }

    /// The socket systemd passed, if any.
    public static func activated() throws(WebError) -> WebEndpoint? {
        let passed: [(name: String, fd: Int32)]
        do { passed = try SocketActivation.passedSockets() } catch { throw .listen(error.description) }
        guard !passed.isEmpty else { return nil }
        let chosen = passed.count == 1 ? passed[0] : passed.first { $0.name == activationName }
        guard let chosen, stol_socket_is_listening(chosen.fd) == 1 else {
            throw .listen("systemd passed sockets \(passed.map(\.name)) but no listening one named \(activationName)")
        }
        return WebEndpoint(kind: try kind(of: chosen.fd), fd: chosen.fd, activated: true)
    }

    /// Binds `path` (mode 0600) in a directory that is the user's own and private (made 0700
    /// when missing; refused when another user could reach into it).
    public static func bindUnix(path: String) throws(WebError) -> WebEndpoint {
        let directory = (path as NSString).deletingLastPathComponent
        do {
            try PrivateStackPaths.preparePrivateDirectory(directory)
        } catch {
            throw .listen("\(directory): \(error.description)")
        }
        let fd = stol_bind_unix(path, 0o600, 128)
        guard fd >= 0 else { throw .listen("cannot bind \(path): \(String(cString: strerror(errno)))") }
        return WebEndpoint(kind: .unix(path: path), fd: fd, activated: false)
    }

    /// Listens on `127.0.0.1:port` (0: a free port the kernel picks, told by ``kind``).
    public static func bindLoopback(port: Int) throws(WebError) -> WebEndpoint {
        guard (0...65535).contains(port) else { throw .usage("--port must be 0–65535, not \(port)") }
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw .listen("socket: \(String(cString: strerror(errno)))") }
        var one: Int32 = 1
        _ = setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = in_addr_t(UInt32(0x7f00_0001).bigEndian)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(fd, 128) == 0 else {
            let code = errno
            close(fd)
            throw .listen("cannot listen on 127.0.0.1:\(port): \(String(cString: strerror(code)))")
        }
        return WebEndpoint(kind: try kind(of: fd), fd: fd, activated: false)
    }

    /// What a listening socket is bound to.
    static func kind(of fd: Int32) throws(WebError) -> Kind {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let named = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard named == 0 else { throw .listen("getsockname: \(String(cString: strerror(errno)))") }
        switch Int32(storage.ss_family) {
        case AF_UNIX:
            var buffer = [CChar](repeating: 0, count: 256)
            _ = stol_socket_path(fd, &buffer, buffer.count)
            return .unix(path: String(cString: buffer))
        case AF_INET, AF_INET6:
            // One call for both families: the numeric host and port.
            var host = [CChar](repeating: 0, count: Int(NI_MAXHOST))
            var service = [CChar](repeating: 0, count: Int(NI_MAXSERV))
            let named = withUnsafePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    getnameinfo($0, length, &host, socklen_t(host.count), &service, socklen_t(service.count),
                                NI_NUMERICHOST | NI_NUMERICSERV)
                }
            }
            guard named == 0, let port = Int(String(cString: service)) else {
                throw .listen("getnameinfo: \(String(cString: gai_strerror(named)))")
            }
            let address = String(cString: host)
            return .tcp(host: Int32(storage.ss_family) == AF_INET6 ? "[" + address + "]" : address, port: port)
        default:
            throw .listen("the socket is neither a Unix nor a TCP socket")
        }
    }

    /// Where to point a browser on this machine, or the far end of a tunnel.
    public var description: String {
        switch kind {
        case .unix(let path): "unix:\(path)"
        case .tcp(let host, let port): "http://\(host):\(port)/"
        }
    }

    /// The one line a user on a laptop types to reach the app through SSH, and the
    /// address to open there afterwards.
    public func sshTunnel(localPort: Int = 8080, host: String = WebEndpoint.hostName()) -> (command: String, open: String) {
        let user = WebEndpoint.userName()
        let target: String
        switch kind {
        case .unix(let path): target = path
        case .tcp(let address, let port): target = "\(address):\(port)"
        }
        return ("ssh -N -L \(localPort):\(target) \(user.map { $0 + "@" } ?? "")\(host)", "http://localhost:\(localPort)/")
    }

    public static func hostName() -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        return gethostname(&buffer, buffer.count) == 0 ? String(cString: buffer) : "this-machine"
    }

    static func userName() -> String? {
        guard let entry = getpwuid(getuid()) else { return nil }
        return String(cString: entry.pointee.pw_name)
    }
}
