import CSTOLSocket
import Glibc

/// Who is on the other end of a Unix socket, as the kernel recorded it at
/// `connect(2)` time (SO_PEERCRED and SO_PEERGROUPS). Nothing a peer *sends* can
/// change these values, which is why every authorisation decision uses them.
public struct PeerCredentials: Sendable, Equatable, CustomStringConvertible {
    public let pid: Int32
    public let uid: UInt32
    public let gid: UInt32
    /// Supplementary groups of the peer at connect time.
    public let groups: [UInt32]

    public init(pid: Int32, uid: UInt32, gid: UInt32, groups: [UInt32] = []) {
        self.pid = pid
        self.uid = uid
        self.gid = gid
        self.groups = groups
    }

    public enum LookupError: Error, Equatable {
        case getsockopt(errno: Int32)
    }

    /// Reads the credentials of the peer of the connected Unix socket `socket`.
    public init(socket: Int32) throws(LookupError) {
        var pid: pid_t = 0
        var uid: uid_t = 0
        var gid: gid_t = 0
        guard stol_peer_credentials(socket, &pid, &uid, &gid) == 0 else {
            throw .getsockopt(errno: errno)
        }
        var groups = [gid_t](repeating: 0, count: 64)
        var count = stol_peer_groups(socket, &groups, Int32(groups.count))
        if count > groups.count {
            groups = [gid_t](repeating: 0, count: Int(count))
            count = stol_peer_groups(socket, &groups, Int32(groups.count))
        }
        self.init(pid: pid, uid: uid, gid: gid, groups: count > 0 ? Array(groups.prefix(Int(count))) : [])
    }

    /// True when the peer is root or has `groupID` as primary or supplementary group.
    public func isRootOrMember(ofGroup groupID: UInt32?) -> Bool {
        if uid == 0 { return true }
        guard let groupID else { return false }
        return gid == groupID || groups.contains(groupID)
    }

    /// Deliberately without the uid: log lines above debug must not identify users.
    public var description: String { "peer(pid: \(pid))" }
}

/// Looks up a group id by name (`getgrnam_r`), nil when the group does not exist.
public func groupID(named name: String) -> UInt32? {
    var group = group()
    var result: UnsafeMutablePointer<group>?
    var buffer = [CChar](repeating: 0, count: 16 * 1024)
    let rc = getgrnam_r(name, &group, &buffer, buffer.count, &result)
    guard rc == 0, result != nil else { return nil }
    return group.gr_gid
}

/// The uid of the user `name` (getpwnam_r), or nil if there is none.
public func userID(named name: String) -> UInt32? {
    var user = passwd()
    var result: UnsafeMutablePointer<passwd>?
    var buffer = [CChar](repeating: 0, count: 16 * 1024)
    let rc = getpwnam_r(name, &user, &buffer, buffer.count, &result)
    guard rc == 0, result != nil else { return nil }
    return user.pw_uid
}
