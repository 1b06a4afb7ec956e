#include "stol_web_peer.h"

#include <errno.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int stol_tcp_owner(const struct sockaddr *local, const struct sockaddr *peer, uid_t *uid) {
    int family = local->sa_family;
    if (family != peer->sa_family || (family != AF_INET && family != AF_INET6)) {
        errno = EAFNOSUPPORT;
        return -1;
    }
    struct {
        struct nlmsghdr header;
        struct inet_diag_req_v2 request;
    } message;
    memset(&message, 0, sizeof message);
    message.header.nlmsg_len = sizeof message;
    message.header.nlmsg_type = SOCK_DIAG_BY_FAMILY;
    message.header.nlmsg_flags = NLM_F_REQUEST;
    message.header.nlmsg_seq = 1;
    message.request.sdiag_family = (uint8_t)family;
    message.request.sdiag_protocol = IPPROTO_TCP;
    message.request.idiag_states = ~0U;
    message.request.id.idiag_cookie[0] = INET_DIAG_NOCOOKIE;
    message.request.id.idiag_cookie[1] = INET_DIAG_NOCOOKIE;
    /* The peer's socket: its source is our peer, its destination us. */
    if (family == AF_INET) {
        const struct sockaddr_in *l = (const struct sockaddr_in *)local, *p = (const struct sockaddr_in *)peer;
        message.request.id.idiag_sport = p->sin_port;
        message.request.id.idiag_dport = l->sin_port;
        memcpy(message.request.id.idiag_src, &p->sin_addr, 4);
        memcpy(message.request.id.idiag_dst, &l->sin_addr, 4);
    } else {
        const struct sockaddr_in6 *l = (const struct sockaddr_in6 *)local, *p = (const struct sockaddr_in6 *)peer;
        message.request.id.idiag_sport = p->sin6_port;
        message.request.id.idiag_dport = l->sin6_port;
        memcpy(message.request.id.idiag_src, &p->sin6_addr, 16);
        memcpy(message.request.id.idiag_dst, &l->sin6_addr, 16);
    }
    int netlink = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
    if (netlink < 0) return -1;
    struct sockaddr_nl kernel;
    memset(&kernel, 0, sizeof kernel);
    kernel.nl_family = AF_NETLINK;
    ssize_t n;
    do {
        n = sendto(netlink, &message, sizeof message, 0, (struct sockaddr *)&kernel, sizeof kernel);
    } while (n < 0 && errno == EINTR);
    union {
        char bytes[8192];
        struct nlmsghdr align;
    } answer;
    if (n >= 0) {
        do {
            n = recv(netlink, answer.bytes, sizeof answer.bytes, 0);
        } while (n < 0 && errno == EINTR);
    }
    int saved = errno;
    close(netlink);
    if (n < 0) { errno = saved; return -1; }
    for (struct nlmsghdr *h = &answer.align; NLMSG_OK(h, (size_t)n); h = NLMSG_NEXT(h, n)) {
        if (h->nlmsg_type == NLMSG_ERROR) {
            const struct nlmsgerr *error = NLMSG_DATA(h);
            errno = error->error < 0 ? -error->error : ENOENT;
            return -1;
        }
        if (h->nlmsg_type == SOCK_DIAG_BY_FAMILY && h->nlmsg_len >= NLMSG_LENGTH(sizeof(struct inet_diag_msg))) {
            *uid = (uid_t)((const struct inet_diag_msg *)NLMSG_DATA(h))->idiag_uid;
            return 0;
        }
    }
    errno = ENOENT;
    return -1;
}
