import STOLProtocol

/// Limits and names one server runs with.
public struct ServerConfiguration: Sendable {
    public var name: String
    public var maximumRequestFrameBytes: Int
    public var maximumResponseFrameBytes: Int
    public var maximumConnections: Int
    /// Connections one user (uid) may hold at once; one more is answered BUSY and closed.
    public var maximumConnectionsPerUser: Int
    public var idleTimeout: Duration
    /// A frame must arrive whole within this time of its first byte (a trickle of
    /// bytes does not keep a connection, or its slot, alive).
    public var frameDeadline: Duration
    /// Answers waiting to be written beyond which a connection is read no further
    /// (back-pressure): at most this plus one answer is held per connection.
    public var maximumUnsentBytes: Int
    /// Unsent answers in all beyond which no connection starts a request (the
    /// daemon's memory for answers, whatever the number of users and connections).
    public var maximumUnsentBytesInAll: Int
    /// Unsent answers of one user beyond which that user's connections start none.
    public var maximumUnsentBytesPerUser: Int
    /// A connection that does not read its answers for this long is closed.
    public var slowReaderTimeout: Duration
    /// With no connection at all for this long, the server returns (the daemon
    /// exits 0; socket activation starts it again on the next connection). Nil: never.
    public var idleExit: Duration?
    /// Event loops the connections are read and written on, every connection of one
    /// user on the same loop (``UserEventLoops`` in STOLServer): up to this many users
    /// at once each have a loop that no other user's connections keep busy.
    public var eventLoops: Int

    public init(name: String,
                maximumRequestFrameBytes: Int = ProtocolLimits.maximumRequestFrameBytes,
                maximumResponseFrameBytes: Int = ProtocolLimits.maximumResponseFrameBytes,
                maximumConnections: Int = ProtocolLimits.maximumConnections,
                maximumConnectionsPerUser: Int = ProtocolLimits.maximumConnectionsPerUser,
                idleTimeout: Duration = .seconds(ProtocolLimits.idleTimeoutSeconds),
                frameDeadline: Duration = .seconds(ProtocolLimits.frameDeadlineSeconds),
                maximumUnsentBytes: Int = 1024 * 1024,
                maximumUnsentBytesInAll: Int = 192 * 1024 * 1024,
                maximumUnsentBytesPerUser: Int = 48 * 1024 * 1024,
                slowReaderTimeout: Duration = .seconds(ProtocolLimits.slowReaderTimeoutSeconds),
                idleExit: Duration? = nil,
                eventLoops: Int = 16) {
        self.name = name
        self.maximumRequestFrameBytes = maximumRequestFrameBytes
        self.maximumResponseFrameBytes = maximumResponseFrameBytes
        self.maximumConnections = maximumConnections
        self.maximumConnectionsPerUser = maximumConnectionsPerUser
        self.idleTimeout = idleTimeout
        self.frameDeadline = frameDeadline
        self.maximumUnsentBytes = maximumUnsentBytes
        self.maximumUnsentBytesInAll = maximumUnsentBytesInAll
        self.maximumUnsentBytesPerUser = maximumUnsentBytesPerUser
        self.slowReaderTimeout = slowReaderTimeout
        self.idleExit = idleExit
        self.eventLoops = eventLoops
    }
}
