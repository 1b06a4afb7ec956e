#define _GNU_SOURCE
#include "stol_socket.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/socket.h>
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
