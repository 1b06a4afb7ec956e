#define _GNU_SOURCE
#include "stol_socket.h"

#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sched.h>
#include <string.h>
#include <time.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

ssize_t stol_send_with_fd(int sock, const void *buf, size_t len, int fd_to_send) {
    struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };
    struct msghdr msg;
    memset(&msg, 0, sizeof msg);
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    union {
        char buf[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } control;
    if (fd_to_send >= 0) {
        memset(&control, 0, sizeof control);
        msg.msg_control = control.buf;
        msg.msg_controllen = sizeof control.buf;
        struct cmsghdr *cmsg = CMSG_FIRSTHDR(&msg);
        cmsg->cmsg_level = SOL_SOCKET;
        cmsg->cmsg_type = SCM_RIGHTS;
        cmsg->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(cmsg), &fd_to_send, sizeof(int));
    }
    ssize_t n;
    do {
        n = sendmsg(sock, &msg, MSG_NOSIGNAL);
    } while (n < 0 && errno == EINTR);
    return n;
}

ssize_t stol_recv_with_fds(int sock, void *buf, size_t len, int *fds_out, int max_fds, int *n_fds) {
    struct iovec iov = { .iov_base = buf, .iov_len = len };
    struct msghdr msg;
    memset(&msg, 0, sizeof msg);
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    union {
        char buf[CMSG_SPACE(sizeof(int) * 8)];
        struct cmsghdr align;
    } control;
    msg.msg_control = control.buf;
    msg.msg_controllen = sizeof control.buf;
    *n_fds = 0;
    ssize_t n;
    do {
        n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
    } while (n < 0 && errno == EINTR);
    if (n < 0) return n;
    for (struct cmsghdr *cmsg = CMSG_FIRSTHDR(&msg); cmsg != NULL; cmsg = CMSG_NXTHDR(&msg, cmsg)) {
        if (cmsg->cmsg_level != SOL_SOCKET || cmsg->cmsg_type != SCM_RIGHTS) continue;
        size_t count = (cmsg->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        int *received = (int *)CMSG_DATA(cmsg);
        for (size_t i = 0; i < count; i++) {
            int fd;
            memcpy(&fd, &received[i], sizeof fd);
            if (*n_fds < max_fds) {
                fds_out[(*n_fds)++] = fd;
            } else {
                close(fd);
            }
        }
    }
    return n;
}

int stol_peer_credentials(int sock, pid_t *pid, uid_t *uid, gid_t *gid) {
    struct ucred cred;
    socklen_t size = sizeof cred;
    if (getsockopt(sock, SOL_SOCKET, SO_PEERCRED, &cred, &size) != 0) return -1;
    *pid = cred.pid;
    *uid = cred.uid;
    *gid = cred.gid;
    return 0;
}

int stol_peer_groups(int sock, gid_t *groups, int max) {
    socklen_t size = (socklen_t)(sizeof(gid_t) * (size_t)max);
    if (getsockopt(sock, SOL_SOCKET, SO_PEERGROUPS, groups, &size) != 0) {
        if (errno == ERANGE) return (int)(size / sizeof(gid_t));
        return -1;
    }
    return (int)(size / sizeof(gid_t));
}

int stol_socket_is_listening(int fd) {
    int value = 0;
    socklen_t size = sizeof value;
    if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &value, &size) != 0) return -1;
    return value ? 1 : 0;
}

static int fill_address(struct sockaddr_un *addr, const char *path) {
    memset(addr, 0, sizeof *addr);
    addr->sun_family = AF_UNIX;
    if (strlen(path) >= sizeof addr->sun_path) {
        errno = ENAMETOOLONG;
        return -1;
    }
    strcpy(addr->sun_path, path);
    return 0;
}

int stol_bind_unix(const char *path, unsigned int mode, int backlog) {
    struct sockaddr_un addr;
    if (fill_address(&addr, path) != 0) return -1;
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    struct stat st;
    if (lstat(path, &st) == 0 && S_ISSOCK(st.st_mode)) unlink(path);
    if (bind(fd, (struct sockaddr *)&addr, sizeof addr) != 0 || chmod(path, (mode_t)mode) != 0 ||
        listen(fd, backlog) != 0) {
        int saved = errno;
        close(fd);
        errno = saved;
        return -1;
    }
    return fd;
}

int stol_connect_unix(const char *path) {
    struct sockaddr_un addr;
    if (fill_address(&addr, path) != 0) return -1;
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    int rc;
    do {
        rc = connect(fd, (struct sockaddr *)&addr, sizeof addr);
    } while (rc != 0 && errno == EINTR);
    if (rc != 0) {
        int saved = errno;
        close(fd);
        errno = saved;
        return -1;
    }
    return fd;
}

int stol_accept(int listener) {
    int fd;
    do {
        fd = accept4(listener, NULL, NULL, SOCK_CLOEXEC);
    } while (fd < 0 && errno == EINTR);
    return fd;
}

int stol_pipe(int fds[2]) {
    return pipe2(fds, O_CLOEXEC);
}

pid_t stol_spawn_service(const char *path, char *const argv[], char *const envp[], char *listen_pid,
                         const int *fds, int nfds, int log_fd, int new_session) {
    if (nfds < 0 || nfds > 16) { errno = EINVAL; return -1; }
    pid_t pid = fork();
    if (pid != 0) return pid;  /* the parent, or -1 */
    /* The child: async-signal-safe calls only. */
    sigset_t empty;
    sigemptyset(&empty);
    sigprocmask(SIG_SETMASK, &empty, NULL);
    struct sigaction defaults;
    memset(&defaults, 0, sizeof defaults);
    defaults.sa_handler = SIG_DFL;
    for (int sig = 1; sig < NSIG; sig++) sigaction(sig, &defaults, NULL);
    if (new_session) setsid();
    /* Move every passed descriptor above the target range first, so that placing one
       at 3 + i never overwrites another still to be placed. */
    int moved[16];
    for (int i = 0; i < nfds; i++) {
        moved[i] = fcntl(fds[i], F_DUPFD_CLOEXEC, 3 + 16);
        if (moved[i] < 0) _exit(127);
    }
    int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (null_fd < 0 || dup2(null_fd, 0) < 0) _exit(127);
    if (log_fd >= 0 && (dup2(log_fd, 1) < 0 || dup2(log_fd, 2) < 0)) _exit(127);
    for (int i = 0; i < nfds; i++) {
        if (dup2(moved[i], 3 + i) < 0) _exit(127);  /* dup2 clears close-on-exec */
    }
    /* Everything else goes: the supervisor's listeners, other children's connections. */
    if (syscall(SYS_close_range, (unsigned int)(3 + nfds), ~0U, 0) != 0) {
        for (int fd = 3 + nfds; fd < 4096; fd++) close(fd);  /* kernels before 5.9 */
    }
    if (listen_pid != NULL) {
        char digits[16];
        int n = 0;
        for (pid_t value = getpid(); value > 0 && n < 15; value /= 10) digits[n++] = (char)('0' + value % 10);
        const char *prefix = "LISTEN_PID=";
        int at = 0;
        while (prefix[at] != '\0') { listen_pid[at] = prefix[at]; at++; }
        while (n > 0) listen_pid[at++] = digits[--n];
        listen_pid[at] = '\0';
    }
    execve(path, argv, envp);
    _exit(127);
}

int stol_pidfd_open(pid_t pid) {
    return (int)syscall(SYS_pidfd_open, pid, 0);
}

int stol_supervisor_signalfd(void) {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGHUP);
    if (pthread_sigmask(SIG_BLOCK, &set, NULL) != 0) return -1;
    return signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
}

int stol_read_signal(int fd) {
    struct signalfd_siginfo info;
    ssize_t n;
    do {
        n = read(fd, &info, sizeof info);
    } while (n < 0 && errno == EINTR);
    if (n < 0) return errno == EAGAIN ? 0 : -1;
    if (n != (ssize_t)sizeof info) { errno = EIO; return -1; }
    return (int)info.ssi_signo;
}

int stol_lock_exclusive(int fd, int wait) {
    int rc;
    do {
        rc = flock(fd, LOCK_EX | (wait ? 0 : LOCK_NB));
    } while (rc != 0 && errno == EINTR);
    return rc;
}

int stol_socket_path(int fd, char *buffer, size_t size) {
    struct sockaddr_un addr;
    socklen_t length = sizeof addr;
    memset(&addr, 0, sizeof addr);
    if (getsockname(fd, (struct sockaddr *)&addr, &length) != 0) return -1;
    if (addr.sun_family != AF_UNIX) { errno = ENOTSOCK; return -1; }
    if (length <= offsetof(struct sockaddr_un, sun_path) || addr.sun_path[0] == '\0') {
        if (size > 0) buffer[0] = '\0';
        return 0;
    }
    size_t n = strnlen(addr.sun_path, length - offsetof(struct sockaddr_un, sun_path));
    if (n + 1 > size) { errno = ENAMETOOLONG; return -1; }
    memcpy(buffer, addr.sun_path, n);
    buffer[n] = '\0';
    return (int)n;
}

/* The kernel's struct sched_attr (include/uapi/linux/sched/types.h), version 1 (56 bytes). */
struct stol_sched_attr {
    uint32_t size, sched_policy;
    uint64_t sched_flags;
    int32_t sched_nice;
    uint32_t sched_priority;
    uint64_t sched_runtime, sched_deadline, sched_period;
    uint32_t sched_util_min, sched_util_max;
};

int stol_set_scheduling_of(int thread_id, int niceness, unsigned long long slice_ns) {
#ifdef SYS_sched_setattr
    struct stol_sched_attr attr;
    memset(&attr, 0, sizeof attr);
    attr.size = sizeof attr;
    attr.sched_policy = 0; /* SCHED_OTHER */
    attr.sched_nice = niceness;
    attr.sched_runtime = slice_ns; /* 0: the kernel's default slice */
    /* Threads this one starts (libdispatch's workers, which then serve every user) get
       the default slice, not this one's (the kernel resets it; the niceness stays). */
    attr.sched_flags = 0x01; /* SCHED_FLAG_RESET_ON_FORK */
    return (int)syscall(SYS_sched_setattr, (pid_t)thread_id, &attr, 0);
#else
    errno = ENOSYS;
    return -1;
#endif
}

int stol_set_thread_scheduling(int niceness, unsigned long long slice_ns) {
    return stol_set_scheduling_of(0, niceness, slice_ns);
}

int stol_thread_id(void) { return (int)syscall(SYS_gettid); }

int stol_may_raise_niceness_to(int niceness) {
    /* RLIMIT_NICE's ceiling is 20 - limit: 20 allows niceness 0, 24 allows -4. */
    struct rlimit limit;
    if (getrlimit(RLIMIT_NICE, &limit) == 0
        && (limit.rlim_cur == RLIM_INFINITY || 20 - (long long)limit.rlim_cur <= niceness)) return 1;
    /* CAP_SYS_NICE (23) in the effective set: capget(2), version 3 (two 32-bit words). */
    struct { uint32_t version; int pid; } header = { 0x20080522, 0 };
    struct { uint32_t effective, permitted, inheritable; } data[2];
    memset(data, 0, sizeof data);
    if (syscall(SYS_capget, &header, data) != 0) return 0;
    return (data[0].effective >> 23) & 1;
}

void stol_set_thread_name(const char *name) {
    prctl(PR_SET_NAME, (unsigned long)name, 0, 0, 0);
}

/* The yield timer's signal: a real-time one glibc leaves to applications, which
   neither NIO nor libdispatch uses. */
#define STOL_YIELD_SIGNAL (SIGRTMIN + 7)

static __thread timer_t stol_yield_timer;
static __thread int stol_yield_timer_made;
static __thread unsigned long long stol_yields;
static __thread unsigned long long stol_yield_signals;
static pthread_once_t stol_yield_handler_once = PTHREAD_ONCE_INIT;
static int stol_yield_handler_error;

static __thread long long stol_yield_min_run_ns;
static __thread long long stol_cpu_at_last_yield_ns;
/* The niceness the thread had when its yields started: a thread raised above it since
   (a request now waits for its work) no longer steps aside. */
static __thread int stol_yield_niceness;

static long long stol_thread_cpu_ns(void) {
    struct timespec now;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now) != 0) return -1;
    return (long long)now.tv_sec * 1000000000LL + now.tv_nsec;
}

/* Yields only once the thread has run at least half an interval of CPU since its last
   yield: on a machine whose cores are taken, a yield may last longer than the interval,
   and yielding at every signal would then chain handler to handler and the thread's own
   work would never run again. A thread raised above the niceness its yields started at
   (``stol_set_scheduling_of`` from another thread: someone now waits for its work) does
   not yield. Only async-signal-safe calls here. */
static void stol_yield_on_signal(int signal_number) {
    (void)signal_number;
    int saved = errno;
    stol_yield_signals += 1;
    long long ran = stol_thread_cpu_ns();
    if (ran >= 0 && ran - stol_cpu_at_last_yield_ns >= stol_yield_min_run_ns
        && getpriority(PRIO_PROCESS, 0) >= stol_yield_niceness) {
        stol_yields += 1;
        sched_yield();
        stol_cpu_at_last_yield_ns = stol_thread_cpu_ns();
    }
    errno = saved;
}

static void stol_install_yield_handler(void) {
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = stol_yield_on_signal;
    action.sa_flags = SA_RESTART;
    sigemptyset(&action.sa_mask);
    if (sigaction(STOL_YIELD_SIGNAL, &action, NULL) != 0) stol_yield_handler_error = errno;
}

static int stol_set_yield_interval(unsigned long long interval_ns) {
    struct itimerspec every;
    every.it_interval.tv_sec = (time_t)(interval_ns / 1000000000ULL);
    every.it_interval.tv_nsec = (long)(interval_ns % 1000000000ULL);
    every.it_value = every.it_interval;
    return timer_settime(stol_yield_timer, 0, &every, NULL);
}

int stol_start_thread_yields(unsigned long long interval_ns) {
    if (!stol_yield_timer_made) {
        pthread_once(&stol_yield_handler_once, stol_install_yield_handler);
        if (stol_yield_handler_error != 0) { errno = stol_yield_handler_error; return -1; }
        sigset_t unblocked;
        sigemptyset(&unblocked);
        sigaddset(&unblocked, STOL_YIELD_SIGNAL);
        pthread_sigmask(SIG_UNBLOCK, &unblocked, NULL);
        struct sigevent event;
        memset(&event, 0, sizeof event);
        event.sigev_notify = SIGEV_THREAD_ID;
        event.sigev_signo = STOL_YIELD_SIGNAL;
        event._sigev_un._tid = (pid_t)syscall(SYS_gettid);
        if (timer_create(CLOCK_MONOTONIC, &event, &stol_yield_timer) != 0) return -1;
        stol_yield_timer_made = 1;
    }
    stol_yield_min_run_ns = (long long)(interval_ns / 2);
    stol_cpu_at_last_yield_ns = stol_thread_cpu_ns();
    stol_yield_niceness = getpriority(PRIO_PROCESS, 0);
    return stol_set_yield_interval(interval_ns);
}

void stol_stop_thread_yields(void) {
    if (stol_yield_timer_made) stol_set_yield_interval(0);
}

void stol_end_thread_yields(void) {
    if (!stol_yield_timer_made) return;
    timer_delete(stol_yield_timer);
    stol_yield_timer_made = 0;
}

unsigned long long stol_thread_yield_count(void) { return stol_yields; }

unsigned long long stol_thread_yield_signal_count(void) { return stol_yield_signals; }
