// The web app's one piece of network code (the daemons are Unix-socket only and do not link it).
#ifndef STOL_WEB_PEER_H
#define STOL_WEB_PEER_H

#include <sys/types.h>

struct sockaddr;

/// The uid that owns the other end of a TCP connection accepted on this machine (a
/// loopback client), known by its two addresses (its local address and its peer's, both
/// AF_INET or both AF_INET6). Asked of the kernel with NETLINK_SOCK_DIAG, as identd and ss
/// do: the socket whose source is this connection's peer and whose destination is its
/// local address. 0 with `*uid` set; -1 with errno set (ENOENT: no such socket on this
/// machine, EAFNOSUPPORT: not TCP over IPv4 or IPv6).
int stol_tcp_owner(const struct sockaddr *local, const struct sockaddr *peer, uid_t *uid);

#endif
