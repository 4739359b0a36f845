/* guard.c — accept back-off, connection cap and deadline shared by
 * offcored's servers and offcore-nvmf's listener (guard.h).  One thread
 * per guard; counters atomic. */
#include "util/guard.h"
#include "util/clock.h"

#include <errno.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

enum { C_ACCEPTED, C_EVICTED, C_REFUSED, C_EXPIRED, C_BACKOFFS };

static void bump(oc_guard_t *g, int k)
{
    atomic_fetch_add_explicit(&g->c[k], 1, memory_order_relaxed);
}

void oc__guard_init(oc_guard_t *g, const char *name, const oc_guard_params_t *p)
{
    memset(g, 0, sizeof(*g));
    g->p = *p;
    if (g->p.max_conns == 0)
        g->p.max_conns = 1;
    if (g->p.deadline_ms == 0)
        g->p.deadline_ms = 1;
    if (g->p.backoff_ms == 0)
        g->p.backoff_ms = 1;
    g->name = name;
    g->comp = OC_COMP_UTIL;
    g->lim_accept.what = "accept failures";
    g->lim_cap.what = "connections over the cap";
    g->lim_expire.what = "handshake deadlines";
    g->lim_fd.what = "descriptor-limit caps";
}

bool oc__guard_listen_ok(oc_guard_t *g, uint64_t now, int *wait_ms)
{
    uint64_t left;

    if (now >= g->paused_until_us)
        return true;
    left = (g->paused_until_us - now + 999) / 1000;
    if (wait_ms != NULL && (*wait_ms < 0 || (uint64_t)*wait_ms > left))
        *wait_ms = (int)left;
    return false;
}

void oc__guard_log_as(oc_guard_t *g, oc_log_comp_t comp)
{
    g->comp = comp;
}

oc_status_t oc__guard_accept(oc_guard_t *g, int lfd, int *fd_out,
                            struct sockaddr_storage *ss, socklen_t *sl)
{
    struct sockaddr_storage tmp;
    socklen_t tl = sizeof(tmp);
    int fd;

    if (ss == NULL) {
        ss = &tmp;
        sl = &tl;
    }
    *sl = sizeof(*ss);
    fd = accept4(lfd, (struct sockaddr *)ss, sl, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd >= 0)
        *fd_out = fd;
    return oc__guard_accept_result(g, fd >= 0 ? fd : -errno);
}

oc_status_t oc__guard_accept_result(oc_guard_t *g, int res)
{
    int e = -res;

    if (res >= 0) {
        bump(g, C_ACCEPTED);
        return OC_OK;
    }
    g->accept_errno = e;
    switch (e) {
    case EAGAIN:
#if EAGAIN != EWOULDBLOCK
    case EWOULDBLOCK:
#endif
    case EINTR:
    case ECONNABORTED:
    case EPROTO:
    case EPERM: /* a firewall rule refused it */
        return OC_INPROGRESS;
    case EMFILE:
    case ENFILE:
    case ENOBUFS:
    case ENOMEM:
        oc__guard_pause(g, oc__now_us());
        oc_warn_limited(&g->lim_accept, g->comp,
                        "%s: accept: %s: not accepting for %u ms (%u "
                        "connections open; raise the descriptor limit, "
                        "LimitNOFILE=, or lower the connection cap)",
                        g->name, strerror(e), g->p.backoff_ms, g->nconns);
        return OC_ERR_NO_RESOURCE;
    default:
        oc__guard_pause(g, oc__now_us());
        oc_warn_limited(&g->lim_accept, g->comp, "%s: accept: %s",
                        g->name, strerror(e));
        return OC_ERR_TRANSPORT;
    }
}

static void unlink_pending(oc_guard_t *g, oc_guard_slot_t *s)
{
    if (!s->pending)
        return;
    if (s->prev != NULL)
        s->prev->next = s->next;
    else
        g->head = s->next;
    if (s->next != NULL)
        s->next->prev = s->prev;
    else
        g->tail = s->prev;
    s->prev = s->next = NULL;
    s->pending = false;
}

static void link_pending(oc_guard_t *g, oc_guard_slot_t *s, uint64_t now)
{
    unlink_pending(g, s);
    s->deadline_us = now + 1000u * (uint64_t)g->p.deadline_ms;
    s->pending = true;
    s->next = NULL;
    s->prev = g->tail;
    if (g->tail != NULL)
        g->tail->next = s;
    else
        g->head = s;
    g->tail = s;
}

bool oc__guard_admit(oc_guard_t *g, oc_guard_slot_t **evict_out)
{
    uint32_t cap = g->p.max_conns;

    if (g->fd_cap != 0 && g->fd_cap < cap)
        cap = g->fd_cap;
    *evict_out = NULL;
    if (g->nconns < cap)
        return true;
    if (g->head != NULL) {
        *evict_out = g->head;
        bump(g, C_EVICTED);
        oc_warn_limited(&g->lim_cap, g->comp,
                        "%s: %u connections (the cap): closing the oldest "
                        "one still in its handshake to admit a new one",
                        g->name, g->nconns);
        return true;
    }
    bump(g, C_REFUSED);
    oc_warn_limited(&g->lim_cap, g->comp,
                    "%s: %u connections (the cap), all authenticated: "
                    "refusing a new one", g->name, g->nconns);
    return false;
}

void oc__guard_add(oc_guard_t *g, oc_guard_slot_t *s, uint64_t now)
{
    memset(s, 0, sizeof(*s));
    s->counted = true;
    g->nconns++;
    link_pending(g, s, now);
}

void oc__guard_settle(oc_guard_t *g, oc_guard_slot_t *s)
{
    unlink_pending(g, s);
}

void oc__guard_rearm(oc_guard_t *g, oc_guard_slot_t *s, uint64_t now)
{
    if (s->counted)
        link_pending(g, s, now);
}

void oc__guard_remove(oc_guard_t *g, oc_guard_slot_t *s)
{
    unlink_pending(g, s);
    if (s->counted) {
        s->counted = false;
        g->nconns--;
    }
}

oc_guard_slot_t *oc__guard_expired(oc_guard_t *g, uint64_t now)
{
    oc_guard_slot_t *s = g->head;

    /* deadlines are arrival + a constant: the list is in deadline order */
    if (s == NULL || s->deadline_us > now)
        return NULL;
    unlink_pending(g, s);
    bump(g, C_EXPIRED);
    oc_warn_limited(&g->lim_expire, g->comp,
                    "%s: a connection did not finish its handshake or "
                    "request within %u ms: closed", g->name,
                    g->p.deadline_ms);
    return s;
}

oc_guard_slot_t *oc__guard_shed(oc_guard_t *g)
{
    oc_guard_slot_t *s = g->head;

    if (s == NULL)
        return NULL;
    unlink_pending(g, s);
    bump(g, C_EVICTED);
    return s;
}

uint32_t oc__guard_fd_short(oc_guard_t *g, uint32_t room)
{
    struct rlimit rl;
    uint64_t nofile = getrlimit(RLIMIT_NOFILE, &rl) == 0 ? rl.rlim_cur : 0;
    uint32_t n = g->nconns, reserve = OC_GUARD_FD_RESERVE, cap, due;

    /* The room the caller counted, not the connections open: a descriptor
     * numbered above a limit lowered under us frees nothing under it when
     * closed, so a cap taken from all the connections left the reserve
     * short by as many as sat above it (hostile-flood: a job's endpoint
     * then found no descriptor).  Only ever lowered for one limit: out
     * again under it means the server's own descriptors grew into the
     * reserve, and shedding more gives it back. */
    cap = room > reserve ? room - reserve : 1;
    if (g->fd_cap == 0 || nofile != g->fd_cap_nofile || cap < g->fd_cap)
        g->fd_cap = cap;
    g->fd_cap_nofile = nofile;
    g->fd_check_us = oc__now_us() + 1000000u;
    due = n > g->fd_cap ? n - g->fd_cap : 0;
    oc_warn_limited(&g->lim_fd, g->comp,
                    "%s: out of descriptors (limit %llu) with %u connections "
                    "open, %u of them under the limit: holding at most %u "
                    "until the limit is raised, so that %u stay free for the "
                    "server's own use (raise LimitNOFILE= / ulimit -n, or "
                    "lower the connection cap)",
                    g->name, (unsigned long long)g->fd_cap_nofile, n, room,
                    g->fd_cap, reserve);
    return due;
}

bool oc__guard_fd_relax(oc_guard_t *g, uint64_t now)
{
    struct rlimit rl;

    if (g->fd_cap == 0 || now < g->fd_check_us)
        return false;
    g->fd_check_us = now + 1000000u;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur <= g->fd_cap_nofile)
        return false;
    oc_info(g->comp, "%s: the descriptor limit was raised to %llu: "
            "back to the cap of %u connections", g->name,
            (unsigned long long)rl.rlim_cur, g->p.max_conns);
    g->fd_cap = 0;
    return true;
}

void oc__guard_pause(oc_guard_t *g, uint64_t now)
{
    bump(g, C_BACKOFFS); /* every pause is a back-off, whoever found the cause */
    g->paused_until_us = now + 1000u * (uint64_t)g->p.backoff_ms;
}

void oc__guard_resume(oc_guard_t *g)
{
    g->paused_until_us = 0;
}

int oc__guard_wait_ms(const oc_guard_t *g, uint64_t now, int cap_ms)
{
    uint64_t w = (uint64_t)cap_ms;

    if (g->head != NULL)
        w = g->head->deadline_us <= now
                ? 0 : (g->head->deadline_us - now + 999) / 1000 < w
                ? (g->head->deadline_us - now + 999) / 1000 : w;
    if (g->paused_until_us > now && (g->paused_until_us - now + 999) / 1000 < w)
        w = (g->paused_until_us - now + 999) / 1000;
    return (int)w;
}

void oc__guard_counters(const oc_guard_t *g, oc_guard_counters_t *out)
{
    uint64_t *o = (uint64_t *)out;
    for (int k = 0; k < 5; k++)
        o[k] = atomic_load_explicit(&((oc_guard_t *)g)->c[k],
                                    memory_order_relaxed);
}

uint32_t oc__guard_fit_nofile(uint32_t wanted, uint64_t *nofile_out)
{
    struct rlimit rl;
    uint64_t fit;

    if (getrlimit(RLIMIT_NOFILE, &rl) != 0) {
        *nofile_out = 0;
        return wanted;
    }
    if (rl.rlim_cur < rl.rlim_max) { /* what nginx and Go do at start */
        struct rlimit up = {rl.rlim_max, rl.rlim_max};
        if (setrlimit(RLIMIT_NOFILE, &up) == 0)
            rl = up;
    }
    *nofile_out = rl.rlim_cur == RLIM_INFINITY ? UINT64_MAX : rl.rlim_cur;
    fit = *nofile_out / 4 * 3;
    return fit < wanted ? (uint32_t)(fit > 0 ? fit : 1) : wanted;
}
