/*
 * probe.c — does an offcored answer at an address?  A launcher's question
 * before it hands a job the agent placement (contrib/slurm's plugin): a
 * bare connect() is not enough, since the kernel accepts on the listening
 * socket of a stopped or hung agent; an agent answers a rank's HELLO with
 * its CHALLENGE from its control loop.
 */
#include "ctl/ctl.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

oc_status_t oc__ctl_agent_probe(const char *addr, uint32_t job, int timeout_ms,
                               char *why, size_t why_cap)
{
    static const uint8_t no_addr = 0; /* never used: the probe never AUTHs */
    oc_ctl_conn_t *c = NULL;
    oc_ctl_msg_t m, r;
    oc_status_t st;
    int fd = -1;

    if (why != NULL && why_cap > 0)
        why[0] = '\0';
    if (addr == NULL || why == NULL || why_cap == 0)
        return OC_ERR_INVALID_PARAM;
    st = oc__ctl_connect(addr, timeout_ms, &fd);
    if (st != OC_OK) {
        snprintf(why, why_cap, "no agent answers at %s (%s)", addr,
                 st == OC_ERR_CTL_TIMEOUT ? "connect timed out"
                 : st == OC_ERR_CTL_ADDR  ? "not a usable address"
                                          : "nothing listens there");
        return st;
    }
    if ((st = oc__ctl_conn_create(fd, addr, &c)) != OC_OK) {
        close(fd);
        snprintf(why, why_cap, "%s: %s", addr, oc_status_string(st));
        return st;
    }
    memset(&m, 0, sizeof(m));
    m.type = OC_CTL_HELLO;
    m.u.hello.job = job;
    m.u.hello.rank = 0;
    m.u.hello.size = 1;
    m.u.hello.pid = (uint32_t)getpid();
    if ((st = oc__ctl_random(m.u.hello.nonce, sizeof(m.u.hello.nonce))) != OC_OK)
        goto out;
    m.u.hello.addr.data = &no_addr;
    m.u.hello.addr.len = 1;
    st = oc__ctl_conn_request(c, &m, &r, timeout_ms);
    if (st == OC_OK && r.type == OC_CTL_ERROR) {
        snprintf(why, why_cap, "the agent at %s refused: %.*s", addr,
                 (int)r.u.error.text.len, (const char *)r.u.error.text.data);
        st = r.u.error.status < 0 ? (oc_status_t)r.u.error.status
                                  : OC_ERR_CTL_AUTH;
    } else if (st == OC_OK && r.type != OC_CTL_CHALLENGE) {
        snprintf(why, why_cap, "%s answered %s, not CHALLENGE: not an "
                 "offcored of this version", addr, oc__ctl_type_name(r.type));
        st = OC_ERR_CTL_TYPE;
    } else if (st == OC_ERR_CTL_TIMEOUT) {
        snprintf(why, why_cap, "an agent at %s accepts but does not answer "
                 "within %d ms (stopped, hung or overloaded)", addr,
                 timeout_ms);
    } else if (st != OC_OK) {
        snprintf(why, why_cap, "the agent at %s closed the connection (%s)",
                 addr, oc_status_string(st));
    }
out:
    oc__ctl_conn_destroy(c); /* the agent drops an unauthenticated HELLO */
    return st;
}
