/*
 * conn.c — a non-blocking framed control connection: an input buffer that
 * gathers partial reads into whole frames, an output queue that survives
 * partial writes, and a blocking request helper on top for clients.
 *
 * Input: bytes [in_off, in_len) of `in` are unread; the frame returned last
 * is [in_off, in_off + in_used) and is dropped by the next read call (which
 * is why its fields stay valid until then).  Buffers grow to the largest
 * frame seen, at most OC_CTL_FRAME_MAX; a header is checked as soon as it is
 * in, so a bad peer cannot make us wait for (or allocate) a bogus length.
 */
#include "ctl/ctl.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "util/log.h"
#include "util/clock.h"

#define IN_INITIAL 4096

struct oc_ctl_conn {
    int         fd;        /* -1 with a reader */
    oc__ctl_reader_t reader;
    void       *reader_arg;
    bool        is_socket; /* send() with MSG_NOSIGNAL, else write() */
    oc_status_t rstatus;   /* sticky: reading is over */
    oc_status_t wstatus;   /* sticky: writing is over */
    uint8_t    *in;
    size_t      in_cap, in_off, in_len, in_used;
    uint8_t    *out;
    size_t      out_cap, out_head, out_len;
    size_t      max_frame; /* oc__ctl_conn_set_max_frame() */
    char        name[OC_CTL_ADDR_STRLEN];
    /* descriptors (SCM_RIGHTS, Unix sockets only): to send with the
     * first byte of the frame at out + sfd_at; received, in order */
    int         sfds[OC_CTL_MAX_FDS], nsfds;
    size_t      sfd_at;
    bool        accept_fds;
    int         rfds[OC_CTL_MAX_FDS], nrfds;
    unsigned    peer_version; /* the version of a frame refused for it */
};

oc_status_t oc__ctl_conn_create(int fd, const char *name, oc_ctl_conn_t **conn_p)
{
    oc_ctl_conn_t *c;
    int flags, type;
    socklen_t tl = sizeof(type);

    if (fd < 0 || conn_p == NULL)
        return OC_ERR_INVALID_PARAM;
    flags = fcntl(fd, F_GETFL);
    if (flags < 0)
        return OC_ERR_INVALID_PARAM;
    c = calloc(1, sizeof(*c));
    if (c == NULL)
        return OC_ERR_NO_MEMORY;
    c->in = malloc(IN_INITIAL);
    if (c->in == NULL) {
        free(c);
        return OC_ERR_NO_MEMORY;
    }
    c->in_cap = IN_INITIAL;
    if (!(flags & O_NONBLOCK) && fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0) {
        free(c->in);
        free(c);
        return OC_ERR_INVALID_PARAM;
    }
    c->fd = fd;
    c->max_frame = OC_CTL_FRAME_MAX;
    c->is_socket = getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tl) == 0;
    if (name != NULL)
        snprintf(c->name, sizeof(c->name), "%s", name);
    else
        snprintf(c->name, sizeof(c->name), "fd %d", fd);
    *conn_p = c;
    return OC_OK;
}

oc_status_t oc__ctl_conn_create_reader(oc__ctl_reader_t reader, void *arg,
                                      const char *name, oc_ctl_conn_t **conn_p)
{
    oc_ctl_conn_t *c;

    if (reader == NULL || conn_p == NULL)
        return OC_ERR_INVALID_PARAM;
    c = calloc(1, sizeof(*c));
    if (c == NULL || (c->in = malloc(IN_INITIAL)) == NULL) {
        free(c);
        return OC_ERR_NO_MEMORY;
    }
    c->fd = -1;
    c->max_frame = OC_CTL_FRAME_MAX;
    c->in_cap = IN_INITIAL;
    c->reader = reader;
    c->reader_arg = arg;
    snprintf(c->name, sizeof(c->name), "%s", name != NULL ? name : "reader");
    *conn_p = c;
    return OC_OK;
}

void oc__ctl_conn_destroy(oc_ctl_conn_t *c)
{
    if (c == NULL)
        return;
    if (c->fd >= 0)
        close(c->fd);
    for (int i = 0; i < c->nsfds; i++)
        close(c->sfds[i]);
    for (int i = 0; i < c->nrfds; i++)
        close(c->rfds[i]);
    free(c->in);
    free(c->out);
    free(c);
}

void oc__ctl_conn_accept_fds(oc_ctl_conn_t *c)
{
    c->accept_fds = c->is_socket;
}

int oc__ctl_conn_take_fd(oc_ctl_conn_t *c)
{
    int fd;
    if (c->nrfds == 0)
        return -1;
    fd = c->rfds[0];
    memmove(c->rfds, c->rfds + 1, sizeof(int) * (size_t)--c->nrfds);
    return fd;
}

/* read() that keeps the descriptors a peer passed (accept_fds). */
static ssize_t read_fds(oc_ctl_conn_t *c, void *buf, size_t len)
{
    union {
        struct cmsghdr h;
        char b[CMSG_SPACE(sizeof(int) * OC_CTL_MAX_FDS)];
    } u;
    struct iovec iov = {buf, len};
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1,
                        .msg_control = u.b, .msg_controllen = sizeof(u.b)};
    ssize_t n = recvmsg(c->fd, &mh, MSG_CMSG_CLOEXEC);

    if (n < 0)
        return n;
    for (struct cmsghdr *h = CMSG_FIRSTHDR(&mh); h != NULL;
         h = CMSG_NXTHDR(&mh, h)) {
        if (h->cmsg_level != SOL_SOCKET || h->cmsg_type != SCM_RIGHTS)
            continue;
        size_t k = (h->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < k; i++) {
            int fd;
            memcpy(&fd, CMSG_DATA(h) + i * sizeof(int), sizeof(int));
            if (c->nrfds < OC_CTL_MAX_FDS)
                c->rfds[c->nrfds++] = fd;
            else
                close(fd); /* more than anyone sends: not ours to keep */
        }
    }
    return n;
}

int oc__ctl_conn_fd(const oc_ctl_conn_t *c)
{
    return c->fd;
}

const char *oc__ctl_conn_name(const oc_ctl_conn_t *c)
{
    return c->name;
}

unsigned oc__ctl_conn_peer_version(const oc_ctl_conn_t *c)
{
    return c->peer_version;
}

oc_status_t oc__ctl_conn_send_version_error(oc_ctl_conn_t *c, const char *text)
{
    oc_ctl_msg_t m;
    size_t before;
    oc_status_t st;

    if (c == NULL || text == NULL || c->peer_version == 0)
        return OC_ERR_INVALID_PARAM;
    memset(&m, 0, sizeof(m));
    m.type = OC_CTL_ERROR;
    m.u.error.status = OC_ERR_WIRE_VERSION;
    m.u.error.text.data = (const uint8_t *)text;
    m.u.error.text.len = (uint32_t)strnlen(text, OC_CTL_MAX_TEXT);
    before = c->out_len;
    if ((st = oc__ctl_conn_send(c, &m)) != OC_OK)
        return st;
    /* ERROR's layout is the same in every version: framed in the peer's
     * own, the refusal is one it can read */
    c->out[before + 4] = (uint8_t)c->peer_version;
    c->out[before + 5] = (uint8_t)(c->peer_version >> 8);
    return OC_OK;
}

void oc__ctl_conn_set_max_frame(oc_ctl_conn_t *c, size_t max)
{
    c->max_frame = max < OC_CTL_HDR_LEN ? OC_CTL_HDR_LEN
                   : max > OC_CTL_FRAME_MAX ? OC_CTL_FRAME_MAX : max;
}

const char *oc__ctl_reject_reason(oc_status_t st)
{
    /* the wire codes are shared with bundles; say what they mean here */
    switch ((int)st) { /* int: reject reasons (util/reject.h) */
    case OC_ERR_WIRE_MAGIC:
        return "not an offcore control frame (bad magic)";
    case OC_ERR_WIRE_VERSION:
        return "control protocol version not supported";
    case OC_ERR_WIRE_LENGTH:
        return "bad length (or a frame larger than allowed before "
               "authentication)";
    case OC_ERR_WIRE_FLAGS:
        return "reserved header field not 0";
    case OC_ERR_WIRE_TRUNCATED:
        return "truncated control frame";
    case OC_ERR_WIRE_COUNT:
        return "a list longer than its maximum";
    case OC_ERR_CTL_TYPE:
        return "unknown control message type";
    case OC_ERR_CTL_VALUE:
        return "a field out of range";
    default:
        return oc_status_string(st);
    }
}

/* The caller (the agent) logs malformed input once, rate-limited, with
 * what it knows of the peer: here only at debug. */
static oc_status_t read_fail(oc_ctl_conn_t *c, oc_status_t st, const char *why)
{
    c->rstatus = st;
    c->in_used = 0;
    if (st == OC_ERR_PEER_FAILED)
        oc_debug(OC_COMP_CTL, "ctl: %s: %s", c->name, why);
    else
        oc_debug(OC_COMP_CTL, "ctl: %s: malformed frame: %s", c->name,
                 oc__ctl_reject_reason(st));
    return st;
}

/* Make room for a frame of @p need bytes starting at in_off. */
static oc_status_t in_room(oc_ctl_conn_t *c, size_t need)
{
    size_t have = c->in_len - c->in_off;
    size_t cap;
    uint8_t *p;

    if (c->in_cap - c->in_off >= need && c->in_len < c->in_cap)
        return OC_OK;
    if (c->in_off > 0) {
        memmove(c->in, c->in + c->in_off, have);
        c->in_off = 0;
        c->in_len = have;
        if (c->in_cap >= need && c->in_len < c->in_cap)
            return OC_OK;
    }
    cap = c->in_cap;
    while (cap < need)
        cap *= 2;
    if (cap > c->max_frame)
        cap = c->max_frame; /* >= need: read() checked the header */
    p = realloc(c->in, cap);
    if (p == NULL)
        return OC_ERR_NO_MEMORY;
    c->in = p;
    c->in_cap = cap;
    return OC_OK;
}

oc_status_t oc__ctl_conn_read(oc_ctl_conn_t *c, oc_ctl_msg_t *msg)
{
    oc_status_t st;

    if (c == NULL || msg == NULL)
        return OC_ERR_INVALID_PARAM;
    if (c->rstatus != OC_OK)
        return c->rstatus;
    c->in_off += c->in_used;
    c->in_used = 0;
    if (c->in_off == c->in_len)
        c->in_off = c->in_len = 0;

    for (;;) {
        size_t have = c->in_len - c->in_off, need = OC_CTL_HDR_LEN;
        ssize_t n;

        st = oc__ctl_frame_len(c->in + c->in_off, have, &need);
        if (st == OC_ERR_WIRE_VERSION) /* magic good: the peer's version */
            c->peer_version = c->in[c->in_off + 4] |
                              (unsigned)c->in[c->in_off + 5] << 8;
        if (st < 0)
            return read_fail(c, st, "");
        if (st == OC_OK && need > c->max_frame)
            return read_fail(c, OC_ERR_WIRE_LENGTH, "");
        if (st == OC_OK && have >= need) {
            st = oc__ctl_decode(c->in + c->in_off, need, msg);
            if (st != OC_OK)
                return read_fail(c, st, "");
            c->in_used = need;
            return OC_OK;
        }
        if ((st = in_room(c, need)) != OC_OK)
            return st; /* not sticky: the caller may retry */
        n = c->reader != NULL
                ? c->reader(c->reader_arg, c->in + c->in_len,
                            c->in_cap - c->in_len)
                : c->accept_fds
                      ? read_fds(c, c->in + c->in_len, c->in_cap - c->in_len)
                      : read(c->fd, c->in + c->in_len, c->in_cap - c->in_len);
        if (n > 0) {
            c->in_len += (size_t)n;
            continue;
        }
        if (n == 0)
            return read_fail(c, OC_ERR_PEER_FAILED,
                             have ? "closed inside a frame" : "closed");
        if (errno == EINTR)
            continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK)
            return OC_INPROGRESS;
        return read_fail(c, OC_ERR_PEER_FAILED, strerror(errno));
    }
}

oc_status_t oc__ctl_conn_send(oc_ctl_conn_t *c, const oc_ctl_msg_t *msg)
{
    size_t len, queued, cap;
    oc_status_t st;

    if (c == NULL || msg == NULL)
        return OC_ERR_INVALID_PARAM;
    if (c->wstatus != OC_OK)
        return c->wstatus;
    if ((st = oc__ctl_encode(msg, NULL, 0, &len)) != OC_OK)
        return st;
    queued = c->out_len - c->out_head;
    if (queued + len > OC_CTL_OUT_MAX)
        return OC_ERR_NO_RESOURCE;
    if (c->out_cap - c->out_len < len) {
        if (c->out_head > 0) {
            memmove(c->out, c->out + c->out_head, queued);
            c->sfd_at -= c->nsfds > 0 ? c->out_head : 0;
            c->out_head = 0;
            c->out_len = queued;
        }
        if (c->out_cap - c->out_len < len) {
            uint8_t *p;
            cap = c->out_cap ? c->out_cap : 1024;
            while (cap < queued + len)
                cap *= 2;
            if ((p = realloc(c->out, cap)) == NULL)
                return OC_ERR_NO_MEMORY;
            c->out = p;
            c->out_cap = cap;
        }
    }
    st = oc__ctl_encode(msg, c->out + c->out_len, c->out_cap - c->out_len, &len);
    if (st != OC_OK)
        return st;
    c->out_len += len;
    oc_trace(OC_COMP_CTL, "ctl: %s: queued %s (%zu bytes)", c->name,
             oc__ctl_type_name((int)msg->type), len);
    return OC_OK;
}

oc_status_t oc__ctl_conn_send_fds(oc_ctl_conn_t *c, const oc_ctl_msg_t *msg,
                                  const int *fds, int nfds)
{
    size_t at;
    oc_status_t st;
    int i;

    if (c == NULL || fds == NULL || nfds <= 0 || nfds > OC_CTL_MAX_FDS ||
        !c->is_socket || c->nsfds > 0)
        return OC_ERR_INVALID_PARAM;
    at = c->out_len;
    if ((st = oc__ctl_conn_send(c, msg)) != OC_OK)
        return st;
    for (i = 0; i < nfds; i++)
        if ((c->sfds[i] = fcntl(fds[i], F_DUPFD_CLOEXEC, 0)) < 0)
            break;
    if (i < nfds) {
        while (i-- > 0)
            close(c->sfds[i]);
        c->out_len = at; /* take the frame back */
        return OC_ERR_NO_RESOURCE;
    }
    c->nsfds = nfds;
    c->sfd_at = at;
    return OC_OK;
}

/* Send the frame's first bytes with the descriptors attached. */
static ssize_t send_fds(oc_ctl_conn_t *c, size_t left)
{
    union {
        struct cmsghdr h;
        char b[CMSG_SPACE(sizeof(int) * OC_CTL_MAX_FDS)];
    } u;
    struct iovec iov = {c->out + c->out_head, left};
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1,
                        .msg_control = u.b,
                        .msg_controllen = CMSG_SPACE(sizeof(int) *
                                                     (size_t)c->nsfds)};
    struct cmsghdr *h = CMSG_FIRSTHDR(&mh);
    ssize_t n;

    memset(u.b, 0, sizeof(u.b));
    h->cmsg_level = SOL_SOCKET;
    h->cmsg_type = SCM_RIGHTS;
    h->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)c->nsfds);
    memcpy(CMSG_DATA(h), c->sfds, sizeof(int) * (size_t)c->nsfds);
    n = sendmsg(c->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) { /* the kernel holds its own references now */
        for (int i = 0; i < c->nsfds; i++)
            close(c->sfds[i]);
        c->nsfds = 0;
    }
    return n;
}

oc_status_t oc__ctl_conn_flush(oc_ctl_conn_t *c)
{
    if (c == NULL)
        return OC_ERR_INVALID_PARAM;
    if (c->wstatus != OC_OK)
        return c->wstatus;
    while (c->out_head < c->out_len) {
        size_t left = c->out_len - c->out_head;
        ssize_t n;
        if (c->nsfds > 0 && c->out_head < c->sfd_at)
            left = c->sfd_at - c->out_head; /* up to the frame with fds */
        if (c->nsfds > 0 && c->out_head == c->sfd_at)
            n = send_fds(c, left);
        else
            n = c->is_socket ? send(c->fd, c->out + c->out_head, left,
                                    MSG_NOSIGNAL | MSG_DONTWAIT)
                             : write(c->fd, c->out + c->out_head, left);
        if (n >= 0) {
            c->out_head += (size_t)n;
            continue;
        }
        if (errno == EINTR)
            continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK)
            return OC_INPROGRESS;
        oc_debug(OC_COMP_CTL, "ctl: %s: write: %s", c->name, strerror(errno));
        c->wstatus = OC_ERR_PEER_FAILED;
        return c->wstatus;
    }
    c->out_head = c->out_len = 0;
    return OC_OK;
}

bool oc__ctl_conn_want_write(const oc_ctl_conn_t *c)
{
    return c->wstatus == OC_OK && c->out_head < c->out_len;
}

short oc__ctl_conn_events(const oc_ctl_conn_t *c)
{
    return (short)(POLLIN | (oc__ctl_conn_want_write(c) ? POLLOUT : 0));
}

oc_status_t oc__ctl_conn_request(oc_ctl_conn_t *c, const oc_ctl_msg_t *req,
                                oc_ctl_msg_t *reply, int timeout_ms)
{
    int64_t deadline = timeout_ms >= 0 ? oc__now_ms() + timeout_ms : -1;
    oc_status_t st;

    if (c == NULL || reply == NULL)
        return OC_ERR_INVALID_PARAM;
    if (req != NULL && (st = oc__ctl_conn_send(c, req)) != OC_OK)
        return st;
    for (;;) {
        struct pollfd pfd;
        int wait = -1;

        if ((st = oc__ctl_conn_flush(c)) < 0)
            return st;
        if ((st = oc__ctl_conn_read(c, reply)) != OC_INPROGRESS)
            return st;
        if (deadline >= 0) {
            int64_t left = deadline - oc__now_ms();
            if (left <= 0)
                return OC_ERR_CTL_TIMEOUT;
            wait = left > 1000000 ? 1000000 : (int)left;
        }
        pfd.fd = c->fd;
        pfd.events = oc__ctl_conn_events(c);
        pfd.revents = 0;
        if (poll(&pfd, 1, wait) < 0 && errno != EINTR) {
            oc_debug(OC_COMP_CTL, "ctl: %s: poll: %s", c->name,
                     strerror(errno));
            return OC_ERR_PEER_FAILED;
        }
    }
}
