/*
 * ct_track.c — connection tracking's packet path (ct.h): oc__ct_track(), its
 * burst form oc__ct_track_burst() and the TCP state machine.
 *
 * A packet goes through two steps: prepare (parse the IPv4 and L4 headers
 * into the flow's canonical key and its hash; nothing in the table is
 * read) and apply (look the flow up, run its state machine, create it).
 * oc__ct_track() runs both on one packet.  The burst form prepares a whole
 * chunk first and prefetches what apply will touch — the index slot of
 * every key, then the entry its first matching slot names (or the free
 * entry a new flow will take) — so that the cache misses of a chunk
 * overlap instead of following one another (DPDK's rte_hash bulk lookup
 * does the same); then it applies the packets one by one, in order, so
 * its results are exactly those of oc__ct_track() on each packet in turn
 * (tests/pkt/test_ct.c checks it against oc__ct_track() as the oracle).
 *
 * Threading and trust: ct.h (one owner thread; hostile packets).
 */
#include "ct_int.h"

/* ---------------------------------------------------------------- TCP */

enum { TH_FIN = 1, TH_SYN = 2, TH_RST = 4, TH_ACK = 16 };

typedef struct {
    uint32_t seq, ack, end; /* end: seq + payload (+1 per SYN, FIN) */
    uint16_t win;
    uint8_t flags;
    int wscale; /* -1: no option */
} tcp_seg_t;

static int tcp_wscale_opt(const uint8_t *o, uint32_t n)
{
    for (uint32_t i = 0; i < n;) {
        if (o[i] == 0)
            break;
        if (o[i] == 1) {
            i++;
            continue;
        }
        if (i + 1 >= n || o[i + 1] < 2 || i + o[i + 1] > n)
            break;
        if (o[i] == 3 && o[i + 1] == 3)
            return o[i + 2] > 14 ? 14 : o[i + 2];
        i += o[i + 1];
    }
    return -1;
}

static void td_update(ct_entry_t *e, int dir, const tcp_seg_t *g)
{
    uint32_t win = g->win;
    if (!(g->flags & TH_SYN) && (e->flags & F_WSCALE))
        win <<= e->wscale[dir];
    if (win == 0)
        win = 1;
    if (seq_after(g->end, e->td[dir].end))
        e->td[dir].end = g->end;
    if (seq_after(g->end, e->td[dir].maxend))
        e->td[dir].maxend = g->end;
    if (win > e->td[dir].maxwin)
        e->td[dir].maxwin = win;
    if (g->flags & TH_ACK) {
        uint32_t ackend = g->ack + win;
        if (seq_after(ackend, e->td[!dir].maxend))
            e->td[!dir].maxend = ackend;
    }
}

/* The sequence checks of Rooij's "Real stateful TCP packet filtering in IP
 * Filter" as Linux applies them: the segment starts before the sender's
 * right edge and ends after the left edge the receiver still accepts. */
static bool in_window(const ct_entry_t *e, int dir, const tcp_seg_t *g)
{
    const ct_td_t *snd = &e->td[dir], *rcv = &e->td[!dir];
    return !seq_after(g->seq, snd->maxend) &&
           seq_after(g->end, snd->end - rcv->maxwin - 1);
}

static oc_ct_result_t tcp_track(oc_ct_t *ct, ct_entry_t *e, int dir,
                                const tcp_seg_t *g, oc_ct_info_t *info)
{
    uint8_t f = g->flags, st = e->state;

    /* both sides known: every segment is checked against the window */
    if (st >= OC_CT_TCP_SYN_RECV &&
        !(st == OC_CT_TCP_SYN_RECV && (f & TH_SYN)) && !in_window(e, dir, g)) {
        OC__CTR_INC(ct->st.out_of_window);
        info->why = OC_CT_WHY_WINDOW;
        return OC_CT_INVALID;
    }
    if (f & TH_RST) {
        st = OC_CT_TCP_CLOSE;
    } else if (f & TH_SYN) {
        if (st == OC_CT_TCP_SYN_SENT && dir == 1 && (f & TH_ACK)) {
            e->td[1].end = e->td[1].maxend = g->end;
            e->td[1].maxwin = g->win ? g->win : 1;
            if (g->wscale >= 0 && e->wscale[0] != 0xff) {
                e->wscale[1] = (uint8_t)g->wscale;
                e->flags |= F_WSCALE;
            } else {
                e->wscale[0] = e->wscale[1] = 0;
            }
            st = OC_CT_TCP_SYN_RECV;
        } else if (!((st == OC_CT_TCP_SYN_SENT && dir == 0 && !(f & TH_ACK)) ||
                     (st == OC_CT_TCP_SYN_RECV && dir == 1 && (f & TH_ACK)))) {
            /* not a retransmission of the handshake */
            info->why = OC_CT_WHY_FLAGS;
            OC__CTR_INC(ct->st.invalid);
            return OC_CT_INVALID;
        }
    } else if (!(f & TH_ACK)) {
        info->why = OC_CT_WHY_FLAGS; /* every segment after SYN carries ACK */
        OC__CTR_INC(ct->st.invalid);
        return OC_CT_INVALID;
    } else {
        if (st == OC_CT_TCP_SYN_SENT) {
            info->why = OC_CT_WHY_FLAGS; /* no SYN+ACK yet */
            OC__CTR_INC(ct->st.invalid);
            return OC_CT_INVALID;
        }
        if (st == OC_CT_TCP_SYN_RECV && dir == 0) {
            st = OC_CT_TCP_ESTABLISHED;
            e->flags |= F_ASSURED;
        }
        if (f & TH_FIN) {
            e->flags |= dir ? F_FIN1 : F_FIN0;
            if (st < OC_CT_TCP_FIN_WAIT)
                st = OC_CT_TCP_FIN_WAIT;
            if ((e->flags & (F_FIN0 | F_FIN1)) == (F_FIN0 | F_FIN1))
                st = OC_CT_TCP_LAST_ACK;
        } else if (st == OC_CT_TCP_LAST_ACK) {
            st = OC_CT_TCP_TIME_WAIT;
        }
    }
    if (dir == 1)
        e->flags |= F_REPLIED;
    td_update(e, dir, g);
    e->state = st;
    info->state = st;
    return OC_CT_EST;
}

/* ---------------------------------------------------------- the packet */

typedef struct {
    uint32_t sip, dip;
    const uint8_t *s6, *d6; /* IPv6: the addresses in the packet */
    uint16_t sp, dp;
    uint8_t proto;
} ip_tuple_t;

/* IPv4 header at @p ip; @p l4 / @p l4len its payload.  0 ok, -1 bad, 1 a
 * non-first fragment. */
static int ip_parse(const uint8_t *ip, uint32_t len, bool inner, ip_tuple_t *t,
                    const uint8_t **l4, uint32_t *l4len)
{
    uint32_t ihl, total;
    if (len < 20 || (ip[0] >> 4) != 4)
        return -1;
    ihl = (uint32_t)(ip[0] & 15) * 4;
    total = oc__load_be16(ip + 2);
    if (ihl < 20 || ihl > len)
        return -1;
    /* an ICMP error quotes a prefix of the packet: its total length may
     * exceed what is quoted */
    if (!inner && (total < ihl || total > len))
        return -1;
    if (inner || total > len)
        total = len;
    t->sip = oc__load_be32(ip + 12);
    t->dip = oc__load_be32(ip + 16);
    t->s6 = t->d6 = NULL;
    t->proto = ip[9];
    t->sp = t->dp = 0;
    *l4 = ip + ihl;
    *l4len = total - ihl;
    return (oc__load_be16(ip + 6) & 0x1fff) != 0 ? 1 : 0;
}

#define IP6_MAX_EXT 8 /* as the parser's (src/pkt/parse.c) */

/* IPv6 header at @p ip, its extension headers walked to the L4 header
 * (@p l4 / @p l4len); as ip_parse(): 0 ok, -1 bad, 1 a non-first
 * fragment.  The same walk as the frame parser's, here over a quoted
 * packet too (an ICMPv6 error's), which the frame parser never sees. */
static int ip6_parse(const uint8_t *ip, uint32_t len, bool inner,
                     ip_tuple_t *t, const uint8_t **l4, uint32_t *l4len)
{
    uint32_t total, off = 40;
    uint8_t nh;

    if (len < 40 || (ip[0] >> 4) != 6)
        return -1;
    total = 40u + oc__load_be16(ip + 4);
    if (!inner && total > len)
        return -1;
    if (inner || total > len)
        total = len; /* a quote is a prefix of its packet */
    nh = ip[6];
    for (int i = 0; nh == 0 || nh == 43 || nh == 60 || nh == 44 || nh == 51;
         i++) {
        uint32_t l;
        if (i == IP6_MAX_EXT || total - off < 8)
            return -1;
        if (nh == 44) {
            if ((oc__load_be16(ip + off + 2) & 0xfff8) != 0)
                return 1;
            l = 8;
        } else if (nh == 51) {
            l = ((uint32_t)ip[off + 1] + 2) * 4;
        } else {
            l = ((uint32_t)ip[off + 1] + 1) * 8;
        }
        if (l > total - off)
            return -1;
        nh = ip[off];
        off += l;
    }
    t->sip = t->dip = 0;
    t->s6 = ip + 8;
    t->d6 = ip + 24;
    t->proto = nh;
    t->sp = t->dp = 0;
    *l4 = ip + off;
    *l4len = total - off;
    return 0;
}

static int any_parse(const oc_ct_t *ct, const uint8_t *ip, uint32_t len,
                     bool inner, ip_tuple_t *t, const uint8_t **l4,
                     uint32_t *l4len)
{
    if (ct->a6 != NULL)
        return ip6_parse(ip, len, inner, t, l4, l4len);
    return ip_parse(ip, len, inner, t, l4, l4len);
}

static void key_of(ct_key_t *k, uint16_t zone, const ip_tuple_t *t)
{
    if (t->s6 != NULL)
        key_make6(k, zone, t->proto, t->s6, t->d6, t->sp, t->dp);
    else
        key_make(k, zone, t->proto, t->sip, t->dip, t->sp, t->dp);
}

/* ICMP's protocol number in a table (1, or ICMPv6's 58) and its types */
#define ICMP_PROTO(ct) ((ct)->a6 != NULL ? 58 : 1)
static bool icmp_echo_req(const oc_ct_t *ct, uint8_t t)
{
    return ct->a6 != NULL ? t == 128 : t == 8;
}
static bool icmp_echo_rep(const oc_ct_t *ct, uint8_t t)
{
    return ct->a6 != NULL ? t == 129 : t == 0;
}
static bool icmp_error_type(const oc_ct_t *ct, uint8_t t)
{
    if (ct->a6 != NULL) /* unreachable, too big, time exceeded, parameter */
        return t >= 1 && t <= 4;
    return t == 3 || t == 4 || t == 5 || t == 11 || t == 12;
}

static void touch(oc_ct_t *ct, ct_entry_t *e, uint64_t now)
{
    uint32_t to;
    switch (e->proto) {
    case 6:
        to = ct->to_ms_tcp[e->state];
        break;
    case 17:
        to = (e->flags & F_REPLIED) ? ct->to_udp2 : ct->to_udp1;
        break;
    case 1:
    case 58:
        to = ct->to_icmp;
        break;
    default:
        to = ct->to_gen;
    }
    e->expires = now + to;
}

/* ICMP error: the quoted packet's flow (as its sender sent it) */
static oc_ct_result_t icmp_error(oc_ct_t *ct, uint16_t zone, const uint8_t *q,
                                 uint32_t qlen, uint64_t now,
                                 oc_ct_info_t *info)
{
    ip_tuple_t t;
    const uint8_t *l4;
    uint32_t l4len, h;
    ct_key_t k;
    ct_entry_t *e;

    if (any_parse(ct, q, qlen, true, &t, &l4, &l4len) != 0 || l4len < 8) {
        info->why = OC_CT_WHY_MALFORMED;
        OC__CTR_INC(ct->st.invalid);
        return OC_CT_INVALID;
    }
    if (t.proto == 6 || t.proto == 17) {
        t.sp = oc__load_be16(l4);
        t.dp = oc__load_be16(l4 + 2);
    } else if (t.proto == ICMP_PROTO(ct) &&
               (icmp_echo_req(ct, l4[0]) || icmp_echo_rep(ct, l4[0]))) {
        t.sp = t.dp = oc__load_be16(l4 + 4);
    } else if (t.proto == ICMP_PROTO(ct)) {
        OC__CTR_INC(ct->st.no_conn); /* errors about errors are never related */
        return OC_CT_NO_CONN;
    }
    key_of(&k, zone, &t);
    h = key_hash(&k);
    e = lookup(ct, &k, h);
    if (e == NULL || expired(e, now)) {
        OC__CTR_INC(ct->st.no_conn);
        return OC_CT_NO_CONN;
    }
    return OC_CT_RELATED;
}

/* A packet between prepare and apply. */
enum { P_TRACK = 0, P_DONE, P_ICMP_ERROR };

typedef struct {
    ct_key_t k;
    uint32_t h;
    tcp_seg_t g;
    const uint8_t *q; /* P_ICMP_ERROR: the quoted packet */
    uint32_t qlen;
    uint8_t step;
    uint8_t res, why; /* P_DONE */
    uint8_t proto;    /* info->proto (0 when the IP header was bad) */
    uint8_t icmp, icmp_reply; /* an ICMP echo, a reply */
    uint8_t opener;
} ct_pkt_t;

/* Parse @p ip into @p p; counts what is malformed.  Reads no table state. */
static void prepare(oc_ct_t *ct, uint16_t zone, const uint8_t *ip, uint32_t len,
                    ct_pkt_t *p)
{
    ip_tuple_t t;
    const uint8_t *l4;
    uint32_t l4len;
    int pr;

    p->proto = 0;
    pr = any_parse(ct, ip, len, false, &t, &l4, &l4len);
    if (pr != 0) {
        p->step = P_DONE;
        p->why = OC_CT_WHY_NONE;
        if (pr > 0) {
            p->res = OC_CT_UNTRACKED;
            return;
        }
        goto malformed;
    }
    p->proto = t.proto;
    p->opener = 1;
    p->icmp = p->icmp_reply = 0;
    /* ICMP of the table's family as 1; 1 in an IPv6 packet is no ICMP */
    switch (t.proto == ICMP_PROTO(ct) ? 1 : t.proto == 1 ? 0xff : t.proto) {
    case 6: {
        uint32_t doff;
        if (l4len < 20 || (doff = (uint32_t)(l4[12] >> 4) * 4) < 20 ||
            doff > l4len)
            goto malformed;
        t.sp = oc__load_be16(l4);
        t.dp = oc__load_be16(l4 + 2);
        p->g.seq = oc__load_be32(l4 + 4);
        p->g.ack = oc__load_be32(l4 + 8);
        p->g.flags = l4[13] & (TH_FIN | TH_SYN | TH_RST | TH_ACK);
        p->g.win = oc__load_be16(l4 + 14);
        p->g.end = p->g.seq + (l4len - doff) + !!(p->g.flags & TH_SYN) +
                   !!(p->g.flags & TH_FIN);
        p->g.wscale =
            (p->g.flags & TH_SYN) ? tcp_wscale_opt(l4 + 20, doff - 20) : -1;
        p->opener =
            (p->g.flags & (TH_SYN | TH_ACK | TH_RST | TH_FIN)) == TH_SYN;
        break;
    }
    case 17:
        if (l4len < 8)
            goto malformed;
        t.sp = oc__load_be16(l4);
        t.dp = oc__load_be16(l4 + 2);
        break;
    case 1: /* ICMP, or ICMPv6 in an IPv6 table */
        if (l4len < 8)
            goto malformed;
        if (icmp_echo_req(ct, l4[0]) || icmp_echo_rep(ct, l4[0])) {
            t.sp = t.dp = oc__load_be16(l4 + 4); /* echo identifier */
            p->icmp = 1;
            p->icmp_reply = icmp_echo_rep(ct, l4[0]);
            p->opener = !p->icmp_reply;
        } else if (icmp_error_type(ct, l4[0])) {
            p->step = P_ICMP_ERROR;
            p->q = l4 + 8;
            p->qlen = l4len - 8;
            return;
        } else {
            p->step = P_DONE;
            p->res = OC_CT_INVALID;
            p->why = OC_CT_WHY_ICMP;
            OC__CTR_INC(ct->st.invalid);
            return;
        }
        break;
    default:
        break;
    }
    key_of(&p->k, zone, &t);
    p->h = key_hash(&p->k);
    p->step = P_TRACK;
    return;
malformed:
    p->step = P_DONE;
    p->res = OC_CT_INVALID;
    p->why = OC_CT_WHY_MALFORMED;
    OC__CTR_INC(ct->st.invalid);
}

/* Whether a packet that would open a flow may: the caller's answer. */
typedef struct {
    oc_ct_open_fn fn; /* NULL: allow */
    void *arg;
    bool allow;
} ct_open_t;

static oc_ct_result_t apply(oc_ct_t *ct, uint16_t zone, ct_pkt_t *p,
                            uint64_t now, const ct_open_t *may, uint32_t i,
                            oc_ct_info_t *info)
{
    ct_entry_t *e;
    int dir;

    memset(info, 0, sizeof(*info));
    info->proto = p->proto;
    if (p->step == P_DONE) {
        info->why = p->why;
        return (oc_ct_result_t)p->res;
    }
    if (p->step == P_ICMP_ERROR)
        return icmp_error(ct, zone, p->q, p->qlen, now, info);
    e = lookup(ct, &p->k, p->h);
    if (e != NULL && expired(e, now)) {
        oc__ct_remove(ct, (uint32_t)(e - ct->e));
        OC__CTR_INC(ct->st.expired);
        e = NULL;
    }
    dir = e != NULL && p->k.src_side != !!(e->flags & F_ORIG1);
    /* a new SYN from the originator reopens a closed or closing flow */
    if (e != NULL && p->proto == 6 && p->opener && dir == 0 &&
        e->state >= OC_CT_TCP_TIME_WAIT) {
        oc__ct_remove(ct, (uint32_t)(e - ct->e));
        OC__CTR_INC(ct->st.closed);
        e = NULL;
    }
    if (e == NULL) {
        if (!p->opener ||
            !(may->fn != NULL ? may->fn(may->arg, i) : may->allow)) {
            OC__CTR_INC(ct->st.no_conn);
            return OC_CT_NO_CONN;
        }
        e = oc__ct_insert(ct, &p->k, p->h, now);
        if (e == NULL)
            return OC_CT_FULL;
        if (p->proto == 6) {
            e->state = OC_CT_TCP_SYN_SENT;
            e->wscale[0] = p->g.wscale >= 0 ? (uint8_t)p->g.wscale : 0xff;
            e->td[0].end = e->td[0].maxend = p->g.end;
            e->td[0].maxwin = p->g.win ? p->g.win : 1;
            info->state = e->state;
        }
        e->packets[0] = 1;
        touch(ct, e, now);
        return OC_CT_NEW;
    }
    info->reply = (uint8_t)dir;
    if (p->proto == 6) {
        oc_ct_result_t r = tcp_track(ct, e, dir, &p->g, info);
        if (r != OC_CT_EST)
            return r;
        if (e->wscale[0] == 0xff)
            e->wscale[0] = 0;
    } else if (p->icmp && dir != p->icmp_reply) {
        info->why =
            OC_CT_WHY_ICMP; /* a reply from the requester, or vice versa */
        OC__CTR_INC(ct->st.invalid);
        return OC_CT_INVALID;
    } else if (dir == 1) {
        e->flags |= F_REPLIED | F_ASSURED;
    }
    e->packets[dir]++;
    touch(ct, e, now);
    return OC_CT_EST;
}

oc_ct_result_t oc__ct_track(oc_ct_t *ct, uint16_t zone, const uint8_t *ip,
                           uint32_t len, uint64_t now, bool allow_new,
                           oc_ct_info_t *info)
{
    ct_pkt_t p;
    ct_open_t may = {.fn = NULL, .allow = allow_new};

    prepare(ct, zone, ip, len, &p);
    return apply(ct, zone, &p, now, &may, 0, info);
}

/* Packets prepared (and prefetched for) at a time: enough misses in
 * flight to cover a memory latency, few enough that the first lines
 * prefetched are still in L1 when their packet is applied. */
#define CHUNK 32

void oc__ct_track_burst(oc_ct_t *ct, uint16_t zone, const uint8_t *const *ip,
                       const uint32_t *len, uint32_t n, uint64_t now_ms,
                       oc_ct_open_fn may_open, void *arg, oc_ct_result_t *res,
                       oc_ct_info_t *info)
{
    ct_pkt_t p[CHUNK];
    ct_open_t may = {.fn = may_open, .arg = arg, .allow = true};

    for (uint32_t base = 0; base < n; base += CHUNK) {
        uint32_t m = n - base < CHUNK ? n - base : CHUNK, nins = 0;

        /* the headers (IPv4 + TCP without options: 40 bytes, perhaps
         * across two lines; IPv6's 60 as well) */
        for (uint32_t i = 0; i < m; i++) {
            __builtin_prefetch(ip[base + i]);
            __builtin_prefetch(ip[base + i] + 39);
        }
        /* keys and hashes; the index slot each one starts at */
        for (uint32_t i = 0; i < m; i++) {
            prepare(ct, zone, ip[base + i], len[base + i], &p[i]);
            if (p[i].step == P_TRACK)
                __builtin_prefetch(&ct->idx[p[i].h & ct->mask]);
        }
        /* the entry of the first slot whose hash matches; with none, the
         * free entry a new flow would take (prefetched for writing) */
        for (uint32_t i = 0; i < m; i++) {
            uint32_t s;
            if (p[i].step != P_TRACK)
                continue;
            for (s = p[i].h & ct->mask;; s = (s + 1) & ct->mask) {
                uint64_t v = ct->idx[s];
                if (v == 0) {
                    if (p[i].opener && nins < ct->nfree) {
                        uint32_t ei = ct->free[ct->nfree - 1 - nins++];
                        __builtin_prefetch(&ct->e[ei], 1);
                        if (ct->a6 != NULL)
                            __builtin_prefetch(ct->a6[ei], 1);
                    }
                    break;
                }
                if ((uint32_t)(v >> 32) == p[i].h) {
                    __builtin_prefetch(&ct->e[(uint32_t)v - 1]);
                    if (ct->a6 != NULL) /* its addresses, compared too */
                        __builtin_prefetch(ct->a6[(uint32_t)v - 1]);
                    break;
                }
            }
        }
        /* in order: each packet sees what the ones before it did */
        for (uint32_t i = 0; i < m; i++)
            res[base + i] =
                apply(ct, zone, &p[i], now_ms, &may, base + i, &info[base + i]);
    }
}
