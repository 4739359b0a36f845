/*
 * test_runtime.c — liboffcore inline placement with real processes.
 *
 * Forks N ranks that bootstrap through files (OC_BOOTSTRAP_DIR), then runs
 * one scenario and checks every delivered message.  Usage:
 *   test_runtime SCENARIO NRANKS [FIRST COUNT]
 * runs ranks FIRST .. FIRST+COUNT-1 of a job of NRANKS (default: all), so
 * one job can span processes started in several places (namespaces).
 * Exit 0 PASS, 1 FAIL, 77 SKIP.  A watchdog kills a scenario after 60 s.
 */
#include "ctl/ctl.h"
#include "runtime/runtime.h"
#include "util/clock.h"

#include <offcore/offcore.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* One write per failure line: the ranks share stderr, and a line written in
 * pieces interleaves with the other rank's (the test scripts grep these). */
#define CHECK(cond, ...)                                                       \
    do {                                                                       \
        if (!(cond)) {                                                         \
            char m_[512];                                                      \
            int n_ = snprintf(m_, sizeof m_, "rank %u: FAIL %s:%d: %s: ",      \
                              g_rank, __FILE__, __LINE__, #cond);              \
            if (n_ < 0 || (size_t)n_ >= sizeof m_ - 2)                         \
                n_ = 0;                                                        \
            int k_ = snprintf(m_ + n_, sizeof m_ - 1 - (size_t)n_,             \
                              __VA_ARGS__);                                    \
            n_ = k_ < 0 ? n_                                                   \
                 : (size_t)(n_ + k_) >= sizeof m_ - 1 ? (int)sizeof m_ - 2     \
                                                      : n_ + k_;               \
            m_[n_++] = '\n';                                                   \
            if (write(STDERR_FILENO, m_, (size_t)n_) < 0)                      \
                _exit(1);                                                      \
            exit(1);                                                           \
        }                                                                      \
    } while (0)

static uint32_t g_rank, g_size;
static oc_context_t *g_ctx;

/* Per-source expectations: messages from each source arrive in order. */
static uint64_t *next_seq;   /* [src] next expected sequence number */
static uint64_t n_delivered;
static uint64_t replies_expected, replies_got;
static int stall_every;      /* handler returns NO_RESOURCE every N calls */
static uint64_t handler_calls;
static uint64_t requests_answered, g_sent;
/* Where a rank is, said if its alarm ends it (a stall in a CI log). */
static const char *volatile g_where = "oc_init";

/* The rank's alarm: say where it stalled, then end as the alarm would. */
static void on_alarm(int sig)
{
    char m[256];
    int n = snprintf(m, sizeof m, "rank %u: alarm, stalled in %s: sent %llu, "
                     "delivered %llu, requests answered %llu, replies %llu "
                     "of %llu\n", g_rank, g_where,
                     (unsigned long long)g_sent,
                     (unsigned long long)n_delivered,
                     (unsigned long long)requests_answered,
                     (unsigned long long)replies_got,
                     (unsigned long long)replies_expected);
    if (n > 0)
        (void)!write(STDERR_FILENO, m, (size_t)n < sizeof m ? (size_t)n
                                                            : sizeof m - 1);
    signal(sig, SIG_DFL);
    raise(sig);
}

static size_t len_of(uint32_t src, uint64_t seq, int mode)
{
    switch (mode) {
    case 0: return 8;                                   /* fixed */
    case 1: return (size_t)((seq * 7 + src) % 300);     /* mixed 0..299 */
    case 2: return seq % 2 ? 16 : 8;                    /* alternating */
    default: return (size_t)(seq % 5 == 4 ? 1000 : 24); /* mostly fixed */
    }
}

static int g_mode;
/* endless: after the stream, each rank tells every rank how many rounds it
 * sent, so the receivers can check they got them all.  That message is 16
 * bytes (the stream's are 8) and may arrive while the receiver is still
 * in its first quiesce. */
#define FINAL_MAGIC 0x6c616e6966636f00ull /* "\0ocfinal" */
static int g_endless;
static uint64_t *final_rounds; /* [src] */
static uint32_t n_final;

static void fill(uint8_t *p, size_t len, uint32_t src, uint64_t seq)
{
    for (size_t i = 0; i < len; i++)
        p[i] = (uint8_t)(src * 31 + seq * 7 + i);
    if (len >= 8)
        memcpy(p, &seq, 8);
}

static oc_status_t h_stream(void *arg, uint32_t src, const void *msg,
                            size_t len)
{
    uint8_t expect[2048];
    uint64_t seq = next_seq[src];
    (void)arg;
    handler_calls++;
    if (stall_every && handler_calls % (uint64_t)stall_every == 0)
        return OC_ERR_NO_RESOURCE;
    CHECK(src < g_size, "src %u", src);
    if (g_endless && len == 16) {
        uint64_t v[2];
        memcpy(v, msg, 16);
        CHECK(v[0] == FINAL_MAGIC, "from %u: a 16-byte message", src);
        final_rounds[src] = v[1];
        n_final++;
        return OC_OK;
    }
    CHECK(len == len_of(src, seq, g_mode), "from %u seq %llu: len %zu", src,
          (unsigned long long)seq, len);
    fill(expect, len, src, seq);
    CHECK(memcmp(expect, msg, len) == 0, "from %u seq %llu: payload differs",
          src, (unsigned long long)seq);
    next_seq[src]++;
    n_delivered++;
    return OC_OK;
}

/* Request: 8 bytes (value); reply: 16 bytes (value, value*3). */
static oc_status_t h_reqrep(void *arg, uint32_t src, const void *msg,
                            size_t len)
{
    uint64_t v[2];
    (void)arg;
    if (len == 8) {
        memcpy(&v[0], msg, 8);
        v[1] = v[0] * 3;
        oc_status_t st = oc_send(g_ctx, src, v, 16);
        if (st == OC_ERR_NO_RESOURCE)
            return st;
        CHECK(st == OC_OK, "reply send: %s", oc_status_string(st));
        requests_answered++;
    } else {
        CHECK(len == 16, "reply len %zu", len);
        memcpy(v, msg, 16);
        CHECK(v[1] == v[0] * 3, "bad reply");
        replies_got++;
    }
    return OC_OK;
}

static void send_retry(uint32_t dest, const void *buf, size_t len)
{
    oc_status_t st;
    while ((st = oc_send(g_ctx, dest, buf, len)) == OC_ERR_NO_RESOURCE)
        CHECK(oc_poll(g_ctx) >= 0, "poll failed");
    CHECK(st == OC_OK, "send to %u len %zu: %s", dest, len,
          oc_status_string(st));
    g_sent++;
}

static void init_ctx(oc_handler_t h)
{
    oc_context_params_t p = {0};
    oc_status_t st;
    p.field_mask = OC_PARAM_RANK | OC_PARAM_SIZE | OC_PARAM_HANDLER;
    p.rank = g_rank;
    p.size = g_size;
    p.handler = h;
    st = oc_init(&p, &g_ctx);
    CHECK(st == OC_OK, "oc_init: %s", oc_status_string(st));
    g_where = "the scenario, after oc_init";
    next_seq = calloc(g_size, sizeof(*next_seq));
}

/* Every rank streams N messages to every rank (itself included). */
static void scen_stream(int mode, uint64_t n)
{
    uint8_t buf[2048];
    oc_counters_t c;
    g_mode = mode;
    init_ctx(h_stream);
    g_where = "the stream's sends";
    for (uint64_t seq = 0; seq < n; seq++)
        for (uint32_t d = 0; d < g_size; d++) {
            size_t len = len_of(g_rank, seq, mode);
            fill(buf, len, g_rank, seq);
            send_retry(d, buf, len);
        }
    g_where = "oc_quiesce";
    CHECK(oc_quiesce(g_ctx) == OC_OK, "quiesce");
    for (uint32_t s = 0; s < g_size; s++)
        CHECK(next_seq[s] == n, "from %u: got %llu of %llu", s,
              (unsigned long long)next_seq[s], (unsigned long long)n);
    oc_counters_get(g_ctx, &c, sizeof c);
    CHECK(c.msgs_sent == n * g_size, "sent %llu", (unsigned long long)c.msgs_sent);
    CHECK(c.msgs_delivered == n * g_size, "delivered");
    CHECK(c.bundles_rejected == 0, "rejects");
    /* a second epoch works too */
    CHECK(oc_quiesce(g_ctx) == OC_OK, "second quiesce");
    CHECK(oc_finalize(g_ctx) == OC_OK, "finalize");
}

static void scen_reqrep(uint64_t n)
{
    uint64_t v;
    init_ctx(h_reqrep);
    g_where = "the requests' sends";
    for (uint64_t i = 0; i < n; i++) {
        v = i * g_size + g_rank;
        send_retry((uint32_t)((i * 2654435761u + g_rank) % g_size), &v, 8);
        replies_expected++;
    }
    g_where = "oc_quiesce";
    CHECK(oc_quiesce(g_ctx) == OC_OK, "quiesce");
    CHECK(replies_got == replies_expected, "replies %llu of %llu",
          (unsigned long long)replies_got,
          (unsigned long long)replies_expected);
    g_where = "oc_finalize";
    CHECK(oc_finalize(g_ctx) == OC_OK, "finalize");
}

/* Wait, without polling, until every rank has reached this point: a file
 * each in OC_BOOTSTRAP_DIR (the ranks of one test_runtime share it), for
 * at most 30 s. */
static void files_barrier(const char *name)
{
    const char *dir = getenv("OC_BOOTSTRAP_DIR");
    char path[512];
    FILE *f;
    if (dir == NULL)
        return;
    snprintf(path, sizeof(path), "%s/%s.%u", dir, name, g_rank);
    CHECK((f = fopen(path, "w")) != NULL, "create %s", path);
    fclose(f);
    uint64_t end = oc__now_us() + 30000000u;
    for (uint32_t r = 0; r < g_size && oc__now_us() < end; r++) {
        snprintf(path, sizeof(path), "%s/%s.%u", dir, name, r);
        while (access(path, F_OK) != 0 && oc__now_us() < end)
            usleep(1000);
    }
}

/* Without polling, a tiny pool must push back, never drop. */
static void scen_backpressure(void)
{
    uint64_t seq = 0, refused = 0;
    uint8_t buf[64];
    oc_counters_t c;
    g_mode = 0;
    init_ctx(h_stream);
    uint32_t d = (g_rank + 1) % g_size;
    for (;;) {
        fill(buf, 8, g_rank, seq);
        oc_status_t st = oc_send(g_ctx, d, buf, 8);
        if (st == OC_ERR_NO_RESOURCE) {
            refused++;
            break;
        }
        CHECK(st == OC_OK, "send: %s", oc_status_string(st));
        seq++;
        CHECK(seq < 100000000, "never pushed back");
    }
    /* now drain it all with polling, up to a total every rank reaches: how
     * much goes in before the first push-back depends on the channel (on
     * shared memory the agent drains the ring while we do not poll).  Not
     * before every rank was pushed back: a rank that polls drains the
     * others, which then may go on far past any bound (ASan, per-dest on
     * shared memory: 3.7M) */
    files_barrier("pushed-back");
    CHECK(seq < 900000, "pushed back only after %llu", (unsigned long long)seq);
    for (uint64_t i = 0; i < 20000 || seq < 1000000; i++, seq++) {
        fill(buf, 8, g_rank, seq);
        send_retry(d, buf, 8);
    }
    CHECK(oc_quiesce(g_ctx) == OC_OK, "quiesce");
    uint32_t from = (g_rank + g_size - 1) % g_size;
    oc_counters_get(g_ctx, &c, sizeof c);
    CHECK(c.send_no_resource >= 1, "no back-pressure counted");
    /* everyone sent the same count: exchange it implicitly */
    CHECK(next_seq[from] == seq, "from %u got %llu of %llu", from,
          (unsigned long long)next_seq[from], (unsigned long long)seq);
    CHECK(oc_finalize(g_ctx) == OC_OK, "finalize");
}

/* Errors on bad arguments, and malformed bundles counted, not delivered;
 * a source column delivered. */
static void scen_errors(void)
{
    static uint8_t big[70000];
    oc_counters_t c;
    g_mode = 0;
    init_ctx(h_stream);
    CHECK(oc_send(g_ctx, g_size, big, 8) == OC_ERR_RANK_RANGE, "range");
    CHECK(oc_send(g_ctx, 0, big, oc_max_message(g_ctx) + 1) ==
              OC_ERR_MSG_TOO_LONG, "too long");
    CHECK(oc_quiesce_test(g_ctx) == OC_ERR_STATE, "test without start");
    /* Malformed bundles enter the real delivery path (as a bundle sent to
     * self would) in buffers the context frees at finalize; each must be
     * rejected and counted, none delivered. */
    for (int k = 0; k < 3; k++) {
        oc_eng_buf_t *b = calloc(1, sizeof(*b));
        CHECK(b != NULL, "calloc");
        b->eng = g_ctx->eng;
        b->reserve = 1;
        b->data = aligned_alloc(64, g_ctx->cfg.bundle_size);
        memset(b->data, 0, g_ctx->cfg.bundle_size);
        if (k == 0) {
            memset(b->data, 0xab, 64); /* bad magic */
        } else {
            oc_wire_hdr_t h = {0};
            h.count = 1;
            h.length = k == 1 ? 64 : 48; /* 1: length != received */
            h.job = 0;
            h.src = h.dst = OC_WIRE_RANK_NONE;
            oc__wire_hdr_write(b->data, &h);
            /* 2: a message for a rank that does not exist */
            oc__store_le64(b->data + OC_WIRE_HDR_LEN,
                         oc__wire_msg_hdr(g_size + 5, 0, 0));
        }
        oc__rx_push(g_ctx, b->data, k == 2 ? 48 : 56, b);
    }
    CHECK(oc_poll(g_ctx) == 0, "a malformed bundle was delivered");
    oc_counters_get(g_ctx, &c, sizeof c);
    CHECK(c.bundles_rejected == 3, "rejected %llu of 3",
          (unsigned long long)c.bundles_rejected);
    CHECK(oc_quiesce(g_ctx) == OC_OK, "quiesce");
    oc_counters_get(g_ctx, &c, sizeof c);
    CHECK(c.msgs_delivered == 0, "delivered something");
    /* A source column (wire.h: what an agent may hand a rank), each item
     * from the source its column names, delivered through a handler
     * that stalls now and then; then one whose source is out of range,
     * rejected.  (After quiesce: messages nobody sent would keep it
     * from ever agreeing.) */
    for (int k = 0; k < 2; k++) {
        static const uint32_t srcs[7] = {0, 0, 1, 1, 1, 0, 9};
        oc_eng_buf_t *b = calloc(1, sizeof(*b));
        oc_wire_hdr_t h = {0};
        uint64_t seq[16] = {0};
        uint8_t *p;
        CHECK(b != NULL, "calloc");
        b->eng = g_ctx->eng;
        b->reserve = 1;
        b->data = aligned_alloc(64, g_ctx->cfg.bundle_size);
        memset(b->data, 0, g_ctx->cfg.bundle_size);
        p = b->data + OC_WIRE_HDR_LEN + oc__wire_col_dst_bytes(7);
        for (uint32_t i = 0; i < 7; i++) {
            const uint32_t src = srcs[i] % g_size;
            oc__store_le32(b->data + OC_WIRE_HDR_LEN + 4 * i,
                           k == 1 && i == 6 ? g_size : src);
            fill(p + 8 * i, 8, src, seq[src]++);
        }
        h.flags = OC_WIRE_F_FIXED | OC_WIRE_F_SRCCOL;
        h.item_size = 8;
        h.count = 7;
        h.length = (uint32_t)(p + 8 * 7 - b->data);
        h.job = (uint32_t)g_ctx->cfg.job;
        h.src = OC_WIRE_RANK_NONE;
        h.dst = g_rank;
        oc__wire_hdr_write(b->data, &h);
        stall_every = 3;
        oc__rx_push(g_ctx, b->data, h.length, b);
        for (int t = 0; t < 20; t++) /* each stall costs a poll */
            CHECK(oc_poll(g_ctx) >= 0, "poll");
        stall_every = 0;
    }
    CHECK(n_delivered == 7, "source column: %llu of 7 delivered",
          (unsigned long long)n_delivered);
    oc_counters_get(g_ctx, &c, sizeof c);
    CHECK(c.bundles_rejected == 4, "rejected %llu of 4",
          (unsigned long long)c.bundles_rejected);
    CHECK(c.msgs_delivered == 7, "delivered %llu, not the column's 7",
          (unsigned long long)c.msgs_delivered);
    CHECK(oc_finalize(g_ctx) == OC_OK, "finalize");
}

/* Stream to every rank until OC_TEST_SECONDS pass, then quiesce and check.
 * For fault tests: any error is printed with its name and exits 1. */
static void scen_endless(void)
{
    uint8_t buf[64];
    uint64_t seq = 0;
    double secs = getenv("OC_TEST_SECONDS") ? atof(getenv("OC_TEST_SECONDS")) : 2;
    uint64_t end = oc__now_us() + (uint64_t)(secs * 1e6);
    oc_status_t st;

    g_mode = 0;
    g_endless = 1;
    final_rounds = calloc(g_size, sizeof(*final_rounds));
    CHECK(final_rounds != NULL, "calloc");
    init_ctx(h_stream);
    while (oc__now_us() < end) {
        for (int k = 0; k < 1000; k++, seq++)
            for (uint32_t d = 0; d < g_size; d++) {
                fill(buf, 8, g_rank, seq);
                while ((st = oc_send(g_ctx, d, buf, 8)) == OC_ERR_NO_RESOURCE) {
                    int n = oc_poll(g_ctx);
                    if (n < 0) {
                        fprintf(stderr, "rank %u: oc_poll: %s\n", g_rank,
                                oc_status_string(n));
                        exit(1);
                    }
                }
                if (st != OC_OK) {
                    fprintf(stderr, "rank %u: oc_send: %s\n", g_rank,
                            oc_status_string(st));
                    exit(1);
                }
            }
        int n = oc_poll(g_ctx);
        if (n < 0) {
            fprintf(stderr, "rank %u: oc_poll: %s\n", g_rank,
                    oc_status_string(n));
            exit(1);
        }
    }
    st = oc_quiesce(g_ctx);
    if (st != OC_OK) {
        fprintf(stderr, "rank %u: oc_quiesce: %s\n", g_rank,
                oc_status_string(st));
        exit(1);
    }
    /* Ranks sent different numbers of rounds: what arrived from each was
     * checked in order by the handler; now each says how many it sent, so
     * that every message is known to have arrived exactly once. */
    uint64_t fin[2] = {FINAL_MAGIC, seq};
    for (uint32_t d = 0; d < g_size; d++)
        send_retry(d, fin, 16);
    CHECK(oc_quiesce(g_ctx) == OC_OK, "final quiesce");
    CHECK(n_final == g_size, "%u of %u final counts", n_final, g_size);
    for (uint32_t s = 0; s < g_size; s++)
        CHECK(next_seq[s] == final_rounds[s], "from %u: %llu of %llu messages",
              s, (unsigned long long)next_seq[s],
              (unsigned long long)final_rounds[s]);
    if (g_rank == 0)
        printf("endless: rank 0 received %llu messages from %u ranks, all of "
               "them\n", (unsigned long long)n_delivered, g_size);
    fflush(stdout); /* the rank leaves with _exit */
    CHECK(oc_finalize(g_ctx) == OC_OK, "finalize");
}

/* Rank 0 stops polling for 2 s while the others stream to it: they must
 * be pushed back (OC_ERR_NO_RESOURCE), and once it polls again every
 * message arrives, in order, exactly once. */
static void scen_stallrecv(uint64_t n)
{
    uint8_t buf[8];
    oc_counters_t c;
    g_mode = 0;
    init_ctx(h_stream);
    if (g_rank == 0) {
        /* OC_TEST_STALL_SECONDS (default 2); OC_TEST_STALL_MARK: a file
         * created when the stall ends, for scripts that check what
         * happened meanwhile; OC_TEST_STALL_UNTIL: a file whose creation
         * ends the stall early (the script says when it has seen enough) */
        const char *sec = getenv("OC_TEST_STALL_SECONDS");
        const char *mark = getenv("OC_TEST_STALL_MARK");
        const char *release = getenv("OC_TEST_STALL_UNTIL");
        uint64_t until = oc__now_us() + (uint64_t)((sec ? atof(sec) : 2) * 1e6);
        uint64_t look = 0;
        while (oc__now_us() < until) { /* deliberately not polling */
            if (release != NULL && oc__now_us() >= look) {
                if (access(release, F_OK) == 0)
                    break;
                look = oc__now_us() + 10000;
            }
        }
        if (mark != NULL) {
            FILE *f = fopen(mark, "w");
            if (f != NULL)
                fclose(f);
        }
    } else {
        for (uint64_t seq = 0; seq < n; seq++) {
            fill(buf, 8, g_rank, seq);
            send_retry(0, buf, 8);
        }
    }
    CHECK(oc_quiesce(g_ctx) == OC_OK, "quiesce");
    oc_counters_get(g_ctx, &c, sizeof c);
    if (g_rank == 0) {
        for (uint32_t s = 1; s < g_size; s++)
            CHECK(next_seq[s] == n, "from %u: %llu of %llu", s,
                  (unsigned long long)next_seq[s], (unsigned long long)n);
    } else {
        CHECK(c.send_no_resource > 0, "never pushed back while rank 0 slept");
    }
    CHECK(oc_finalize(g_ctx) == OC_OK, "finalize");
}

/* A hostile rank (agent placement, size 1): after an honest handshake it
 * sends bundles the agent must reject — garbage, another job's, a forged
 * source, a rank out of range, an unknown token — and junk on a second
 * control connection.  The agent must count them and go on serving: the
 * script checks its counters and runs another job afterwards. */
static void scen_evil(void)
{
    uint8_t b[256];
    oc_wire_hdr_t h;
    size_t len;

    g_mode = 0;
    init_ctx(h_stream);
    CHECK(g_ctx->agent != NULL, "not in the agent placement");
    memset(b, 0xab, sizeof(b));                        /* 1: garbage */
    CHECK(oc__agent_send_raw(g_ctx, b, 64, 0) == OC_OK, "send");
    for (int k = 0; k < 4; k++) {
        memset(&h, 0, sizeof(h));
        memset(b, 0, sizeof(b));
        h.count = 1;
        h.job = (uint32_t)g_ctx->cfg.job;
        h.src = h.dst = OC_WIRE_RANK_NONE;
        uint32_t dst = 0, src = 0;
        if (k == 0)
            h.job ^= 1;      /* 2: another job's bundle */
        if (k == 1)
            src = 5;         /* 3: forged source (and out of range) */
        if (k == 2)
            dst = 1000;      /* 4: destination out of range */
        len = OC_WIRE_HDR_LEN + OC_WIRE_MSG_HDR_LEN + 8;
        h.length = (uint32_t)len;
        oc__wire_hdr_write(b, &h);
        oc__wire_put_msg(b + OC_WIRE_HDR_LEN, dst, src, "12345678", 8);
        /* 5 (k == 3): a well-formed bundle under a token nobody has */
        CHECK(oc__agent_send_raw(g_ctx, b, len, k == 3 ? 0x5eed : 0) == OC_OK,
              "send");
    }
    {   /* 7, on the shared-memory channel: a column stream whose one
         * destination is out of range, which the agent reads in place and
         * checks as it routes (not in validation: a rank may rewrite its
         * ring after that) */
        memset(&h, 0, sizeof(h));
        memset(b, 0, sizeof(b));
        h.flags = OC_WIRE_F_FIXED | OC_WIRE_F_STREAM;
        h.item_size = 8;
        h.count = 1;
        h.job = (uint32_t)g_ctx->cfg.job;
        h.src = g_rank;
        h.dst = OC_WIRE_RANK_NONE;
        len = OC_WIRE_HDR_LEN + 8 + 8;
        h.length = (uint32_t)len;
        oc__wire_hdr_write(b, &h);
        oc__store_le32(b + OC_WIRE_HDR_LEN, 1000);
        memcpy(b + OC_WIRE_HDR_LEN + 8, "12345678", 8);
        if (oc__agent_shm_send_raw(g_ctx, b, len) == OC_OK)
            fprintf(stderr, "rank %u: shm-injected\n", g_rank);
    }
    {   /* 6: junk on the control socket */
        int fd;
        const char *addr = getenv("OC_AGENT");
        CHECK(oc__ctl_connect(addr, 2000, &fd) == OC_OK, "connect");
        CHECK(write(fd, "GET / HTTP/1.0\r\n\r\n", 18) == 18, "write");
        close(fd);
    }
    /* Stay connected until the script has seen the agent count all this
     * (OC_TEST_RELEASE names a file it creates then), polling meanwhile. */
    if (getenv("OC_TEST_RELEASE") != NULL) {
        uint64_t give_up = oc__now_us() + 30000000;
        while (access(getenv("OC_TEST_RELEASE"), F_OK) != 0 &&
               oc__now_us() < give_up)
            CHECK(oc_poll(g_ctx) >= 0, "poll while held");
    }
    /* the honest path still works */
    for (uint64_t seq = 0; seq < 1000; seq++) {
        fill(b, 8, g_rank, seq);
        send_retry(0, b, 8);
    }
    CHECK(oc_quiesce(g_ctx) == OC_OK, "quiesce");
    CHECK(next_seq[0] == 1000, "own messages: %llu",
          (unsigned long long)next_seq[0]);
    CHECK(oc_finalize(g_ctx) == OC_OK, "finalize");
}

static int run_rank(const char *scen)
{
    if (!strcmp(scen, "fixed"))
        scen_stream(0, 200000);
    else if (!strcmp(scen, "mixed"))
        scen_stream(1, 20000);
    else if (!strcmp(scen, "alternating"))
        scen_stream(2, 50000);
    else if (!strcmp(scen, "large"))
        scen_stream(3, 20000);
    else if (!strcmp(scen, "stall")) {
        stall_every = 7;
        scen_stream(1, 5000);
    } else if (!strcmp(scen, "reqrep"))
        scen_reqrep(300000);
    else if (!strcmp(scen, "backpressure"))
        scen_backpressure();
    else if (!strcmp(scen, "errors"))
        scen_errors();
    else if (!strcmp(scen, "endless"))
        scen_endless();
    else if (!strcmp(scen, "evil"))
        scen_evil();
    else if (!strcmp(scen, "stallrecv"))
        scen_stallrecv(3000000);
    else {
        fprintf(stderr, "unknown scenario %s\n", scen);
        return 2;
    }
    return 0;
}

int main(int argc, char **argv)
{
    char dir[] = "/tmp/oc-test-XXXXXX";
    int nranks, fails = 0;
    pid_t *pids;

    int first = 0, count;
    if (argc != 3 && argc != 5) {
        fprintf(stderr, "usage: %s SCENARIO NRANKS [FIRST COUNT]\n", argv[0]);
        return 2;
    }
    nranks = atoi(argv[2]);
    if (nranks < 1 || nranks > 64)
        return 2;
    count = nranks;
    if (argc == 5) {
        first = atoi(argv[3]);
        count = atoi(argv[4]);
        if (first < 0 || count < 1 || first + count > nranks)
            return 2;
    }
    if (mkdtemp(dir) == NULL)
        return 1;
    setenv("OC_BOOTSTRAP_DIR", dir, 1);
    setenv("OC_BOOTSTRAP_TIMEOUT_S", "30", 1);
    pids = calloc((size_t)nranks, sizeof(*pids));
    for (int r = first; r < first + count; r++) {
        pids[r] = fork();
        if (pids[r] == 0) {
            signal(SIGALRM, on_alarm);
            alarm(getenv("OC_TEST_SECONDS") ? 120 : 60);
            g_rank = (uint32_t)r;
            g_size = (uint32_t)nranks;
            _exit(run_rank(argv[1]));
        }
    }
    for (int r = first; r < first + count; r++) {
        int status;
        waitpid(pids[r], &status, 0);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            fprintf(stderr, "rank %d: %s %d\n", r,
                    WIFSIGNALED(status) ? "killed by signal" : "exit",
                    WIFSIGNALED(status) ? WTERMSIG(status)
                                        : WEXITSTATUS(status));
            fails++;
        }
    }
    free(pids);
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    if (system(cmd) != 0)
        fails++;
    printf("%s %s %d ranks\n", fails ? "FAIL" : "PASS", argv[1], nranks);
    return fails ? 1 : 0;
}
