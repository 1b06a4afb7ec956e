import ArgumentParser
import STOLDaemon
import STOLProtocol

/// The options every serving daemon shares (`@OptionGroup`): its fairness and
/// idle limits, turned into the server's ``ServerConfiguration``.
public struct ServerOptions: ParsableArguments {
    @Option(help: ArgumentHelp(
        "Connections one user (uid) may hold at once.",
        discussion: "One more is answered BUSY and closed, so that one user of a shared machine cannot take every one of the \(ProtocolLimits.maximumConnections) connections."))
    public var connectionsPerUser: Int = ProtocolLimits.maximumConnectionsPerUser

    @Option(help: ArgumentHelp(
        "Exit after this many seconds without any connection (0: never).",
        discussion: "Under socket activation the next connection starts the daemon again; the units set it for the daemons that are cheap to restart."))
    public var idleExit: Double = 0

    @Option(help: ArgumentHelp(
        "Seconds a request frame may take to arrive, from its first byte.",
        discussion: "A client that trickles a frame a byte at a time is closed when it runs out, however often bytes come; the slot it held is free again."))
    public var frameDeadline: Double = Double(ProtocolLimits.frameDeadlineSeconds)

    public init() {}

    public func validate() throws {
        guard connectionsPerUser >= 1 else { throw ValidationError("--connections-per-user must be at least 1") }
        guard idleExit >= 0 else { throw ValidationError("--idle-exit must be 0 (never) or a number of seconds") }
        guard frameDeadline > 0 else { throw ValidationError("--frame-deadline must be a positive number of seconds") }
    }

    public func configuration(name: String) -> ServerConfiguration {
        ServerConfiguration(name: name, maximumConnectionsPerUser: connectionsPerUser,
                            frameDeadline: .milliseconds(Int64(frameDeadline * 1000)),
                            idleExit: idleExit > 0 ? .milliseconds(Int64(idleExit * 1000)) : nil)
    }
}
