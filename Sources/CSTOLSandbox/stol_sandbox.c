#define _GNU_SOURCE
#include "stol_sandbox.h"

#include <errno.h>
#include <linux/capability.h>
#include <string.h>
#include <fcntl.h>
#include <seccomp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

// The Landlock UAPI, written out so that the build does not depend on the
// kernel headers' age (Debian 12's linux-libc-dev knows ABI 1-2 only). These
// values are a stable kernel ABI (include/uapi/linux/landlock.h).
#ifndef __NR_landlock_create_ruleset
#define __NR_landlock_create_ruleset 444
#endif
#ifndef __NR_landlock_add_rule
#define __NR_landlock_add_rule 445
#endif
#ifndef __NR_landlock_restrict_self
#define __NR_landlock_restrict_self 446
#endif

#define STOL_LANDLOCK_CREATE_RULESET_VERSION (1U << 0)
#define STOL_LANDLOCK_RULE_PATH_BENEATH 1

#define FS_EXECUTE (1ULL << 0)
#define FS_WRITE_FILE (1ULL << 1)
#define FS_READ_FILE (1ULL << 2)
#define FS_READ_DIR (1ULL << 3)
#define FS_REMOVE_DIR (1ULL << 4)
#define FS_REMOVE_FILE (1ULL << 5)
#define FS_MAKE_CHAR (1ULL << 6)
#define FS_MAKE_DIR (1ULL << 7)
#define FS_MAKE_REG (1ULL << 8)
#define FS_MAKE_SOCK (1ULL << 9)
#define FS_MAKE_FIFO (1ULL << 10)
#define FS_MAKE_BLOCK (1ULL << 11)
#define FS_MAKE_SYM (1ULL << 12)
#define FS_REFER (1ULL << 13)      /* ABI 2 */
#define FS_TRUNCATE (1ULL << 14)   /* ABI 3 */
#define FS_IOCTL_DEV (1ULL << 15)  /* ABI 5 */
#define NET_BIND_TCP (1ULL << 0)   /* ABI 4 */
#define NET_CONNECT_TCP (1ULL << 1)
#define SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0)  /* ABI 6 */
#define SCOPE_SIGNAL (1ULL << 1)

struct stol_landlock_ruleset_attr {
    uint64_t handled_access_fs;
    uint64_t handled_access_net;
    uint64_t scoped;
};

struct stol_landlock_path_beneath_attr {
    uint64_t allowed_access;
    int32_t parent_fd;
} __attribute__((packed));

int stol_open_path(const char *path) { return open(path, O_PATH | O_CLOEXEC); }

int stol_anonymous_file(const char *directory) {
    int fd = open(directory, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (fd >= 0 || (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL)) return fd;
    char template[4096];
    if (snprintf(template, sizeof(template), "%s/stol-verifyd.XXXXXX", directory) >= (int)sizeof(template)) {
        errno = ENAMETOOLONG;
        return -1;
    }
    fd = mkostemp(template, O_CLOEXEC);
    if (fd >= 0) unlink(template);
    return fd;
}

int stol_landlock_abi(void) {
    long abi = syscall(__NR_landlock_create_ruleset, NULL, 0, STOL_LANDLOCK_CREATE_RULESET_VERSION);
    return abi < 0 ? -errno : (int)abi;
}

unsigned long long stol_landlock_fs_all(int abi) {
    unsigned long long all = (FS_MAKE_SYM << 1) - 1;  // ABI 1: bits 0-12
    if (abi >= 2) all |= FS_REFER;
    if (abi >= 3) all |= FS_TRUNCATE;
    if (abi >= 5) all |= FS_IOCTL_DEV;
    return all;
}

unsigned long long stol_landlock_fs_read(void) { return FS_READ_FILE | FS_READ_DIR; }

unsigned long long stol_landlock_fs_read_write_file(int abi) {
    unsigned long long rights = FS_READ_FILE | FS_WRITE_FILE;
    if (abi >= 3) rights |= FS_TRUNCATE;
    return rights;
}

int stol_landlock_create_ruleset(int abi) {
    struct stol_landlock_ruleset_attr attr = {0};
    size_t size = sizeof(attr.handled_access_fs);
    attr.handled_access_fs = stol_landlock_fs_all(abi);
    if (abi >= 4) {
        attr.handled_access_net = NET_BIND_TCP | NET_CONNECT_TCP;
        size = offsetof(struct stol_landlock_ruleset_attr, scoped);
    }
    if (abi >= 6) {
        attr.scoped = SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL;
        size = sizeof(attr);
    }
    long fd = syscall(__NR_landlock_create_ruleset, &attr, size, 0);
    return (int)fd;
}

int stol_landlock_allow(int ruleset, int fd, unsigned long long access, int abi) {
    struct stat info;
    if (fstat(fd, &info) != 0) return -1;
    if (!S_ISDIR(info.st_mode)) {
        // Rights about directory entries are meaningless (EINVAL) on a file.
        access &= FS_EXECUTE | FS_WRITE_FILE | FS_READ_FILE | FS_TRUNCATE | FS_IOCTL_DEV;
    }
    access &= stol_landlock_fs_all(abi);
    struct stol_landlock_path_beneath_attr rule = {.allowed_access = access, .parent_fd = fd};
    return (int)syscall(__NR_landlock_add_rule, ruleset, STOL_LANDLOCK_RULE_PATH_BENEATH, &rule, 0);
}

int stol_landlock_restrict_self(int ruleset) {
    return (int)syscall(__NR_landlock_restrict_self, ruleset, 0);
}

int stol_no_new_privs(void) {
    return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
}

int stol_drop_capabilities(void) {
    prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
    for (int cap = 0; cap <= 63; cap++) {
        if (prctl(PR_CAPBSET_READ, cap, 0, 0, 0) < 0) break;  // past the kernel's last capability
        prctl(PR_CAPBSET_DROP, cap, 0, 0, 0);                 // EPERM without CAP_SETPCAP: harmless then
    }
    struct __user_cap_header_struct header = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
    struct __user_cap_data_struct data[2];
    memset(data, 0, sizeof(data));
    return (int)syscall(SYS_capset, &header, data);
}

int stol_memfd_create(const char *name) {
    return memfd_create(name, 0);
}

long long stol_effective_capabilities(void) {
    struct __user_cap_header_struct header = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
    struct __user_cap_data_struct data[2];
    memset(data, 0, sizeof(data));
    if (syscall(SYS_capget, &header, data) != 0) return -1;
    return (long long)(((unsigned long long)data[1].effective << 32) | data[0].effective);
}

/// Calls every sandboxed STOL process is refused: other processes, the system,
/// path-bypassing handles, io_uring.
static const char *const system_calls_denied[] = {
    "execve", "execveat", "io_uring_setup", "io_uring_enter", "io_uring_register",
    "ptrace", "process_vm_readv", "process_vm_writev", "pidfd_open", "pidfd_getfd", "kcmp",
    "mount", "umount2", "pivot_root", "chroot", "unshare", "setns",
    "init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load", "reboot",
    "swapon", "swapoff", "iopl", "ioperm", "acct", "quotactl",
    "settimeofday", "clock_settime", "clock_adjtime", "adjtimex", "sethostname", "setdomainname", "syslog",
    "open_by_handle_at", "name_to_handle_at",
    "bpf", "perf_event_open", "userfaultfd", "keyctl", "add_key", "request_key",
};

static int deny_all(scmp_filter_ctx ctx, const char *const *names, size_t count) {
    for (size_t i = 0; i < count; i++) {
        int number = seccomp_syscall_resolve_name(names[i]);
        if (number == __NR_SCMP_ERROR) continue;  // not on this architecture
        int rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), number, 0);
        if (rc != 0) return rc;
    }
    return 0;
}

static int load(scmp_filter_ctx ctx, int rc) {
    if (rc == 0) rc = seccomp_load(ctx);
    seccomp_release(ctx);
    return rc;
}

int stol_seccomp_deny_network_and_exec(void) {
    scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
    if (ctx == NULL) return -ENOMEM;
    static const char *const sockets[] = {"socket", "socketpair", "connect", "bind", "listen"};
    int rc = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_TSYNC, 1);
    if (rc == 0) rc = deny_all(ctx, system_calls_denied, sizeof(system_calls_denied) / sizeof(system_calls_denied[0]));
    if (rc == 0) rc = deny_all(ctx, sockets, sizeof(sockets) / sizeof(sockets[0]));
    return load(ctx, rc);
}

int stol_seccomp_daemon(void) {
    scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
    if (ctx == NULL) return -ENOMEM;
    int rc = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_TSYNC, 1);
    if (rc == 0) rc = deny_all(ctx, system_calls_denied, sizeof(system_calls_denied) / sizeof(system_calls_denied[0]));
    // Sockets: AF_UNIX only (the first argument, the domain).
    if (rc == 0) rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(socket), 1, SCMP_A0(SCMP_CMP_NE, AF_UNIX));
    if (rc == 0) rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(socketpair), 1, SCMP_A0(SCMP_CMP_NE, AF_UNIX));
    return load(ctx, rc);
}
