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

/// Starts `path` in a child process as a service manager starts a socket-activated
/// service (`sd_listen_fds(3)`): `fds[0..<nfds]` become descriptors 3, 4, … (the
/// others are closed), standard input is /dev/null, standard output and error are
/// `log_fd`, the signal mask is empty and every signal has its default action. When
/// `listen_pid` is not NULL it is one of `envp`'s entries, a buffer of at least 32
/// bytes that the child fills with `LISTEN_PID=<its pid>` before it executes
/// `path` (the pid exists only after the fork). With `new_session` the child
/// starts a session of its own (`setsid`). Only async-signal-safe calls run between
/// the fork and the exec. Returns the child's pid, or -1 with errno set; a failure
/// in the child (the exec) ends it with status 127.
pid_t stol_spawn_service(const char *path, char *const argv[], char *const envp[], char *listen_pid,
                         const int *fds, int nfds, int log_fd, int new_session);

/// pidfd_open(2): a descriptor that becomes readable when `pid` exits. -1 with errno set.
int stol_pidfd_open(pid_t pid);

/// A signalfd(2) (close-on-exec) for SIGCHLD, SIGTERM, SIGINT and SIGHUP, which it
/// blocks in the calling thread (call it before other threads start, or they may
/// take these signals). -1 with errno set.
int stol_supervisor_signalfd(void);

/// Reads one signal from a descriptor of ``stol_supervisor_signalfd``: its number,
/// 0 when none is pending, -1 with errno set.
int stol_read_signal(int fd);

/// The path a Unix socket is bound to (getsockname), NUL-terminated in `buffer`:
/// its length, 0 for an unbound or abstract socket, -1 with errno set.
int stol_socket_path(int fd, char *buffer, size_t size);

/// flock(2) LOCK_EX, without waiting when `wait` is 0. 0, or -1 with errno set (EWOULDBLOCK: held elsewhere).
int stol_lock_exclusive(int fd, int wait);

/// sched_setattr(2) on the calling thread: SCHED_OTHER at `niceness`, asking for a
/// time slice of `slice_ns` (Linux 6.12 and later read it; older kernels ignore it),
/// with SCHED_FLAG_RESET_ON_FORK: threads it starts get the default slice.
/// glibc has no wrapper before 2.41, and Swift cannot call the variadic syscall(2).
/// 0, or -1 with errno set (ENOSYS, EPERM under a seccomp filter without it).
int stol_set_thread_scheduling(int niceness, unsigned long long slice_ns);

/// The same for the thread `thread_id` of this process (0: the calling one); a
/// `slice_ns` of 0 gives the kernel's default slice back. Raising a thread (a lower
/// niceness) needs CAP_SYS_NICE or an RLIMIT_NICE that allows it: else -1, EPERM/EACCES.
int stol_set_scheduling_of(int thread_id, int niceness, unsigned long long slice_ns);

/// The calling thread's id (gettid(2)), for ``stol_set_scheduling_of`` from another thread.
int stol_thread_id(void);

/// 1 when this process may set a thread's niceness down to `niceness` (its RLIMIT_NICE
/// allows it, or CAP_SYS_NICE is in its effective set), else 0.
int stol_may_raise_niceness_to(int niceness);

/// Names the calling thread (at most 15 bytes show) as `top -H`, `perf` and /proc see it:
/// pthread_setname_np needs _GNU_SOURCE, which Swift's Glibc module does not define.
void stol_set_thread_name(const char *name);

/// Makes the calling thread call sched_yield(2) every `interval_ns` until
/// ``stol_stop_thread_yields``: a timer of its own (CLOCK_MONOTONIC, a high-resolution
/// timer, not the CPU clock, whose timers fire only at the kernel's tick) sends the
/// thread a signal whose handler yields, so that the kernel looks again at which thread
/// should run between its ticks. The handler is installed with SA_RESTART, and yields
/// only once the thread ran half an interval of CPU since its last yield (so that a
/// thread whose yields last longer than the interval still works), and only while the
/// thread's niceness is not below the one it had at this call (a thread raised since,
/// because a request now waits for its work, no longer steps aside). The first call
/// makes the thread's timer; later ones re-arm it. 0, or -1 with errno set.
int stol_start_thread_yields(unsigned long long interval_ns);

/// Disarms the calling thread's timer (kept for the next start), if it has one.
void stol_stop_thread_yields(void);

/// Deletes the calling thread's timer, if any: a thread that made one calls this
/// before it ends (a timer belongs to the process and outlives its thread).
void stol_end_thread_yields(void);

/// The yields the calling thread made so far (tests).
unsigned long long stol_thread_yield_count(void);

/// The yield timer's signals the calling thread received so far, whether it yielded or not (tests).
unsigned long long stol_thread_yield_signal_count(void);

#endif
