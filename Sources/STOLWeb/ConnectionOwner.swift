import CSTOLWebPeer
import Glibc
import NIOCore

/// Who is on the other end of a new connection, asked of the kernel before a byte of it
/// is read: SO_PEERCRED on a Unix socket; on TCP the uid that owns the connecting
/// socket, found with NETLINK_SOCK_DIAG as identd does (`stol_tcp_owner`). No token,
/// password or cookie carries the identity, so none can leak through a shell history,
/// a process list or a browser's history.
enum ConnectionOwner {
    /// The layout of `struct ucred` (SO_PEERCRED's value).
    private struct UCred {
        var pid: Int32 = 0
        var uid: UInt32 = 0
        var gid: UInt32 = 0
    }

    /// The uid of the process that connected on `channel`, or nil when the kernel cannot
    /// tell (a peer on another machine, an address family of another kind).
    static func uid(of channel: any Channel) -> EventLoopFuture<UInt32?> {
        switch channel.remoteAddress {
        case .unixDomainSocket?:
            guard let options = channel as? any SocketOptionProvider else { return channel.eventLoop.makeSucceededFuture(nil) }
            return options.unsafeGetSocketOption(level: .socket, name: .init(rawValue: SO_PEERCRED))
                .map { (credentials: UCred) -> UInt32? in credentials.uid }
                .recover { _ in nil }
        case .v4(let peer)?:
            guard case .v4(let local)? = channel.localAddress else { return channel.eventLoop.makeSucceededFuture(nil) }
            return channel.eventLoop.makeSucceededFuture(owner(local: local.address, peer: peer.address))
        case .v6(let peer)?:
            guard case .v6(let local)? = channel.localAddress else { return channel.eventLoop.makeSucceededFuture(nil) }
            return channel.eventLoop.makeSucceededFuture(owner(local: local.address, peer: peer.address))
        case nil:
            return channel.eventLoop.makeSucceededFuture(nil)
        }
    }

    private static func owner<Address>(local: Address, peer: Address) -> UInt32? {
        var local = local, peer = peer
        var uid: uid_t = 0
        let found = withUnsafePointer(to: &local) { localPointer in
            withUnsafePointer(to: &peer) { peerPointer in
                localPointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { l in
                    peerPointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { p in stol_tcp_owner(l, p, &uid) }
                }
            }
        }
        return found == 0 ? uid : nil
    }
}
