// The verifier's self-sandbox: Landlock (file system, TCP, signals), seccomp
// (no new sockets, no connect, no exec) and PR_SET_NO_NEW_PRIVS. Swift cannot
// import the syscall() wrapper or libseccomp's macros, so the kernel interfaces
// live here; the policy (which paths) is decided in Swift (`STOLSandbox`).
#ifndef STOL_SANDBOX_H
#define STOL_SANDBOX_H

#include <stddef.h>

/// The Landlock ABI version the running kernel supports (>= 1), or -errno when
/// Landlock is unavailable (-ENOSYS: not built in; -EOPNOTSUPP: built in, disabled at boot).
int stol_landlock_abi(void);

/// A Landlock ruleset handling every file-system right of `abi`, TCP bind/connect
/// (ABI >= 4) and signals and abstract Unix sockets outside the domain (ABI >= 6).
/// Returns the ruleset fd or -1 with errno set.
int stol_landlock_create_ruleset(int abi);

/// Allows `access` (a LANDLOCK_ACCESS_FS_* mask; reduced to the rights a file may
/// carry when `fd` is not a directory) beneath the file or directory open as `fd`.
/// Returns 0 or -1 with errno set.
int stol_landlock_allow(int ruleset, int fd, unsigned long long access, int abi);

/// Enforces `ruleset` on the calling thread and the threads and processes it creates.
/// Returns 0 or -1 with errno set.
int stol_landlock_restrict_self(int ruleset);

/// open(path, O_PATH | O_CLOEXEC): a descriptor naming a file for a Landlock rule
/// (Glibc's Swift overlay does not export O_PATH). Returns the fd or -1 with errno.
int stol_open_path(const char *path);

/// A new, empty, unnamed file in `directory`, open read-write (close-on-exec):
/// O_TMPFILE, or mkostemp and an immediate unlink where the file system lacks it.
/// The kernel frees it when the last descriptor closes. Returns the fd or -1 with errno.
int stol_anonymous_file(const char *directory);

/// Every LANDLOCK_ACCESS_FS_* right of `abi`.
unsigned long long stol_landlock_fs_all(int abi);
/// Reading files and listing directories.
unsigned long long stol_landlock_fs_read(void);
/// Reading and writing files that exist (no creating, removing or renaming).
unsigned long long stol_landlock_fs_read_write_file(int abi);

/// PR_SET_NO_NEW_PRIVS: execve can never grant privileges again. 0 or -1 with errno.
int stol_no_new_privs(void);

/// Drops every capability: the ambient set, the bounding set (when the process
/// may, i.e. holds CAP_SETPCAP), then the effective, permitted and inheritable
/// sets (capset). A verifier started as root (make run) keeps its uid but loses
/// CAP_DAC_OVERRIDE, CAP_SYS_ADMIN, CAP_SYS_MODULE, CAP_KILL and the rest.
/// Returns 0, or -1 with errno when capset failed.
int stol_drop_capabilities(void);

/// The effective capability set's first 64 bits (capget), or -1 with errno.
long long stol_effective_capabilities(void);

/// An anonymous memory file (memfd_create, inherited across exec), or -1 with errno:
/// the test-only sandbox probe tries to execute a program from one.
int stol_memfd_create(const char *name);

/// Loads a seccomp filter on every thread of the process (TSYNC) that fails with
/// EPERM: new sockets and connections (socket, socketpair, connect, bind, listen),
/// programs (execve, execveat), io_uring (which could open sockets behind the
/// filter's back), other processes (ptrace, process_vm_readv/writev, pidfd_open,
/// pidfd_getfd, kcmp), the system (mount, umount2, pivot_root, chroot, unshare,
/// setns, init_module, finit_module, delete_module, kexec_load, kexec_file_load,
/// reboot, swapon, swapoff, iopl, ioperm, acct, quotactl, settimeofday,
/// clock_settime, clock_adjtime, adjtimex, sethostname, setdomainname, syslog),
/// handles that bypass paths (open_by_handle_at, name_to_handle_at), and bpf,
/// perf_event_open, userfaultfd, keyctl, add_key, request_key.
/// System calls of another architecture kill the process. Returns 0 or -errno.
int stol_seccomp_deny_network_and_exec(void);

/// The long-running daemons' own seccomp filter (on every thread): they never run
/// a program and never need a socket but a Unix one, so execve, execveat, sockets
/// of any other family, io_uring, ptrace and the system calls of the verifier's
/// list that change the system fail with EPERM. Returns 0 or -errno.
int stol_seccomp_daemon(void);

#endif
