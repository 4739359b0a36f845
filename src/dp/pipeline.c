/*
 * pipeline.c — offcore-dp's runtime: ports, worker threads and the
 * pipeline's loop (the steps themselves: stage.c, the stages, tenant/).
 *
 * Worker q owns queue q of every port and one packet pool (the UMEM its
 * AF_XDP sockets share).  Its loop: for each attachment and direction,
 * receive a burst, run the stages (parse + policy, classifier), send what
 * passed to the other side, give back what was dropped; when nothing
 * arrives for a while, sleep in poll() on its sockets (and a stop eventfd).
 * No lock on the packet path: counters are per worker, written with
 * relaxed stores, read by the control thread with relaxed loads.
 *
 * Rule counters: a rule's classifier userdata carries its action and a
 * counter slot; each worker counts packets and bytes per slot.  A deleted
 * rule's slot is reused only after every worker has finished the burst it
 * was in at deletion time (or was asleep), so late increments never land
 * on a new rule; a reused slot's counters start from a baseline.
 */
#include "dp_int.h"
#include "tenant/tenant_int.h"
#include "util/log.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#define SPIN_IDLE 256  /* empty polls before sleeping in poll() */

/* ----------------------------------------------------------- the loop */

static void sleep_idle(oc_dp_worker_t *w)
{
    oc_dp_t *dp = w->dp;
    struct pollfd pf[2 * OC_DP_MAX_ATTACH + 2];
    nfds_t n = 0;
    int timeout = 1000; /* the stop eventfd wakes it sooner */

    for (uint32_t a = 0; a < dp->nattach; a++)
        for (int s = 0; s < 2; s++) {
            int fd = oc__port_fd(dp->att[a].port[s], w->q);
            if (fd >= 0)
                pf[n++] = (struct pollfd){fd, POLLIN, 0};
            else
                timeout = 1; /* nothing to wait on: a 1 ms nap */
        }
    pf[n++] = (struct pollfd){dp->stop_fd, POLLIN, 0};
    if (w->hand_fd > 0) /* frames handed over by another worker */
        pf[n++] = (struct pollfd){w->hand_fd, POLLIN, 0};
    __atomic_store_n(&w->asleep, 1, __ATOMIC_SEQ_CST);
    if (!dp->bare)
        oc__acl_reader_offline();
    (void)poll(pf, n, timeout);
    if (!dp->bare)
        oc__acl_reader_online();
    __atomic_store_n(&w->asleep, 0, __ATOMIC_SEQ_CST);
    OC__CTR_ADD(w->c.sleeps, 1);
}

static void *worker_main(void *arg)
{
    oc_dp_worker_t *w = arg;
    oc_dp_t *dp = w->dp;
    oc_pkt_t *pkts[OC_DP_BURST_MAX];
    unsigned idle = 0;

    if (!dp->bare)
        oc__acl_reader_register();
    while (!__atomic_load_n(&dp->stop, __ATOMIC_RELAXED)) {
        uint32_t got = 0;
        for (uint32_t a = 0; a < dp->nattach; a++)
            for (int dir = 0; dir < 2; dir++) {
                oc_port_t *in = dp->att[a].port[dir];
                oc_port_t *out = dp->att[a].port[!dir];
                bool tenant;
                uint16_t n;
                if (dir == 1 && dp->att[a].wire_of != 0)
                    continue; /* a shared wire port: its first attachment receives */
                n = oc__port_rx_burst(in, w->q, pkts, dp->burst);
                if (n == 0)
                    continue;
                got += n;
                tenant = __atomic_load_n(&dp->att_tenant[a], __ATOMIC_RELAXED) != -1;
                if (dir == 1 && (tenant || dp->att[a].uplink)) {
                    /* ESP, VNI demultiplexing, tenant stages, delivery */
                    oc__dp_uplink_rx(w, a, pkts, n);
                    continue;
                }
                if (tenant) {
                    n = oc__dp_tenant_burst(w, a, dir, pkts, n);
                    oc__dp_tenant_post(w, a, dir, pkts, n);
                } else if (!dp->bare) {
                    oc__dp_stage_parse(w, pkts, n);
                    if (dp->esp != NULL && dir == 1)
                        oc__dp_esp_in(w, pkts, n);
                    oc__dp_stage_classify(w, pkts, n);
                    if (dp->flow != NULL)
                        oc__dp_flow_burst(w, a, pkts, n);
                    if (dp->esp != NULL && dir == 0)
                        oc__dp_esp_out(w, pkts, n);
                }
                if (dp->bare)
                    oc__dp_send_bare(w, in, out, pkts, n);
                else
                    oc__dp_send(w, in, out, pkts, n);
            }
        if (dp->flow != NULL)
            oc__dp_flow_tick(w);
        if (!dp->bare)
            oc__acl_reader_quiescent();
        got += oc__dp_tenant_idle(w);
        __atomic_store_n(&w->seq, w->seq + 1, __ATOMIC_SEQ_CST);
        if (got > 0) {
            idle = 0;
            continue;
        }
        for (uint32_t a = 0; a < dp->nattach; a++) {
            oc__port_tx_reap(dp->att[a].port[0], w->q);
            oc__port_tx_reap(dp->att[a].port[1], w->q);
        }
        if (++idle >= SPIN_IDLE) {
            sleep_idle(w);
            idle = 0;
        }
    }
    if (!dp->bare)
        oc__acl_reader_unregister();
    return NULL;
}

/* ------------------------------------------------------ start and stop */

oc_status_t oc__dp_start(const oc_dp_conf_t *c, oc_dp_t **out)
{
    oc_dp_t *dp;
    oc_status_t st = OC_ERR_NO_MEMORY;
    uint32_t pool_bufs;

    dp = calloc(1, sizeof(*dp));
    if (dp == NULL)
        return OC_ERR_NO_MEMORY;
    pthread_mutex_init(&dp->lock, NULL);
    dp->nthreads = c->threads;
    dp->burst = c->burst > OC_DP_BURST_MAX ? OC_DP_BURST_MAX : c->burst;
    dp->max_frame = c->max_frame;
    dp->bare = c->bare;
    dp->default_action = c->default_action;
    memcpy(dp->policy, c->policy, sizeof(dp->policy));
    dp->nattach = c->nattach;
    dp->max_rules = c->max_rules;
    dp->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (dp->stop_fd < 0)
        goto err;
    if (oc__dp_slots_init(dp) != OC_OK)
        goto err;
    st = oc__acl_create(c->max_rules, &dp->acl);
    if (st == OC_OK)
        st = oc__acl6_create(c->max_rules, &dp->acl6);
    if (st != OC_OK)
        goto err;
    /* every rule ring of every port of a queue may hold buffers at once:
     * fill + tx of each port, plus a burst in hand */
    pool_bufs = 2 * c->nattach * 2 * c->ring_size + 2 * OC_DP_BURST_MAX;
    dp->w = calloc(c->threads, sizeof(*dp->w));
    if (dp->w == NULL)
        goto err;
    for (uint32_t q = 0; q < c->threads; q++) {
        oc_dp_worker_t *w = &dp->w[q];
        w->dp = dp;
        w->q = q;
        st = oc__pkt_pool_create(pool_bufs, 2048, &w->pool);
        if (st != OC_OK)
            goto err;
        w->rule = calloc(dp->nslots, sizeof(*w->rule));
        if (w->rule == NULL) {
            st = OC_ERR_NO_MEMORY;
            goto err;
        }
        dp->pools[q] = w->pool;
    }
    st = oc__dp_tenants_start(dp, c);
    if (st != OC_OK)
        goto err;
    for (uint32_t a = 0; a < c->nattach; a++) {
        const oc_dp_attach_conf_t *ac = &c->attach[a];
        oc_dp_attach_t *at = &dp->att[a];
        snprintf(at->name, sizeof(at->name), "%s", ac->name);
        for (uint32_t b = 0; b < a; b++)
            if (!strcmp(c->attach[b].wire, ac->wire)) {
                /* one uplink: open once (conf/conf.c checked the settings) */
                at->wire_of = b + 1;
                at->port[1] = dp->att[b].port[1];
                dp->att[b].uplink = true;
                break;
            }
        for (int side = 0; side < 2 - (at->wire_of != 0); side++) {
            oc_port_conf_t pc = {
                .ifname = side == 0 ? ac->host : ac->wire,
                .nqueues = c->threads,
                .pools = dp->pools,
                .xdp_mode = ac->xdp_mode,
                .zero_copy = ac->zero_copy,
                .ring_size = c->ring_size,
            };
            if (ac->backend == OC_DP_BACKEND_XDP)
                st = oc__port_open_xdp(&pc, &at->port[side]);
            else
                st = oc__port_open_dpdk(&pc,
                                       ac->backend == OC_DP_BACKEND_DPDK_AF_XDP
                                           ? OC_PORT_DPDK_AF_XDP
                                           : OC_PORT_DPDK_AF_PACKET,
                                       &at->port[side]);
            if (st != OC_OK) {
                oc_error(OC_COMP_DP, "attach %s: %s side %s: %s", ac->name,
                         side == 0 ? "host" : "wire", pc.ifname,
                         oc_status_string(st));
                goto err;
            }
        }
    }
    st = oc__dp_esp_init(dp, c);
    if (st != OC_OK)
        goto err;
    st = oc__dp_flow_init(dp, c);
    if (st != OC_OK)
        goto err;
    if (c->nrules > 0) {
        char why[256];
        st = oc__dp_rules_replace(dp, c->rules, c->nrules, why, sizeof(why));
        if (st != OC_OK) {
            oc_error(OC_COMP_DP, "loading the configured rules: %s", why);
            goto err;
        }
    }
    for (uint32_t q = 0; q < c->threads; q++) {
        if (pthread_create(&dp->w[q].thread, NULL, worker_main, &dp->w[q]) != 0) {
            st = OC_ERR_NO_MEMORY;
            oc_error(OC_COMP_DP, "cannot start worker %u", q);
            __atomic_store_n(&dp->stop, 1, __ATOMIC_SEQ_CST);
            for (uint32_t k = 0; k < q; k++)
                pthread_join(dp->w[k].thread, NULL);
            dp->nstarted = 0;
            goto err;
        }
        dp->nstarted = q + 1;
    }
    *out = dp;
    return OC_OK;
err:
    oc__dp_stop(dp);
    return st;
}

void oc__dp_stop(oc_dp_t *dp)
{
    uint64_t one = 1;

    if (dp == NULL)
        return;
    __atomic_store_n(&dp->stop, 1, __ATOMIC_SEQ_CST);
    if (dp->stop_fd >= 0 && write(dp->stop_fd, &one, sizeof(one)) < 0)
        oc_warn(OC_COMP_DP, "waking the workers: %s", strerror(errno));
    for (uint32_t q = 0; q < dp->nstarted; q++)
        pthread_join(dp->w[q].thread, NULL);
    for (uint32_t a = 0; a < OC_DP_MAX_ATTACH; a++)
        for (int s = 0; s < 2 - (dp->att[a].wire_of != 0); s++)
            oc__port_close(dp->att[a].port[s]);
    oc__dp_esp_free(dp);
    oc__dp_flow_free(dp);
    if (dp->w != NULL)
        for (uint32_t q = 0; q < dp->nthreads; q++) {
            oc__pkt_pool_destroy(dp->w[q].pool);
            free(dp->w[q].rule);
        }
    oc__dp_tenants_stop(dp); /* uses dp->w */
    free(dp->w);
    oc__acl6_destroy(dp->acl6);
    oc__acl_destroy(dp->acl);
    oc__dp_slots_free(dp);
    if (dp->stop_fd >= 0)
        close(dp->stop_fd);
    pthread_mutex_destroy(&dp->lock);
    free(dp);
}
