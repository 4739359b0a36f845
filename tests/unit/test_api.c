/*
 * test_api.c — the installed API as an application sees it: built with
 * the public headers only (include/offcore/) and linked with the shared
 * liboffcore.  Checks that the status values an application can receive
 * keep their numbers, that the internal reject reasons are not in the
 * installed headers, and that oc_counters_get() honours the size of the
 * caller's struct (an older, shorter one; a newer, longer one; bad sizes).
 *
 * One rank, inline placement (OC_PLACEMENT=inline is set below), so it
 * needs no launcher and no agent.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <offcore/coll.h>
#include <offcore/offcore.h>

/* The numbers of the public values are part of the ABI. */
_Static_assert(OC_OK == 0 && OC_INPROGRESS == 1, "status numbers moved");
_Static_assert(OC_ERR_NO_RESOURCE == -1 && OC_ERR_TRANSPORT_REQUIRED == -12,
               "status numbers moved");
_Static_assert(OC_ERR_CTL_AUTH == -42 && OC_ERR_CTL_KEY == -43 &&
                   OC_ERR_CTL_TIMEOUT == -44 && OC_ERR_CTL_ADDR == -45 &&
                   OC_ERR_CTL_CONNECT == -46 && OC_ERR_CTL_DENIED == -47 &&
                   OC_ERR_CTL_VERSION == -48,
               "status numbers moved");
_Static_assert(OC_ERR_COLL_DTYPE == -60 && OC_ERR_COLL_MISMATCH == -66,
               "status numbers moved");
/* The reject reasons are internal (src/util/include/util/reject.h). */
#if defined(OC_ERR_WIRE_MAGIC) || defined(OC_ERR_CTL_TYPE) ||                 \
    defined(OC_ERR_CTL_VALUE)
#error "an internal reject reason is visible through the public headers"
#endif

/* Counters are only ever appended: every field keeps its offset. */
#define AT(field, i)                                                           \
    _Static_assert(offsetof(oc_counters_t, field) == (i) * 8,                  \
                   #field " moved: counters may only be appended")
AT(msgs_sent, 0);
AT(bundles_rejected, 7);
AT(flush_full, 8);
AT(quiesce_rounds, 15);
AT(conn_rdma, 16);
AT(conn_other, 19);

/* The counters struct as a program built against an older header saw it:
 * the first four counters. */
typedef struct {
    uint64_t msgs_sent, bytes_sent, bundles_sent, wire_bytes_sent;
} counters_v0_t;

static uint64_t n_got;

static oc_status_t on_msg(void *arg, uint32_t src, const void *msg, size_t len)
{
    (void)arg;
    (void)src;
    (void)msg;
    (void)len;
    n_got++;
    return OC_OK;
}

static int setup(void **state)
{
    oc_context_params_t p = {0};
    oc_context_t *ctx = NULL;

    setenv("OC_PLACEMENT", "inline", 1);
    p.field_mask = OC_PARAM_RANK | OC_PARAM_SIZE | OC_PARAM_HANDLER;
    p.rank = 0;
    p.size = 1;
    p.handler = on_msg;
    if (oc_init(&p, &ctx) != OC_OK)
        return -1;
    *state = ctx;
    return 0;
}

static int teardown(void **state)
{
    return oc_finalize(*state) == OC_OK ? 0 : -1;
}

/* Send @p n 8-byte messages to self and deliver them all. */
static void traffic(oc_context_t *ctx, uint64_t n)
{
    uint64_t want = n_got + n;

    for (uint64_t i = 0; i < n; i++) {
        oc_status_t st;
        while ((st = oc_send(ctx, 0, &i, sizeof(i))) == OC_ERR_NO_RESOURCE)
            assert_true(oc_poll(ctx) >= 0);
        assert_int_equal(st, OC_OK);
    }
    assert_int_equal(oc_quiesce(ctx), OC_OK);
    assert_int_equal(n_got, want);
}

/* oc_version(): the build's version, starting with the header's numbers */
static void test_version(void **state)
{
    char want[32];
    const char *v = oc_version();

    (void)state;
    assert_non_null(v);
    snprintf(want, sizeof(want), "%d.%d.", OC_VERSION_MAJOR, OC_VERSION_MINOR);
    assert_int_equal(strncmp(v, want, strlen(want)), 0);
    assert_ptr_equal(oc_version(), v); /* static */
}

static void test_counters_full(void **state)
{
    oc_context_t *ctx = *state;
    oc_counters_t a, b;

    assert_int_equal(oc_counters_get(ctx, &a, sizeof a), OC_OK);
    traffic(ctx, 100);
    assert_int_equal(oc_counters_get(ctx, &b, sizeof b), OC_OK);
    assert_int_equal(b.msgs_sent - a.msgs_sent, 100);
    assert_int_equal(b.bytes_sent - a.bytes_sent, 800);
    assert_int_equal(b.msgs_delivered - a.msgs_delivered, 100);
    assert_true(b.bundles_sent > a.bundles_sent);
}

static void test_counters_older_struct(void **state)
{
    oc_context_t *ctx = *state;
    struct {
        counters_v0_t c;
        uint64_t canary[4];
    } old;
    oc_counters_t full;

    traffic(ctx, 10);
    memset(&old, 0xa5, sizeof(old));
    assert_int_equal(oc_counters_get(ctx, (oc_counters_t *)&old.c,
                                     sizeof(old.c)), OC_OK);
    assert_int_equal(oc_counters_get(ctx, &full, sizeof full), OC_OK);
    assert_int_equal(old.c.msgs_sent, full.msgs_sent);
    assert_int_equal(old.c.bytes_sent, full.bytes_sent);
    assert_int_equal(old.c.bundles_sent, full.bundles_sent);
    assert_int_equal(old.c.wire_bytes_sent, full.wire_bytes_sent);
    assert_true(full.msgs_sent >= 10);
    /* nothing written past the caller's struct */
    for (int i = 0; i < 4; i++)
        assert_int_equal(old.canary[i], 0xa5a5a5a5a5a5a5a5ull);
}

static void test_counters_newer_struct(void **state)
{
    oc_context_t *ctx = *state;
    struct {
        oc_counters_t c;
        uint64_t later[3]; /* counters a newer header would have */
        uint64_t canary;
    } big;
    oc_counters_t full;

    traffic(ctx, 10);
    memset(&big, 0xa5, sizeof(big));
    assert_int_equal(oc_counters_get(ctx, (oc_counters_t *)&big,
                                     offsetof(__typeof__(big), canary)),
                     OC_OK);
    assert_int_equal(oc_counters_get(ctx, &full, sizeof full), OC_OK);
    assert_memory_equal(&big.c, &full, sizeof full);
    for (int i = 0; i < 3; i++)
        assert_int_equal(big.later[i], 0); /* unknown here: 0 */
    assert_int_equal(big.canary, 0xa5a5a5a5a5a5a5a5ull);
}

static void test_counters_bad_args(void **state)
{
    oc_context_t *ctx = *state;
    oc_counters_t c;
    const size_t bad[] = {0, 1, 7, 12, sizeof(c) - 4};

    memset(&c, 0xa5, sizeof(c));
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(oc_counters_get(ctx, &c, bad[i]),
                         OC_ERR_INVALID_PARAM);
    for (size_t i = 0; i < sizeof(c); i++)
        assert_int_equal(((unsigned char *)&c)[i], 0xa5); /* untouched */
    assert_int_equal(oc_counters_get(NULL, &c, sizeof c), OC_ERR_INVALID_PARAM);
    assert_int_equal(oc_counters_get(ctx, NULL, sizeof c), OC_ERR_INVALID_PARAM);
    /* one counter is a valid (very old) struct */
    assert_int_equal(oc_counters_get(ctx, &c, 8), OC_OK);
}

/* The public calls' documented answers to a wrong call on one context. */
static void test_documented_errors(void **state)
{
    oc_context_t *ctx = *state;
    oc_context_t *none = (oc_context_t *)0x1;
    uint64_t v = 0;

    assert_int_equal(oc_send(ctx, 1, &v, 8), OC_ERR_RANK_RANGE);
    assert_int_equal(oc_send(ctx, 0, &v, oc_max_message(ctx) + 1),
                     OC_ERR_MSG_TOO_LONG);
    assert_int_equal(oc_quiesce_test(ctx), OC_ERR_STATE); /* none started */
    assert_int_equal(oc_quiesce_start(ctx), OC_OK);
    assert_int_equal(oc_quiesce_start(ctx), OC_ERR_STATE); /* one runs */
    oc_status_t st;
    while ((st = oc_quiesce_test(ctx)) == OC_INPROGRESS)
        ;
    assert_int_equal(st, OC_OK);
    assert_int_equal(oc_flush(ctx), OC_OK);
    assert_int_equal(oc_init(NULL, &none), OC_ERR_INVALID_PARAM);
    assert_ptr_equal(none, (oc_context_t *)0x1); /* untouched on error */
    assert_int_equal(oc_finalize(NULL), OC_OK);
    assert_string_equal(oc_placement(ctx), "inline");
    assert_int_equal(oc_rank(ctx), 0);
    assert_int_equal(oc_size(ctx), 1);
}

static oc_status_t failing_allgather(void *arg, const void *sendbuf,
                                     void *recvbuf, size_t len)
{
    (void)arg;
    (void)sendbuf;
    (void)recvbuf;
    (void)len;
    return OC_ERR_UNSUPPORTED; /* any status the application chooses */
}

/* oc_init() with @p p (rank 0 of @p size unless fields are cleared);
 * checks the status and that *ctx_p is untouched. */
static void init_fails(oc_context_params_t *p, oc_status_t want)
{
    oc_context_t *ctx = (oc_context_t *)0x1;
    oc_status_t st = oc_init(p, &ctx);

    if (st == OC_OK)
        oc_finalize(ctx);
    if (st != want)
        fail_msg("oc_init: got %s, want %s", oc_status_string(st),
                 oc_status_string(want));
    assert_ptr_equal(ctx, (oc_context_t *)0x1);
}

/* The errors oc_init's comment lists that one process can provoke. */
static void test_init_errors(void **state)
{
    oc_context_params_t p = {0};
    char dir[] = "/tmp/oc-test-api-XXXXXX", path[64];
    struct sockaddr_un sun = {.sun_family = AF_UNIX};
    int fd;

    (void)state;
    unsetenv("OC_JOB_KEY");
    unsetenv("OC_BOOTSTRAP_DIR");
    p.field_mask = OC_PARAM_RANK | OC_PARAM_SIZE | OC_PARAM_HANDLER;
    p.rank = 0;
    p.size = 1;
    p.handler = on_msg;

    init_fails(NULL, OC_ERR_INVALID_PARAM);
    p.field_mask &= ~(uint64_t)OC_PARAM_HANDLER;
    init_fails(&p, OC_ERR_INVALID_PARAM); /* no handler */
    p.field_mask |= OC_PARAM_HANDLER;
    p.rank = 1;
    init_fails(&p, OC_ERR_INVALID_PARAM); /* rank not below size */
    p.rank = 0;

    setenv("OC_BUNDLE_SIZE", "12", 1);
    init_fails(&p, OC_ERR_CONFIG);
    unsetenv("OC_BUNDLE_SIZE");

    p.field_mask &= ~(uint64_t)(OC_PARAM_RANK | OC_PARAM_SIZE);
    unsetenv("OC_RANK");
    unsetenv("OC_SIZE");
    init_fails(&p, OC_ERR_BOOTSTRAP); /* rank and size given nowhere */
    setenv("OC_RANK", "zero", 1);
    setenv("OC_SIZE", "1", 1);
    init_fails(&p, OC_ERR_CONFIG);
    unsetenv("OC_RANK");
    unsetenv("OC_SIZE");
    p.field_mask |= OC_PARAM_RANK | OC_PARAM_SIZE;

    p.size = 2; /* inline, two ranks, no way to exchange addresses */
    init_fails(&p, OC_ERR_BOOTSTRAP);
    p.field_mask |= OC_PARAM_ALLGATHER;
    p.allgather = failing_allgather;
    init_fails(&p, OC_ERR_UNSUPPORTED); /* the allgather's, passed on */
    p.field_mask &= ~(uint64_t)OC_PARAM_ALLGATHER;
    p.size = 1;

    /* agent placement required: the reasons it cannot be had */
    setenv("OC_PLACEMENT", "agent", 1);
    setenv("OC_AGENT", "no address", 1);
    init_fails(&p, OC_ERR_CTL_ADDR);
    setenv("OC_AGENT", "unix:/nonexistent/offcore-test/agent.sock", 1);
    init_fails(&p, OC_ERR_CTL_CONNECT);
    /* something listens there, but the job has no key */
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/agent.sock", dir);
    snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", path);
    fd = socket(AF_UNIX, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    assert_int_equal(bind(fd, (struct sockaddr *)&sun, sizeof(sun)), 0);
    assert_int_equal(listen(fd, 8), 0);
    char agent[80];
    snprintf(agent, sizeof(agent), "unix:%s", path);
    setenv("OC_AGENT", agent, 1);
    init_fails(&p, OC_ERR_CTL_KEY);
    setenv("OC_JOB_KEY", "not hex", 1);
    init_fails(&p, OC_ERR_CTL_KEY);
    unsetenv("OC_JOB_KEY");
    close(fd);
    unlink(path);
    rmdir(dir);
    setenv("OC_PLACEMENT", "inline", 1);
    unsetenv("OC_AGENT");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_version),
        cmocka_unit_test(test_counters_full),
        cmocka_unit_test(test_counters_older_struct),
        cmocka_unit_test(test_counters_newer_struct),
        cmocka_unit_test(test_counters_bad_args),
        cmocka_unit_test(test_documented_errors),
        cmocka_unit_test(test_init_errors),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
