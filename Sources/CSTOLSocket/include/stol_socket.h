// Small C helpers for what Swift cannot import: the CMSG_* macros behind
// SCM_RIGHTS, and the struct ucred / SO_PEERGROUPS socket options.
#ifndef STOL_SOCKET_H
#define STOL_SOCKET_H

#include <stddef.h>
#include <sys/types.h>

/// Sends `len` bytes (len >= 1) on the connected Unix socket `sock`, with `fd_to_send`
/// attached as SCM_RIGHTS ancillary data when it is >= 0.
/// Returns the number of bytes sent or -1 with errno set. Retries on EINTR.
ssize_t stol_send_with_fd(int sock, const void *buf, size_t len, int fd_to_send);

/// Receives up to `len` bytes from `sock`. Any descriptors passed alongside are
/// installed close-on-exec; up to `max_fds` are stored in `fds_out` and counted in
/// `*n_fds`, any more are closed at once so that they never leak.
/// Returns bytes read (0 at EOF) or -1 with errno set. Retries on EINTR.
ssize_t stol_recv_with_fds(int sock, void *buf, size_t len, int *fds_out, int max_fds, int *n_fds);

/// SO_PEERCRED of a connected Unix socket: the peer's pid, uid and gid at connect time.
int stol_peer_credentials(int sock, pid_t *pid, uid_t *uid, gid_t *gid);

/// SO_PEERGROUPS of a connected Unix socket: the peer's supplementary groups at
/// connect time. Returns the count (possibly more than `max`, then only `max` are
/// written) or -1 with errno set.
int stol_peer_groups(int sock, gid_t *groups, int max);

/// 1 if `fd` is a listening socket (SO_ACCEPTCONN), 0 if not, -1 on error.
int stol_socket_is_listening(int fd);

/// Binds and listens on a new SOCK_STREAM Unix socket at `path`, replacing a stale
/// socket file, then sets its mode to `mode` (before listen, so no one connects
/// through a wider mode). Returns the fd or -1 with errno set.
int stol_bind_unix(const char *path, unsigned int mode, int backlog);

/// Connects a new SOCK_STREAM Unix socket (close-on-exec) to `path`.
/// Returns the fd or -1 with errno set.
int stol_connect_unix(const char *path);

/// accept4(2) with SOCK_CLOEXEC, retrying on EINTR. Returns the fd or -1.
int stol_accept(int listener);

/// pipe2(2) with O_CLOEXEC. Returns 0 or -1 with errno set.
int stol_pipe(int fds[2]);

#endif
