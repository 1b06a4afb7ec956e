/// Limits that are part of the protocol (PROTOCOL.md, "Limits"). Servers enforce
/// them before allocating; clients may rely on them.
public enum ProtocolLimits {
    /// Largest frame body a client may send (requests are small; files travel as fds).
    public static let maximumRequestFrameBytes = 64 * 1024
    /// Largest frame body a server may send (a page of results, a verified chunk).
    public static let maximumResponseFrameBytes = 4 * 1024 * 1024
    /// Bytes of the big-endian length prefix in front of every frame.
    public static let lengthPrefixBytes = 4
    /// Connections one daemon serves at once; one more is answered BUSY and closed.
    public static let maximumConnections = 512
    /// Connections one user (uid, from SO_PEERCRED) may hold at once on one daemon.
    public static let maximumConnectionsPerUser = 64
    /// A connection with no complete request for this long is closed.
    public static let idleTimeoutSeconds: Int64 = 120
    /// A frame must arrive whole within this many seconds of its first byte.
    public static let frameDeadlineSeconds: Int64 = 30
    /// A connection that leaves its answers unread for this long is closed.
    public static let slowReaderTimeoutSeconds: Int64 = 30
    /// Page sizes.
    public static let defaultPageSize: UInt32 = 50
    public static let maximumPageSize: UInt32 = 500
    public static let defaultSearchLimit: UInt32 = 20
    public static let maximumSearchLimit: UInt32 = 200
    /// Verified SQLite bytes travel in chunks of at most this size.
    public static let verifiedChunkBytes = 1024 * 1024
    /// Longest search query accepted, in bytes of UTF-8.
    public static let maximumQueryBytes = 512
}
