/*
 * fuzz_pkt.c — libFuzzer target over the packet parser (src/pkt/parse.c)
 * and offcore-dp's rule and config parsers (src/dp/conf/conf.c).  Invariants
 * checked beyond "no crash, no out-of-bounds read" (the exact-size copies
 * let ASan see any read past the end):
 *   frames: the reason is in range and repeatable; a classified frame has
 *           a whole IPv4 header inside the frame; others have a zero key;
 *           a TCP one's options go through the timestamps option reader
 *           (src/pkt/flow.c, on an exact-size copy of the TCP header) and
 *           into a flow table, as offcore-dp's flow stage does: every
 *           record's RTT samples are consistent (bucket counts add up to
 *           the sample count, min <= max);
 *   rules:  an accepted rule formats to text that parses to the same rule;
 *   config: an error is reported with at least one message, a success
 *           leaves at least one attachment.
 */
#include "fuzz_pkt.h"
#include "dp/dp.h"
#include "pkt/flow.h"

#include <stdlib.h>
#include <string.h>

unsigned long fuzz_pkt_accepted;

#define CHECK(c)                                                               \
    do {                                                                       \
        if (!(c))                                                              \
            abort();                                                           \
    } while (0)

static void rec_check(void *arg, const oc_flow_rec_t *r)
{
    (void)arg;
    for (int d = 0; d < 2; d++) {
        uint64_t sum = 0;
        for (int b = 0; b <= OC_FLOW_RTT_BUCKETS; b++)
            sum += r->rtt[d].b[b];
        CHECK(sum == r->rtt[d].n);
        CHECK(r->rtt[d].n == 0 || r->rtt[d].min_us <= r->rtt[d].max_us);
    }
}

/* The flow stage's path over a parsed IPv4 TCP packet (flow_stage.c). */
static void tcp_flow(const uint8_t *d, const oc_pkt_meta_t *m)
{
    static oc_flow_table_t *t;
    static uint64_t clock_us;
    const uint8_t *ip = d + m->l3_off, *tcp = ip + (ip[0] & 15) * 4;
    size_t hl = (size_t)(tcp[12] >> 4) * 4;
    oc_flow_ts_t ts;
    uint8_t *h = malloc(hl);
    bool has;

    if (t == NULL) {
        oc_flow_conf_t c = {.capacity = 1024, .idle_ms = 50, .active_ms = 100,
                            .emit = rec_check};
        CHECK(oc__flow_table_create(&c, &t) == OC_OK);
    }
    CHECK(h != NULL);
    memcpy(h, tcp, hl);
    has = oc__flow_tcp_ts(h, hl, &ts);
    /* the clock: from the packet too, so that samples vary */
    clock_us += 1 + (has ? ts.val % 4096 : 0);
    (void)oc__flow_update(t, (uint32_t)(ip[2] << 8 | ip[3]), h[13],
                         m->key.src_ip, m->key.dst_ip, m->key.sport,
                         m->key.dport, 6, OC_FLOW_NO_VNI, 0, clock_us,
                         has ? &ts : NULL);
    oc__flow_walk(t, rec_check, NULL);
    (void)oc__flow_expire(t, clock_us, 64);
    free(h);
}

static void frame(const uint8_t *d, size_t n)
{
    oc_pkt_meta_t m, m2;
    static const oc_acl_key_t zero;
    oc_pkt_reason_t r = oc__pkt_parse(d, (uint32_t)n, 1526, &m);

    CHECK((unsigned)r < OC_PKT_R_MAX && m.reason == r);
    CHECK(oc__pkt_parse(d, (uint32_t)n, 1526, &m2) == r &&
          memcmp(&m, &m2, sizeof(m)) == 0);
    if (r == OC_PKT_R_IPV4 || r == OC_PKT_R_IPV4_FRAG) {
        CHECK((size_t)m.l3_off + 20 <= n && m.ethertype == 0x0800);
        if (r == OC_PKT_R_IPV4 && m.key.proto == 6)
            tcp_flow(d, &m);
    } else
        CHECK(memcmp(&m.key, &zero, sizeof(zero)) == 0);
    if (n > 1526)
        CHECK(r == OC_PKT_R_OVERSIZED);
    if (oc__pkt_default_policy(r) == OC_PKT_PASS)
        fuzz_pkt_accepted++;
}

static void rule(const char *text)
{
    oc_dp_rule_t r, r2;
    char why[160], out[512];

    if (oc__dp_rule_parse(text, &r, why, sizeof(why)) != 0) {
        CHECK(why[0] != '\0');
        return;
    }
    fuzz_pkt_accepted++;
    CHECK(oc__dp_rule_format(&r, out, sizeof(out)) < (int)sizeof(out));
    CHECK(oc__dp_rule_parse(out, &r2, why, sizeof(why)) == 0);
    CHECK(memcmp(&r, &r2, sizeof(r)) == 0);
}

static void conf(const char *text, size_t n)
{
    oc_dp_conf_t c;
    oc_conf_errors_t *e = calloc(1, sizeof(*e));
    oc_status_t st;

    CHECK(e != NULL);
    oc__dp_conf_defaults(&c);
    st = oc__dp_conf_parse(text, n, "fuzz", NULL, false, &c, e);
    if (st == OC_OK) {
        CHECK(e->count == 0 && c.nattach > 0 && c.nrules <= c.max_rules);
        fuzz_pkt_accepted++;
        oc__dp_conf_free(&c);
    } else {
        CHECK(st == OC_ERR_CONFIG && e->count > 0 && e->text[0] != '\0');
    }
    free(e);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text;

    if (size < 1)
        return 0;
    switch (data[0] % 3) {
    case FUZZ_PKT_FRAME:
        frame(data + 1, size - 1);
        break;
    default:
        /* `rules FILE` would read the file system: not this target's job */
        if (data[0] % 3 == FUZZ_PKT_CONF &&
            memmem(data + 1, size - 1, "rules", 5) != NULL)
            return 0;
        text = malloc(size);
        if (text == NULL)
            abort();
        memcpy(text, data + 1, size - 1);
        text[size - 1] = '\0';
        if (data[0] % 3 == FUZZ_PKT_RULE)
            rule(text);
        else
            conf(text, size - 1);
        free(text);
        break;
    }
    return 0;
}
