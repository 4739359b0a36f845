/*
 * esp_stage.c — offcore-dp's ESP stage: IPv4 from the host is encrypted
 * toward the peer DPU whose outbound SA's `match` prefix holds the inner
 * destination (longest prefix wins); ESP from the wire addressed to one of
 * our SAs is authenticated, replay-checked and decrypted.  Traffic no SA
 * protects is dropped (`esp_clear deny`, the default) or passes
 * (`esp_clear allow`); ARP always passes (the hosts' neighbours).
 *
 * Frames keep their Ethernet header (and VLAN tags): the outer IPv4 header
 * goes between it and the inner packet, in the buffer's headroom.  TCP SYNs
 * have their MSS clamped to what fits the wire MTU after ESP; any other
 * packet that would not fit is dropped and counted (too_big).
 *
 * SA table: OC_DP_MAX_SA slots, written by the control thread under
 * dp->lock; a slot goes live with a release store of its state after it is
 * filled, and a deleted slot is reused only after every worker has
 * finished the burst it was in (the rule slots' grace period).  Each
 * worker keys its own EVP context of a slot the first time it meets that
 * slot's generation: no allocation on the packet path after that.
 * Counters: per worker, relaxed stores; read by the metrics thread.
 * Key material lives in the slots only; nothing here prints it.
 */
#include "dp_int.h"
#include "metrics/metrics.h"
#include "util/bytes.h"
#include "util/log.h"
#include "util/counter.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct {
    int      state;      /* 0 free, 1 live (atomic) */
    bool     quarantined;
    uint64_t gen;
    uint64_t del_seq[OC_DP_MAX_THREADS];
    oc_esp_sa_spec_t spec;
    oc_dp_ctr_t base;    /* workers' counters when installed */
    oc_esp_sa_t sa;
} sa_slot_t;

struct oc_dp_esp {
    bool     clear;
    uint32_t mtu;
    uint16_t mss;
    uint32_t hw;         /* slots ever used: the scan bound (atomic) */
    uint64_t gen, ops;
    sa_slot_t slot[OC_DP_MAX_SA];
};

struct oc_dp_esp_w {
    oc_esp_ctx_t ctx[OC_DP_MAX_SA];
    oc_dp_ctr_t  sa[OC_DP_MAX_SA];
    uint64_t     res[2][OC_ESP_E_MAX]; /* [0] out, [1] in */
    uint64_t     clear_dropped[2], clear_passed[2], mss_clamped;
};


/* -------------------------------------------------------- packet path */

/* The live slot @p i keyed for this worker, or NULL. */
static oc_esp_sa_t *use_slot(oc_dp_worker_t *w, uint32_t i)
{
    sa_slot_t *s = &w->dp->esp->slot[i];
    oc_esp_ctx_t *x = &w->esp->ctx[i];
    if (__atomic_load_n(&s->state, __ATOMIC_ACQUIRE) != 1)
        return NULL;
    if (x->gen != s->gen || x->ctx == NULL) {
        if (oc__esp_ctx_key(x, &s->sa) != OC_OK)
            return NULL;
        x->gen = s->gen;
    }
    return &s->sa;
}

static int find_out(oc_dp_worker_t *w, uint32_t dst)
{
    struct oc_dp_esp *e = w->dp->esp;
    uint32_t hw = __atomic_load_n(&e->hw, __ATOMIC_ACQUIRE);
    int best = -1, best_len = -1;
    for (uint32_t i = 0; i < hw; i++) {
        const sa_slot_t *s = &e->slot[i];
        uint8_t l = s->spec.match_len;
        if (__atomic_load_n(&s->state, __ATOMIC_ACQUIRE) != 1 ||
            !s->spec.sa.outbound || (int)l <= best_len)
            continue;
        if (l == 0 || ((dst ^ s->spec.match_ip) >> (32 - l)) == 0) {
            best = (int)i;
            best_len = l;
        }
    }
    return best;
}

static int find_in(oc_dp_worker_t *w, uint32_t spi, uint32_t src, uint32_t dst,
                   bool *ours)
{
    struct oc_dp_esp *e = w->dp->esp;
    uint32_t hw = __atomic_load_n(&e->hw, __ATOMIC_ACQUIRE);
    *ours = false;
    for (uint32_t i = 0; i < hw; i++) {
        const sa_slot_t *s = &e->slot[i];
        if (__atomic_load_n(&s->state, __ATOMIC_ACQUIRE) != 1 ||
            s->spec.sa.outbound || s->spec.sa.local != dst)
            continue;
        *ours = true;
        if (s->spec.sa.spi == spi && s->spec.sa.peer == src)
            return (int)i;
    }
    return -1;
}

static void drop(oc_dp_worker_t *w, oc_pkt_t *p, int dir, oc_esp_result_t r)
{
    OC__CTR_ADD(w->esp->res[dir][r], 1);
    p->verdict = OC_DP_V_ESP;
}

/* traffic no SA protects: pass or drop by esp_clear */
static void clear(oc_dp_worker_t *w, oc_pkt_t *p, int dir)
{
    if (w->dp->esp->clear) {
        OC__CTR_ADD(w->esp->clear_passed[dir], 1);
    } else {
        OC__CTR_ADD(w->esp->clear_dropped[dir], 1);
        p->verdict = OC_DP_V_ESP;
    }
}

void oc__dp_esp_out(oc_dp_worker_t *w, oc_pkt_t **pkts, uint16_t n)
{
    struct oc_dp_esp *e = w->dp->esp;
    for (uint16_t i = 0; i < n; i++) {
        oc_pkt_t *p = pkts[i];
        const oc_pkt_meta_t *m = &w->meta[i];
        uint32_t l3 = m->l3_off, ilen, head, tail, olen;
        uint8_t *ip, *o;
        oc_esp_result_t r;
        oc_esp_sa_t *sa;
        int k;

        if (p->verdict != OC_DP_V_FORWARD || m->ethertype == 0x0806)
            continue;
        if (m->reason != OC_PKT_R_IPV4 && m->reason != OC_PKT_R_IPV4_FRAG) {
            clear(w, p, 0); /* IPv6 and what the policy lets through */
            continue;
        }
        k = find_out(w, m->key.dst_ip);
        if (k < 0 || (sa = use_slot(w, (uint32_t)k)) == NULL) {
            clear(w, p, 0);
            continue;
        }
        ip = p->data + l3;
        ilen = oc__load_be16(ip + 2); /* the parser checked it against the frame */
        if (oc__esp_mss_clamp(ip, ilen, e->mss))
            OC__CTR_ADD(w->esp->mss_clamped, 1);
        oc__esp_room(w->pool, p, &head, &tail);
        tail += p->len - l3 - ilen; /* Ethernet padding is ours too */
        if (head < OC_ESP_HEAD) {
            drop(w, p, 0, OC_ESP_E_NO_ROOM);
            continue;
        }
        /* check what encap would refuse before moving the L2 header */
        if (OC_ESP_OVERHEAD + ilen > e->mtu) {
            drop(w, p, 0, OC_ESP_E_TOO_BIG);
            continue;
        }
        memmove(p->data - OC_ESP_HEAD, p->data, l3);
        r = oc__esp_encap(sa, &w->esp->ctx[k], ip, ilen, OC_ESP_HEAD, tail,
                         e->mtu, &o, &olen);
        if (r != OC_ESP_OK) {
            drop(w, p, 0, r);
            continue;
        }
        OC__CTR_ADD(w->esp->res[0][OC_ESP_OK], 1);
        OC__CTR_ADD(w->esp->sa[k].packets, 1);
        OC__CTR_ADD(w->esp->sa[k].bytes, ilen);
        p->data -= OC_ESP_HEAD;
        p->len = l3 + olen;
        o[-2] = 0x08; /* the innermost ethertype: IPv4 */
        o[-1] = 0x00;
    }
}

void oc__dp_esp_in(oc_dp_worker_t *w, oc_pkt_t **pkts, uint16_t n)
{
    oc_dp_t *dp = w->dp;
    for (uint16_t i = 0; i < n; i++) {
        oc_pkt_t *p = pkts[i];
        oc_pkt_meta_t *m = &w->meta[i];
        uint32_t l3 = m->l3_off, spi, src, dst, ilen;
        uint8_t *ip, *inner;
        oc_esp_result_t r;
        oc_esp_sa_t *sa;
        bool ours;
        int k;

        if (p->verdict != OC_DP_V_FORWARD || m->ethertype == 0x0806)
            continue;
        if (m->reason != OC_PKT_R_IPV4 || m->key.proto != 50) {
            clear(w, p, 1);
            continue;
        }
        ip = p->data + l3;
        r = oc__esp_peek(ip, p->len - l3, &spi, &src, &dst);
        if (r != OC_ESP_OK) {
            drop(w, p, 1, r);
            continue;
        }
        k = find_in(w, spi, src, dst, &ours);
        if (k < 0) {
            if (ours)
                drop(w, p, 1, OC_ESP_E_UNKNOWN_SPI);
            else
                clear(w, p, 1); /* ESP between others: not ours to open */
            continue;
        }
        sa = use_slot(w, (uint32_t)k);
        if (sa == NULL) {
            drop(w, p, 1, OC_ESP_E_UNKNOWN_SPI);
            continue;
        }
        r = oc__esp_decap(sa, &w->esp->ctx[k], ip, p->len - l3, &inner, &ilen);
        if (r != OC_ESP_OK) {
            drop(w, p, 1, r);
            continue;
        }
        OC__CTR_ADD(w->esp->res[1][OC_ESP_OK], 1);
        OC__CTR_ADD(w->esp->sa[k].packets, 1);
        OC__CTR_ADD(w->esp->sa[k].bytes, ilen);
        memmove(inner - l3, p->data, l3);
        p->data = inner - l3;
        p->len = l3 + ilen;
        inner[-2] = (inner[0] >> 4) == 6 ? 0x86 : 0x08;
        inner[-1] = (inner[0] >> 4) == 6 ? 0xdd : 0x00;
        if (oc__esp_mss_clamp(inner, ilen, dp->esp->mss))
            OC__CTR_ADD(w->esp->mss_clamped, 1);
        /* the stages after this one see the inner packet */
        {
            oc_pkt_reason_t pr = oc__pkt_parse(p->data, p->len, dp->max_frame, m);
            p->hash = m->hash;
            OC__CTR_ADD(w->c.reason[pr], 1);
            if (dp->policy[pr] == OC_PKT_DROP)
                p->verdict = OC_DP_V_POLICY;
        }
    }
}

bool oc__dp_esp_clamp(oc_dp_worker_t *w, uint8_t *ip, uint32_t len,
                      uint32_t extra)
{
    struct oc_dp_esp *e = w->dp->esp;
    if (e == NULL || e->mss <= extra ||
        !oc__esp_mss_clamp(ip, len, (uint16_t)(e->mss - extra)))
        return false;
    OC__CTR_ADD(w->esp->mss_clamped, 1);
    return true;
}

/* ------------------------------------------------------------ control */

/* Has every worker finished the burst it was in when @p s was deleted? */
static bool grace_over(oc_dp_t *dp, const sa_slot_t *s)
{
    for (uint32_t q = 0; q < dp->nstarted; q++)
        if (__atomic_load_n(&dp->w[q].seq, __ATOMIC_SEQ_CST) == s->del_seq[q] &&
            !__atomic_load_n(&dp->w[q].asleep, __ATOMIC_SEQ_CST))
            return false;
    return true;
}

static oc_dp_ctr_t slot_count(const oc_dp_t *dp, uint32_t i)
{
    oc_dp_ctr_t c = {0, 0};
    for (uint32_t q = 0; q < dp->nthreads; q++) {
        c.packets += OC__CTR_GET(dp->w[q].esp->sa[i].packets);
        c.bytes += OC__CTR_GET(dp->w[q].esp->sa[i].bytes);
    }
    return c;
}

oc_status_t oc__dp_esp_sa_add(oc_dp_t *dp, const oc_esp_sa_spec_t *spec,
                              char *why, size_t whylen)
{
    struct oc_dp_esp *e = dp->esp;
    int k = -1;

    if (e == NULL) {
        snprintf(why, whylen, "ESP is off (esp on, or an sa line, in the "
                 "config)");
        return OC_ERR_INVALID_PARAM;
    }
    pthread_mutex_lock(&dp->lock);
    for (uint32_t i = 0; i < OC_DP_MAX_SA; i++) {
        sa_slot_t *s = &e->slot[i];
        if (s->state == 1 && s->spec.sa.spi == spec->sa.spi &&
            s->spec.sa.outbound == spec->sa.outbound) {
            pthread_mutex_unlock(&dp->lock);
            snprintf(why, whylen, "an %s SA with spi 0x%08x exists (del it "
                     "first; rekey with a new spi)",
                     spec->sa.outbound ? "out" : "in", spec->sa.spi);
            return OC_ERR_INVALID_PARAM;
        }
        if (k < 0 && s->state == 0 && (!s->quarantined || grace_over(dp, s)))
            k = (int)i;
    }
    if (k < 0) {
        pthread_mutex_unlock(&dp->lock);
        snprintf(why, whylen, "all %u SA slots in use (or deleted less than a "
                 "burst ago)", OC_DP_MAX_SA);
        return OC_ERR_NO_MEMORY;
    }
    sa_slot_t *s = &e->slot[k];
    s->spec = *spec;
    oc__esp_sa_init(&s->sa, &spec->sa);
    s->gen = ++e->gen;
    s->quarantined = false;
    s->base = slot_count(dp, (uint32_t)k);
    __atomic_store_n(&s->state, 1, __ATOMIC_RELEASE);
    if ((uint32_t)k + 1 > e->hw)
        __atomic_store_n(&e->hw, (uint32_t)k + 1, __ATOMIC_RELEASE);
    e->ops++;
    pthread_mutex_unlock(&dp->lock);
    return OC_OK;
}

oc_status_t oc__dp_esp_sa_del(oc_dp_t *dp, bool outbound, uint32_t spi,
                              char *why, size_t whylen)
{
    struct oc_dp_esp *e = dp->esp;
    if (e != NULL) {
        pthread_mutex_lock(&dp->lock);
        for (uint32_t i = 0; i < OC_DP_MAX_SA; i++) {
            sa_slot_t *s = &e->slot[i];
            if (s->state != 1 || s->spec.sa.spi != spi ||
                s->spec.sa.outbound != outbound)
                continue;
            __atomic_store_n(&s->state, 0, __ATOMIC_SEQ_CST);
            for (uint32_t q = 0; q < dp->nstarted; q++)
                s->del_seq[q] = __atomic_load_n(&dp->w[q].seq, __ATOMIC_SEQ_CST);
            s->quarantined = true;
            /* the key stays until reuse: a worker in its burst may still
             * be using it; the slot's next install overwrites it */
            e->ops++;
            pthread_mutex_unlock(&dp->lock);
            return OC_OK;
        }
        pthread_mutex_unlock(&dp->lock);
    }
    snprintf(why, whylen, "no %s SA with spi 0x%08x", outbound ? "out" : "in",
             spi);
    return OC_ERR_INVALID_PARAM;
}

void oc__dp_esp_sa_list(oc_dp_t *dp, FILE *out)
{
    struct oc_dp_esp *e = dp->esp;
    char buf[512];
    if (e == NULL)
        return;
    pthread_mutex_lock(&dp->lock);
    for (uint32_t i = 0; i < OC_DP_MAX_SA; i++) {
        const sa_slot_t *s = &e->slot[i];
        oc_dp_ctr_t c;
        if (s->state != 1)
            continue;
        c = slot_count(dp, i);
        oc__esp_sa_format(&s->spec, buf, sizeof(buf));
        fprintf(out, "%s packets=%llu bytes=%llu", buf,
                (unsigned long long)(c.packets - s->base.packets),
                (unsigned long long)(c.bytes - s->base.bytes));
        if (s->spec.sa.outbound)
            fprintf(out, " seq=%llu\n", (unsigned long long)__atomic_load_n(
                                            &s->sa.seq, __ATOMIC_RELAXED));
        else
            fprintf(out, " top=%llu\n", (unsigned long long)s->sa.top);
    }
    pthread_mutex_unlock(&dp->lock);
}

#define ESUM(expr)                                                             \
    ({                                                                         \
        uint64_t s_ = 0;                                                       \
        for (uint32_t q_ = 0; q_ < dp->nthreads; q_++) {                       \
            const struct oc_dp_esp_w *x = dp->w[q_].esp;                       \
            s_ += OC__CTR_GET(expr);                                             \
        }                                                                      \
        s_;                                                                    \
    })

void oc__dp_esp_metrics(oc_dp_t *dp, void *prom)
{
    oc_prom_t *p = prom;
    struct oc_dp_esp *e = dp->esp;
    static const char *const dir[2] = {"out", "in"};
    char spi[16];

    if (e == NULL)
        return;
    oc__prom_family(p, "offcore_dp_esp_packets_total",
                   "ESP: packets encapsulated (out) and decapsulated (in) by "
                   "result: ok, or the reason it was dropped", OC_PROM_COUNTER);
    for (int d = 0; d < 2; d++)
        for (int r = 0; r < OC_ESP_E_MAX; r++) {
            uint64_t v = ESUM(x->res[d][r]);
            /* the reasons of one direction only: zero rows of the other
             * would only confuse */
            if (v == 0 && r != OC_ESP_OK && r != OC_ESP_E_ICV &&
                r != OC_ESP_E_REPLAY && r != OC_ESP_E_UNKNOWN_SPI &&
                r != OC_ESP_E_TOO_BIG && r != OC_ESP_E_SEQ_OVERFLOW)
                continue;
            oc__prom_sample(p, "offcore_dp_esp_packets_total",
                           OC_PROM_LABELS({"dir", dir[d]},
                                          {"result", oc__esp_result_name(r)}),
                           v);
        }
    oc__prom_family(p, "offcore_dp_esp_clear_packets_total",
                   "packets no SA protects, passed or dropped by esp_clear",
                   OC_PROM_COUNTER);
    for (int d = 0; d < 2; d++) {
        oc__prom_sample(p, "offcore_dp_esp_clear_packets_total",
                       OC_PROM_LABELS({"dir", dir[d]}, {"action", "dropped"}),
                       ESUM(x->clear_dropped[d]));
        oc__prom_sample(p, "offcore_dp_esp_clear_packets_total",
                       OC_PROM_LABELS({"dir", dir[d]}, {"action", "passed"}),
                       ESUM(x->clear_passed[d]));
    }
    oc__prom_family(p, "offcore_dp_esp_mss_clamped_total",
                   "TCP SYNs whose MSS was lowered to fit ESP in the MTU",
                   OC_PROM_COUNTER);
    oc__prom_sample(p, "offcore_dp_esp_mss_clamped_total", NULL, 0,
                   ESUM(x->mss_clamped));
    oc__prom_family(p, "offcore_dp_esp_sa_packets_total",
                   "inner packets per SA", OC_PROM_COUNTER);
    pthread_mutex_lock(&dp->lock);
    for (uint32_t i = 0; i < OC_DP_MAX_SA; i++) {
        const sa_slot_t *s = &e->slot[i];
        if (s->state != 1)
            continue;
        snprintf(spi, sizeof(spi), "0x%08x", s->spec.sa.spi);
        oc__prom_sample(p, "offcore_dp_esp_sa_packets_total",
                       OC_PROM_LABELS({"dir", dir[!s->spec.sa.outbound]},
                                      {"spi", spi}),
                       slot_count(dp, i).packets - s->base.packets);
    }
    oc__prom_family(p, "offcore_dp_esp_sa_seq",
                   "outbound SAs: the last sequence number sent (rekey "
                   "before 4294967295)", OC_PROM_GAUGE);
    for (uint32_t i = 0; i < OC_DP_MAX_SA; i++) {
        const sa_slot_t *s = &e->slot[i];
        if (s->state != 1 || !s->spec.sa.outbound)
            continue;
        snprintf(spi, sizeof(spi), "0x%08x", s->spec.sa.spi);
        oc__prom_sample(p, "offcore_dp_esp_sa_seq",
                       OC_PROM_LABELS({"spi", spi}),
                       __atomic_load_n(&s->sa.seq, __ATOMIC_RELAXED));
    }
    pthread_mutex_unlock(&dp->lock);
}

/* ------------------------------------------------------ start and stop */

oc_status_t oc__dp_esp_init(oc_dp_t *dp, const oc_dp_conf_t *c)
{
    char why[256];
    if (!c->esp)
        return OC_OK;
    dp->esp = calloc(1, sizeof(*dp->esp));
    if (dp->esp == NULL)
        return OC_ERR_NO_MEMORY;
    dp->esp->clear = c->esp_clear;
    dp->esp->mtu = c->esp_mtu;
    /* outer IPv4 + ESP (57 at most) + inner IPv4 and TCP headers (40) */
    dp->esp->mss = (uint16_t)(c->esp_mtu - OC_ESP_OVERHEAD - 40);
    for (uint32_t q = 0; q < dp->nthreads; q++) {
        dp->w[q].esp = calloc(1, sizeof(*dp->w[q].esp));
        if (dp->w[q].esp == NULL)
            return OC_ERR_NO_MEMORY;
    }
    for (uint32_t i = 0; i < c->nsa; i++)
        if (oc__dp_esp_sa_add(dp, &c->sa[i], why, sizeof(why)) != OC_OK) {
            oc_error(OC_COMP_DP, "sa: %s", why);
            return OC_ERR_CONFIG;
        }
    return OC_OK;
}

void oc__dp_esp_free(oc_dp_t *dp)
{
    if (dp->w != NULL)
        for (uint32_t q = 0; q < dp->nthreads; q++) {
            if (dp->w[q].esp == NULL)
                continue;
            for (uint32_t i = 0; i < OC_DP_MAX_SA; i++)
                oc__esp_ctx_free(&dp->w[q].esp->ctx[i]);
            free(dp->w[q].esp);
            dp->w[q].esp = NULL;
        }
    if (dp->esp != NULL) {
        memset(dp->esp->slot, 0, sizeof(dp->esp->slot)); /* the keys */
        free(dp->esp);
        dp->esp = NULL;
    }
}
