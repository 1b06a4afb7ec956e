import ArgumentParser
import Foundation
import Glibc
import Logging
import ServiceLifecycle
import STOLModel
import STOLTransport
import STOLWeb

/// `stol-web`: the tree of life in the user's own browser, served to that user alone.
@main
struct StolWeb: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "stol-web",
        abstract: "Serve STOL's pages (tree, search, species, compare, favourites) to you alone, in your browser.",
        discussion: """
            Runs as you, in the foreground, until Ctrl-C. By default it listens on a Unix socket in your own \
            runtime directory (mode 0700), which nobody else can reach; from a laptop, forward it with the \
            ssh -L line it prints and open http://localhost:8080/. With --port it listens on 127.0.0.1:PORT \
            instead, and refuses every connection that another user's process makes (the kernel says whose \
            it is). It asks the STOL daemons as you, through the same sockets as stol-client; it keeps no \
            data of its own. Under systemd: systemctl --user enable --now stol-web.socket.
            """,
        version: "stol-web \(STOLVersion.current)")

    @Option(name: .long, help: "Listen on 127.0.0.1:PORT (0: any free port) instead of the Unix socket.")
    var port: Int?

    @Option(name: .long, help: ArgumentHelp("The Unix socket to listen on.", valueName: "path"))
    var socket: String?

    @Option(name: .customLong("allow-host"), help: ArgumentHelp(
        "Also accept this host name in requests (besides localhost and 127.0.0.1), e.g. the name a proxy of yours uses.",
        valueName: "name"))
    var allowHosts: [String] = []

    @Option(name: .customLong("runtime-dir"), help: ArgumentHelp(
        "The STOL service to ask (its sockets' directory); default: as stol-client finds it.", valueName: "dir"))
    var runtimeDirectory: String?

    @Flag(name: .long, help: "Log each request (debug level).")
    var verbose = false

    func validate() throws {
        if port != nil && socket != nil { throw ValidationError("--port and --socket name two places to listen: give one.") }
    }

    func run() async throws {
        var logger = Logger(label: "stol-web")
        logger.logLevel = verbose ? .debug : .notice
        let endpoint: WebEndpoint
        do {
            if let activated = try WebEndpoint.activated() {
                endpoint = activated
            } else if let port {
                endpoint = try WebEndpoint.bindLoopback(port: port)
            } else {
                endpoint = try WebEndpoint.bindUnix(path: socket ?? WebEndpoint.defaultSocketPath())
            }
        } catch {
            FileHandle.standardError.write(Data("stol-web: \(error.description)\n".utf8))
            throw ExitCode(1)
        }
        let discovery = ServiceDiscovery.locate(runtimeDirectory: runtimeDirectory)
        let application = WebApplication(gateway: DaemonGateway(paths: discovery.paths), extraHosts: Set(allowHosts),
                                         version: STOLVersion.current)
        let server = WebServer(endpoints: [endpoint], application: application, logger: logger)
        if !endpoint.activated {
            let tunnel = endpoint.sshTunnel()
            var lines = ["stol-web \(STOLVersion.current): your STOL pages, for you alone, from \(discovery.summary)",
                         "  listening on \(endpoint.description)"]
            if case .tcp(let host, let port) = endpoint.kind { lines.append("  open http://\(host == "127.0.0.1" ? "localhost" : host):\(port)/ in a browser on this machine") }
            lines += ["  from a laptop: \(tunnel.command)", "  then open \(tunnel.open)", "  stop: Ctrl-C"]
            FileHandle.standardOutput.write(Data((lines.joined(separator: "\n") + "\n").utf8))
        }
        // A socket it bound itself goes with it (systemd's stays with systemd).
        defer { if case .unix(let path) = endpoint.kind, !endpoint.activated { unlink(path) } }
        let group = ServiceGroup(configuration: .init(services: [server], gracefulShutdownSignals: [.sigint, .sigterm], logger: logger))
        try await group.run()
    }
}
