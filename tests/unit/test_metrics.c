/*
 * test_metrics.c — unit tests of src/metrics and `offcore stat`: the
 * Prometheus text writer (byte-exact output, escaping, every rejection),
 * the parser (round trip, tolerance, rejections, random and mutated input),
 * the /metrics HTTP server on loopback (body, content type, 404, 405, 500,
 * bad and busy addresses), and `offcore stat` against that server, both
 * in-process and as the real binary (path in argv[1]).
 *
 * `test_metrics --promtool` instead runs Prometheus's own checker,
 * `promtool check metrics`, on the server's answer: exit 77 (skip) when
 * promtool is not installed (Debian package prometheus).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "metrics/metrics.h"
#include "tools/stat.h"
#include "metrics/names.h"
#include "util/version.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <math.h>
#include <netinet/in.h>
#include <pthread.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static const char *offcore_bin; /* argv[1]: the offcore CLI */

/* ----------------------------------------------------------------- writer */

static const char expected_text[] =
    "# HELP offcore_job_messages_total Messages \"routed\".\\nIn \\\\ out.\n"
    "# TYPE offcore_job_messages_total counter\n"
    "offcore_job_messages_total{job=\"7\",dir=\"in\"} 18446744073709551615\n"
    "offcore_job_messages_total{job=\"a\\\\b\\\"c\\nd\",dir=\"out\"} 0\n"
    "# HELP offcore_agent_uptime_seconds Seconds since start.\n"
    "# TYPE offcore_agent_uptime_seconds gauge\n"
    "offcore_agent_uptime_seconds 12.5\n"
    "# TYPE x_ratio gauge\n"
    "x_ratio{k=\"nan\"} NaN\n"
    "x_ratio{k=\"pinf\"} +Inf\n"
    "x_ratio{k=\"ninf\"} -Inf\n"
    "x_ratio{k=\"tenth\"} 0.1\n"
    "x_ratio{k=\"third\"} 0.33333333333333331\n"
    "x_ratio{k=\"big\"} 1e+300\n"
    "x_ratio{k=\"\xc3\xa9t\xc3\xa9\"} -2\n"
    "# HELP lat_seconds Latency.\n"
    "# TYPE lat_seconds histogram\n"
    "lat_seconds_bucket{le=\"+Inf\"} 3\n"
    "lat_seconds_sum 0.75\n"
    "lat_seconds_count 3\n";

static void write_registry(oc_prom_t *p)
{
    assert_int_equal(oc__prom_family(p, "offcore_job_messages_total",
                                    "Messages \"routed\".\nIn \\ out.",
                                    OC_PROM_COUNTER),
                     OC_OK);
    assert_int_equal(oc__prom_sample(p, "offcore_job_messages_total",
                                    OC_PROM_LABELS({"job", "7"}, {"dir", "in"}),
                                    UINT64_MAX),
                     OC_OK);
    /* a repeated family call for the current family is a no-op */
    assert_int_equal(
        oc__prom_family(p, "offcore_job_messages_total", "x", OC_PROM_COUNTER),
        OC_OK);
    assert_int_equal(
        oc__prom_sample(p, "offcore_job_messages_total",
                       OC_PROM_LABELS({"job", "a\\b\"c\nd"}, {"dir", "out"}),
                       0),
        OC_OK);
    assert_int_equal(oc__prom_family(p, "offcore_agent_uptime_seconds",
                                    "Seconds since start.", OC_PROM_GAUGE),
                     OC_OK);
    assert_int_equal(
        oc__prom_sample_f64(p, "offcore_agent_uptime_seconds", NULL, 0, 12.5),
        OC_OK);
    assert_int_equal(oc__prom_family(p, "x_ratio", NULL, OC_PROM_GAUGE), OC_OK);
    oc__prom_sample_f64(p, "x_ratio", OC_PROM_LABELS({"k", "nan"}), NAN);
    oc__prom_sample_f64(p, "x_ratio", OC_PROM_LABELS({"k", "pinf"}), INFINITY);
    oc__prom_sample_f64(p, "x_ratio", OC_PROM_LABELS({"k", "ninf"}), -INFINITY);
    oc__prom_sample_f64(p, "x_ratio", OC_PROM_LABELS({"k", "tenth"}), 0.1);
    oc__prom_sample_f64(p, "x_ratio", OC_PROM_LABELS({"k", "third"}), 1.0 / 3);
    oc__prom_sample_f64(p, "x_ratio", OC_PROM_LABELS({"k", "big"}), 1e300);
    oc__prom_sample_f64(p, "x_ratio", OC_PROM_LABELS({"k", "\xc3\xa9t\xc3\xa9"}),
                       -2);
    assert_int_equal(
        oc__prom_family(p, "lat_seconds", "Latency.", OC_PROM_HISTOGRAM), OC_OK);
    oc__prom_sample(p, "lat_seconds_bucket", OC_PROM_LABELS({"le", "+Inf"}), 3);
    oc__prom_sample_f64(p, "lat_seconds_sum", NULL, 0, 0.75);
    oc__prom_sample(p, "lat_seconds_count", NULL, 0, 3);
    assert_int_equal(oc__prom_status(p), OC_OK);
}

static void test_writer_exact(void **state)
{
    oc_prom_buf_t b = {0};
    oc_prom_t p;

    oc__prom_init(&p, &b);
    write_registry(&p);
    assert_string_equal(b.data, expected_text);
    assert_int_equal(b.len, strlen(expected_text));
    oc__prom_buf_free(&b);
    assert_null(b.data);
    oc__prom_buf_free(NULL);

    /* appending after existing content keeps it */
    b.data = strdup("# preamble\n");
    b.len = strlen(b.data);
    b.cap = b.len + 1;
    oc__prom_init(&p, &b);
    write_registry(&p);
    assert_int_equal(strncmp(b.data, "# preamble\n", 11), 0);
    assert_string_equal(b.data + 11, expected_text);
    oc__prom_buf_free(&b);
}

/* oc__prom_histogram(): cumulative buckets with the series' labels and le,
 * +Inf, _sum and _count, exactly; too many labels refused (sticky) */
static void test_writer_histogram(void **state)
{
    static const double le[3] = {0.001, 0.5, 2};
    static const uint64_t counts[4] = {1, 0, 3, 2};
    oc_prom_buf_t b = {0};
    oc_prom_t p;
    oc_prom_label_t many[OC_PROM_HIST_LABELS_MAX + 1];
    (void)state;

    oc__prom_init(&p, &b);
    assert_int_equal(oc__prom_family(&p, "d_seconds", "D.", OC_PROM_HISTOGRAM),
                     OC_OK);
    assert_int_equal(oc__prom_histogram(&p, "d_seconds",
                                       OC_PROM_LABELS({"tenant", "A"}), le, 3,
                                       counts, 7.25), OC_OK);
    assert_int_equal(oc__prom_histogram(&p, "d_seconds", NULL, 0, NULL, 0,
                                       NULL, 0), OC_OK);
    assert_string_equal(b.data,
        "# HELP d_seconds D.\n"
        "# TYPE d_seconds histogram\n"
        "d_seconds_bucket{tenant=\"A\",le=\"0.001\"} 1\n"
        "d_seconds_bucket{tenant=\"A\",le=\"0.5\"} 1\n"
        "d_seconds_bucket{tenant=\"A\",le=\"2\"} 4\n"
        "d_seconds_bucket{tenant=\"A\",le=\"+Inf\"} 6\n"
        "d_seconds_sum{tenant=\"A\"} 7.25\n"
        "d_seconds_count{tenant=\"A\"} 6\n"
        "d_seconds_bucket{le=\"+Inf\"} 0\n"
        "d_seconds_sum 0\n"
        "d_seconds_count 0\n");
    for (size_t i = 0; i < OC_PROM_HIST_LABELS_MAX + 1; i++)
        many[i] = (oc_prom_label_t){"x", "y"};
    assert_int_equal(oc__prom_histogram(&p, "d_seconds", many,
                                       OC_PROM_HIST_LABELS_MAX + 1, le, 3,
                                       counts, 1), OC_ERR_INVALID_PARAM);
    assert_int_equal(oc__prom_status(&p), OC_ERR_INVALID_PARAM);
    oc__prom_buf_free(&b);
}

/* Run @p step on a fresh writer that already holds one good family and
 * sample; it must fail with @p want, be sticky, and leave only whole
 * lines. */
#define EXPECT_FAIL(want, step) EXPECT_FAIL_AFTER(want, OC_OK, step)
#define EXPECT_FAIL_AFTER(want, pre, step)                                     \
    do {                                                                       \
        oc_prom_buf_t b_ = {0};                                                \
        oc_prom_t p_, *p = &p_;                                                \
        oc__prom_init(p, &b_);                                                  \
        assert_int_equal(                                                      \
            oc__prom_family(p, "good_total", "h", OC_PROM_COUNTER), OC_OK);     \
        assert_int_equal(oc__prom_sample(p, "good_total", NULL, 0, 1), OC_OK);  \
        assert_int_equal((pre), OC_OK);                                        \
        size_t len_ = b_.len;                                                  \
        assert_int_equal((step), (want));                                      \
        assert_int_equal(oc__prom_status(p), (want));                           \
        assert_int_equal(b_.len, len_);                                        \
        assert_int_equal(oc__prom_family(p, "later", NULL, OC_PROM_GAUGE),      \
                         (want));                                              \
        assert_int_equal(oc__prom_sample(p, "good_total", NULL, 0, 2), (want)); \
        assert_int_equal(b_.len, len_);                                        \
        assert_int_equal(b_.data[b_.len - 1], '\n');                           \
        oc__prom_buf_free(&b_);                                                 \
    } while (0)

/* A label value can be a peer's (an NVMe host's NQN): its control bytes
 * and bytes that are not UTF-8 are written as the text \xNN — never raw,
 * and never a failed scrape (the writer refused such a value, and with it
 * the whole page) — while UTF-8 text passes. */
static void test_writer_escapes(void **state)
{
    oc_prom_buf_t b = {0};
    oc_prom_t p;

    (void)state;
    oc__prom_init(&p, &b);
    assert_int_equal(oc__prom_family(&p, "q", NULL, OC_PROM_GAUGE), OC_OK);
    assert_int_equal(
        oc__prom_sample(&p, "q",
                       OC_PROM_LABELS({"host", "nqn.\x1b]0;t\a\xff\xc2\x9b"
                                               "\xc0\xaf\xc3"}), 1),
        OC_OK);
    assert_int_equal(oc__prom_sample(&p, "q",
                                    OC_PROM_LABELS({"host", "\xc3\xa9t\xc3\xa9"}),
                                    2),
                     OC_OK);
    assert_string_equal(b.data,
                        "# TYPE q gauge\n"
                        "q{host=\"nqn.\\\\x1b]0;t\\\\x07\\\\xff\\\\xc2\\\\x9b"
                        "\\\\xc0\\\\xaf\\\\xc3\"} 1\n"
                        "q{host=\"\xc3\xa9t\xc3\xa9\"} 2\n");
    oc__prom_buf_free(&b);
}

static void test_writer_errors(void **state)
{
    const oc_status_t inval = OC_ERR_INVALID_PARAM, st = OC_ERR_STATE;

    EXPECT_FAIL(inval, oc__prom_family(p, "1abc", NULL, OC_PROM_GAUGE));
    EXPECT_FAIL(inval, oc__prom_family(p, "a-b", NULL, OC_PROM_GAUGE));
    EXPECT_FAIL(inval, oc__prom_family(p, "", NULL, OC_PROM_GAUGE));
    EXPECT_FAIL(inval, oc__prom_family(p, NULL, NULL, OC_PROM_GAUGE));
    EXPECT_FAIL(inval, oc__prom_family(p, "ok", "\xff", OC_PROM_GAUGE));
    EXPECT_FAIL(inval, oc__prom_family(p, "ok", NULL, (oc_prom_type_t)9));
    EXPECT_FAIL(inval, oc__prom_sample(p, "good_total",
                                      OC_PROM_LABELS({"__x", "1"}), 1));
    EXPECT_FAIL(
        inval, oc__prom_sample(p, "good_total", OC_PROM_LABELS({"1a", "1"}), 1));
    EXPECT_FAIL(inval, oc__prom_sample(p, "good_total",
                                      OC_PROM_LABELS({"a:b", "1"}), 1));
    EXPECT_FAIL(inval,
                oc__prom_sample(p, "good_total", OC_PROM_LABELS({"", "1"}), 1));
    EXPECT_FAIL(
        inval, oc__prom_sample(p, "good_total", OC_PROM_LABELS({NULL, "1"}), 1));
    EXPECT_FAIL(inval,
                oc__prom_sample(p, "good_total",
                               OC_PROM_LABELS({"a", "1"}, {"a", "2"}), 1));
    EXPECT_FAIL(
        inval, oc__prom_sample(p, "good_total", OC_PROM_LABELS({"a", NULL}), 1));
    EXPECT_FAIL(inval, oc__prom_sample(p, "good_total", NULL, 1, 1));
    EXPECT_FAIL(inval, oc__prom_sample(p, "bad name", NULL, 0, 1));
    /* grouping: samples belong to the current family, families once */
    EXPECT_FAIL(st, oc__prom_sample(p, "other_total", NULL, 0, 1));
    EXPECT_FAIL(st, oc__prom_sample(p, "good_total_bucket", NULL, 0, 1));
    EXPECT_FAIL_AFTER(st, oc__prom_family(p, "g", NULL, OC_PROM_GAUGE),
                      oc__prom_family(p, "good_total", NULL, OC_PROM_COUNTER));
    EXPECT_FAIL_AFTER(st, oc__prom_family(p, "h", NULL, OC_PROM_HISTOGRAM),
                      oc__prom_sample(p, "h", NULL, 0, 1));

    /* a sample before any family */
    oc_prom_buf_t b = {0};
    oc_prom_t p;
    oc__prom_init(&p, &b);
    assert_int_equal(oc__prom_sample(&p, "x", NULL, 0, 1), OC_ERR_STATE);
    assert_int_equal(b.len, 0);
    oc__prom_buf_free(&b);

    /* long names: OC_PROM_NAME_MAX is accepted, one more is not */
    char name[OC_PROM_NAME_MAX + 2];
    memset(name, 'n', sizeof(name) - 1);
    name[OC_PROM_NAME_MAX + 1] = '\0';
    oc__prom_init(&p, &b);
    assert_int_equal(oc__prom_family(&p, name, NULL, OC_PROM_GAUGE),
                     OC_ERR_INVALID_PARAM);
    oc__prom_buf_free(&b);
    name[OC_PROM_NAME_MAX] = '\0';
    oc__prom_init(&p, &b);
    assert_int_equal(oc__prom_family(&p, name, NULL, OC_PROM_GAUGE), OC_OK);
    assert_int_equal(oc__prom_sample(&p, name, OC_PROM_LABELS({"le", ""}), 1),
                     OC_OK);
    oc__prom_buf_free(&b);

    assert_string_equal(oc__prom_type_name(OC_PROM_SUMMARY), "summary");
    assert_string_equal(oc__prom_type_name((oc_prom_type_t)42), "untyped");
}

/* ----------------------------------------------------------------- parser */

typedef struct {
    char name[OC_PROM_NAME_MAX + 1];
    size_t nlabels;
    char lname[4][32], lvalue[4][64];
    double value;
    uint64_t u64;
    int is_u64, has_ts;
    int64_t ts;
    oc_prom_type_t type;
    char help[64];
    int has_help;
} got_t;

typedef struct {
    got_t v[64];
    size_t n;
    size_t calls;
} gots_t;

static oc_status_t keep(void *arg, const oc_prom_sample_t *s)
{
    gots_t *g = arg;

    g->calls++;
    if (g->n == 64)
        return OC_OK;
    got_t *o = &g->v[g->n++];
    memset(o, 0, sizeof(*o));
    snprintf(o->name, sizeof(o->name), "%s", s->name);
    o->nlabels = s->nlabels;
    for (size_t i = 0; i < s->nlabels && i < 4; i++) {
        snprintf(o->lname[i], sizeof(o->lname[i]), "%s", s->labels[i].name);
        snprintf(o->lvalue[i], sizeof(o->lvalue[i]), "%s", s->labels[i].value);
    }
    o->value = s->value;
    o->u64 = s->u64;
    o->is_u64 = s->is_u64;
    o->has_ts = s->has_timestamp;
    o->ts = s->timestamp_ms;
    o->type = s->type;
    o->has_help = s->help != NULL;
    if (s->help)
        snprintf(o->help, sizeof(o->help), "%s", s->help);
    return OC_OK;
}

/* Parse from an exactly-sized heap copy, so that ASan sees any read past
 * the end. */
static oc_status_t parse_copy(const char *text, size_t len, gots_t *g,
                              oc_prom_error_t *err)
{
    char *copy = malloc(len ? len : 1);
    oc_status_t st;

    assert_non_null(copy);
    memcpy(copy, text, len);
    memset(g, 0, sizeof(*g));
    st = oc__prom_parse(copy, len, keep, g, err);
    free(copy);
    return st;
}

static void test_parse_roundtrip(void **state)
{
    gots_t g;
    oc_prom_error_t err;

    assert_int_equal(parse_copy(expected_text, strlen(expected_text), &g, &err),
                     OC_OK);
    assert_int_equal(g.n, 13);
    got_t *s = &g.v[0];
    assert_string_equal(s->name, "offcore_job_messages_total");
    assert_int_equal(s->type, OC_PROM_COUNTER);
    assert_true(s->has_help);
    assert_string_equal(s->help, "Messages \"routed\".\nIn \\ out.");
    assert_int_equal(s->nlabels, 2);
    assert_string_equal(s->lname[0], "job");
    assert_string_equal(s->lvalue[0], "7");
    assert_string_equal(s->lname[1], "dir");
    assert_string_equal(s->lvalue[1], "in");
    assert_true(s->is_u64);
    assert_true(s->u64 == UINT64_MAX);
    s = &g.v[1];
    assert_string_equal(s->lvalue[0], "a\\b\"c\nd");
    assert_true(s->is_u64 && s->u64 == 0);
    s = &g.v[2];
    assert_string_equal(s->name, "offcore_agent_uptime_seconds");
    assert_int_equal(s->type, OC_PROM_GAUGE);
    assert_false(s->is_u64);
    assert_true(s->value == 12.5);
    assert_true(isnan(g.v[3].value));
    assert_true(isinf(g.v[4].value) && g.v[4].value > 0);
    assert_true(isinf(g.v[5].value) && g.v[5].value < 0);
    assert_true(g.v[6].value == 0.1);
    assert_true(g.v[7].value == 1.0 / 3);
    assert_true(g.v[8].value == 1e300);
    assert_int_equal(g.v[3].type, OC_PROM_GAUGE);
    assert_false(g.v[3].has_help);
    assert_string_equal(g.v[9].lvalue[0], "\xc3\xa9t\xc3\xa9");
    assert_true(g.v[9].value == -2 && !g.v[9].is_u64);
    for (int i = 10; i < 13; i++) {
        assert_int_equal(g.v[i].type, OC_PROM_HISTOGRAM);
        assert_string_equal(g.v[i].help, "Latency.");
    }
    assert_string_equal(g.v[10].name, "lat_seconds_bucket");
    assert_string_equal(g.v[10].lvalue[0], "+Inf");
    assert_true(g.v[11].value == 0.75);
    assert_int_equal(g.v[12].u64, 3);

    /* and what the parser read, written again, is the same text */
    oc_prom_buf_t b = {0};
    oc_prom_t p;
    oc__prom_init(&p, &b);
    for (size_t i = 0; i < g.n; i++) {
        oc_prom_label_t l[4];
        for (size_t j = 0; j < g.v[i].nlabels; j++) {
            l[j].name = g.v[i].lname[j];
            l[j].value = g.v[i].lvalue[j];
        }
        if (i == 0 || i == 2 || i == 3 || i == 10) {
            static const char *fam[] = {"offcore_job_messages_total", NULL,
                                        "offcore_agent_uptime_seconds",
                                        "x_ratio"};
            const char *f = i == 10 ? "lat_seconds" : fam[i];
            oc__prom_family(&p, f, g.v[i].has_help ? g.v[i].help : NULL,
                           g.v[i].type);
        }
        if (g.v[i].is_u64)
            oc__prom_sample(&p, g.v[i].name, l, g.v[i].nlabels, g.v[i].u64);
        else
            oc__prom_sample_f64(&p, g.v[i].name, l, g.v[i].nlabels,
                               g.v[i].value);
    }
    assert_int_equal(oc__prom_status(&p), OC_OK);
    assert_string_equal(b.data, expected_text);
    oc__prom_buf_free(&b);
}

static void test_parse_tolerant(void **state)
{
    static const char text[] = "\n"
                               "   \t \n"
                               "# a comment\n"
                               "#\n"
                               "# HELP\n"
                               "#HELP not a help line\n"
                               "  # TYPE a_total COUNTER\n"
                               "a_total 1\n"
                               "b{x=\"1\",} 2\n"
                               "c {x=\"1\"} 3\n"
                               "d{ x = \"1\" , y=\"\" }  4  -1700000000000\n"
                               "e\t5\t123\n"
                               "f{} NaN\n"
                               "g -1.5e-3\n"
                               "h 18446744073709551616\n"
                               "i 007\n"
                               "j .5\n"
                               "k 5.\n"
                               "l{le=\"0.1\"} +Inf\n"
                               "# HELP m   spaced help\n"
                               "m -inf"; /* no final newline */
    gots_t g;
    oc_prom_error_t err;

    assert_int_equal(parse_copy(text, strlen(text), &g, &err), OC_OK);
    assert_int_equal(g.n, 13);
    assert_string_equal(g.v[0].name, "a_total");
    assert_int_equal(g.v[0].type, OC_PROM_COUNTER);
    assert_int_equal(g.v[0].u64, 1);
    assert_int_equal(g.v[1].nlabels, 1);
    assert_int_equal(g.v[1].type, OC_PROM_UNTYPED);
    assert_int_equal(g.v[2].u64, 3);
    assert_int_equal(g.v[3].nlabels, 2);
    assert_string_equal(g.v[3].lname[1], "y");
    assert_string_equal(g.v[3].lvalue[1], "");
    assert_true(g.v[3].has_ts);
    assert_true(g.v[3].ts == -1700000000000LL);
    assert_true(g.v[4].has_ts && g.v[4].ts == 123 && g.v[4].u64 == 5);
    assert_false(g.v[3].has_ts && g.v[0].has_ts);
    assert_true(isnan(g.v[5].value));
    assert_true(g.v[6].value == -1.5e-3);
    assert_false(g.v[7].is_u64); /* 2^64 does not fit */
    assert_true(g.v[7].value == 18446744073709551616.0);
    assert_true(g.v[8].is_u64 && g.v[8].u64 == 7);
    assert_true(g.v[9].value == 0.5);
    assert_true(g.v[10].value == 5);
    assert_true(isinf(g.v[11].value));
    assert_string_equal(g.v[12].help, "spaced help");
    assert_true(isinf(g.v[12].value) && g.v[12].value < 0);

    /* empty input, and NULL with length 0 */
    assert_int_equal(parse_copy("", 0, &g, &err), OC_OK);
    assert_int_equal(g.n, 0);
    assert_int_equal(oc__prom_parse(NULL, 0, keep, &g, NULL), OC_OK);
    assert_int_equal(oc__prom_parse(NULL, 1, keep, &g, NULL),
                     OC_ERR_INVALID_PARAM);
    /* validate only */
    assert_int_equal(oc__prom_parse(text, strlen(text), NULL, NULL, NULL),
                     OC_OK);
}

static oc_status_t stop_at_two(void *arg, const oc_prom_sample_t *s)
{
    return ++*(int *)arg == 2 ? OC_ERR_STATE : OC_OK;
}

static void test_parse_rejects(void **state)
{
    static const struct {
        const char *text;
        unsigned line;
    } bad[] = {
        {"x{a=\"b\" 1\n", 1},
        {"x{a=\"b} 1\n", 1},
        {"x{a=\"\\q\"} 1\n", 1},
        {"x{a=\"b\\\"} 1\n", 1},
        {"x{a=\"b\",a=\"c\"} 1\n", 1},
        {"x{1a=\"b\"} 1\n", 1},
        {"x{a\"b\"} 1\n", 1},
        {"x{a=b} 1\n", 1},
        {"x{,} 1\n", 1},
        {"x{a=\"b\"}} 1\n", 1},
        {"x{a=\"\xff\"} 1\n", 1},
        {"x{a=\"\xed\xa0\x80\"} 1\n", 1}, /* a UTF-16 surrogate */
        {"x{a=\"\xe2\x82\"} 1\n", 1},     /* truncated sequence */
        {"1x 1\n", 1},
        {"x-y 1\n", 1},
        {"  {a=\"b\"} 1\n", 1},
        {"x\n", 1},
        {"x{}\n", 1},
        {"x abc\n", 1},
        {"x 0x10\n", 1},
        {"x 1e\n", 1},
        {"x 1e400\n", 1},
        {"x +nan\n", 1},
        {"x 1_000\n", 1},
        {"x 1 2 3\n", 1},
        {"x 1 1.5\n", 1},
        {"x 1 9223372036854775808\n", 1},
        {"x 1\r\n", 1},
        {"ok 1\n# TYPE x foo\n", 2},
        {"# TYPE x counter extra\n", 1},
        {"# TYPE x\n", 1},
        {"# TYPE 1x counter\n", 1},
        {"# TYPE x counter\n# TYPE x gauge\n", 2},
        {"x 1\n# TYPE x counter\n", 2},
        {"# HELP x a\n# HELP x b\n", 2},
        {"# HELP x bad \\q escape\n", 1},
        {"# HELP x \xc3\n", 1},
        {"ok 1\n\nok{a=\"\n", 3},
    };
    gots_t g;
    oc_prom_error_t err;

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        memset(&err, 0, sizeof(err));
        oc_status_t st = parse_copy(bad[i].text, strlen(bad[i].text), &g, &err);
        if (st != OC_ERR_INVALID_PARAM)
            fail_msg("accepted: \"%s\"", bad[i].text);
        if (g.calls != 0)
            fail_msg("delivered a sample of a bad text: \"%s\"", bad[i].text);
        if (err.line != bad[i].line || err.column == 0 || !err.msg[0])
            fail_msg("\"%s\": line %u column %u \"%s\"", bad[i].text, err.line,
                     err.column, err.msg);
    }

    /* a NUL byte, and too many labels */
    static const char nul[] = "x 1\n\0y 2\n";
    assert_int_equal(parse_copy(nul, sizeof(nul) - 1, &g, &err),
                     OC_ERR_INVALID_PARAM);
    assert_int_equal(err.line, 2);
    char many[OC_PROM_MAX_LABELS * 16 + 16], *o = many;
    o += sprintf(o, "x{");
    for (int i = 0; i <= OC_PROM_MAX_LABELS; i++)
        o += sprintf(o, "l%d=\"v\",", i);
    sprintf(o, "} 1\n");
    assert_int_equal(parse_copy(many, strlen(many), &g, &err),
                     OC_ERR_INVALID_PARAM);
    assert_string_equal(err.msg, "too many labels");

    /* the callback's status stops the parse and comes back */
    int calls = 0;
    assert_int_equal(oc__prom_parse(expected_text, strlen(expected_text),
                                   stop_at_two, &calls, NULL),
                     OC_ERR_STATE);
    assert_int_equal(calls, 2);
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
    /* xorshift64*: deterministic, so a failure reproduces */
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545f4914f6cdd1dull;
}

static oc_status_t count_only(void *arg, const oc_prom_sample_t *s)
{
    (*(size_t *)arg)++;
    /* touch every string the parser hands over */
    size_t n = strlen(s->name) + (s->help ? strlen(s->help) : 0);
    for (size_t i = 0; i < s->nlabels; i++)
        n += strlen(s->labels[i].name) + strlen(s->labels[i].value);
    return n > 0 ? OC_OK : OC_ERR_STATE;
}

static void parse_garbage(const char *buf, size_t len)
{
    char *copy = malloc(len ? len : 1);
    size_t calls = 0;
    oc_prom_error_t err;
    oc_status_t st;

    assert_non_null(copy);
    memcpy(copy, buf, len);
    st = oc__prom_parse(copy, len, count_only, &calls, &err);
    free(copy);
    if (st == OC_ERR_INVALID_PARAM)
        assert_int_equal(calls, 0);
    else
        assert_int_equal(st, OC_OK);
}

static void test_parse_random(void **state)
{
    static const char alphabet[] = "xa_:{}=\",\\ \t\n#01.eE+-INnfHELPTYE";
    char buf[512];
    size_t text_len = strlen(expected_text);

    for (int it = 0; it < 4000; it++) {
        size_t len = rnd() % sizeof(buf);
        int mode = it % 3;
        for (size_t i = 0; i < len; i++) {
            uint64_t r = rnd();
            buf[i] = mode == 0 ? (char)r : alphabet[r % (sizeof(alphabet) - 1)];
        }
        if (mode == 2 && len > 0) /* make sample-looking lines likelier */
            buf[0] = 'x';
        parse_garbage(buf, len);
    }
    /* mutations of a valid text: flip, insert, delete, truncate */
    char *m = malloc(text_len + 64);
    assert_non_null(m);
    for (int it = 0; it < 4000; it++) {
        size_t len = text_len;
        memcpy(m, expected_text, len);
        for (int k = 1 + (int)(rnd() % 4); k > 0; k--) {
            size_t at = rnd() % len;
            switch (rnd() % 4) {
            case 0:
                m[at] = (char)rnd();
                break;
            case 1:
                m[at] = alphabet[rnd() % (sizeof(alphabet) - 1)];
                break;
            case 2:
                memmove(m + at, m + at + 1, len - at - 1);
                len--;
                break;
            default:
                len = at + 1;
            }
            if (len == 0)
                break;
        }
        parse_garbage(m, len);
    }
    free(m);
}

/* ------------------------------------------------------------- the agent */

/* A stand-in for offcored's fill: counters that a test "routing thread"
 * bumps, read with relaxed atomic loads as the real agent does. */
typedef struct {
    _Atomic uint64_t msgs; /* job 7, in */
    _Atomic uint64_t scrapes;
    _Atomic int stop; /* ends bump() */
    oc_status_t fail; /* returned by fill */
    int bad_name;
} fake_agent_t;

#define LD(x) atomic_load_explicit(&(x), memory_order_relaxed)

static oc_status_t fake_fill(void *arg, oc_prom_t *p)
{
    fake_agent_t *a = arg;
    uint64_t m = LD(a->msgs);

    atomic_fetch_add_explicit(&a->scrapes, 1, memory_order_relaxed);
    oc__prom_family(p, "offcore_agent_info", "Agent node and version.",
                   OC_PROM_GAUGE);
    oc__prom_sample(p, "offcore_agent_info",
                   OC_PROM_LABELS({"node", "n0"}, {"version", "0.1"}), 1);
    oc__prom_family(p, "offcore_agent_uptime_seconds", "Seconds since start.",
                   OC_PROM_GAUGE);
    oc__prom_sample_f64(p, "offcore_agent_uptime_seconds", NULL, 0, 3725.5);
    oc__prom_family(p, "offcore_job_ranks", "Ranks of the job on this node.",
                   OC_PROM_GAUGE);
    oc__prom_sample(p, "offcore_job_ranks", OC_PROM_LABELS({"job", "7"}), 4);
    oc__prom_sample(p, "offcore_job_ranks", OC_PROM_LABELS({"job", "12"}), 2);
    oc__prom_family(p, "offcore_job_messages_total", "Messages routed.",
                   OC_PROM_COUNTER);
    oc__prom_sample(p, "offcore_job_messages_total",
                   OC_PROM_LABELS({"job", "7"}, {"dir", "in"}), m);
    oc__prom_sample(p, "offcore_job_messages_total",
                   OC_PROM_LABELS({"job", "7"}, {"dir", "out"}), 1001);
    oc__prom_sample(p, "offcore_job_messages_total",
                   OC_PROM_LABELS({"job", "12"}, {"dir", "in"}),
                   18446744073709551610ull);
    oc__prom_sample(p, "offcore_job_messages_total",
                   OC_PROM_LABELS({"job", "12"}, {"dir", "out"}), 5);
    oc__prom_family(p, "offcore_job_bytes_total", "Payload bytes routed.",
                   OC_PROM_COUNTER);
    oc__prom_sample(p, "offcore_job_bytes_total",
                   OC_PROM_LABELS({"job", "7"}, {"dir", "in"}), 80000);
    oc__prom_sample(p, "offcore_job_bytes_total",
                   OC_PROM_LABELS({"job", "7"}, {"dir", "out"}), 80080);
    oc__prom_family(p, "offcore_job_bundles_total", "Bundles routed.",
                   OC_PROM_COUNTER);
    oc__prom_sample(p, "offcore_job_bundles_total",
                   OC_PROM_LABELS({"job", "7"}, {"dir", "in"}), 10);
    oc__prom_sample(p, "offcore_job_bundles_total",
                   OC_PROM_LABELS({"job", "7"}, {"dir", "out"}), 11);
    oc__prom_family(p, "offcore_job_rejects_total", "Bundles rejected.",
                   OC_PROM_COUNTER);
    oc__prom_sample(p, "offcore_job_rejects_total", OC_PROM_LABELS({"job", "7"}),
                   3);
    oc__prom_family(p, "offcore_peer_messages_total", "Messages per peer node.",
                   OC_PROM_COUNTER);
    oc__prom_sample(p, "offcore_peer_messages_total",
                   OC_PROM_LABELS({"peer", "n1"}, {"dir", "in"}), 210);
    oc__prom_sample(p, "offcore_peer_messages_total",
                   OC_PROM_LABELS({"peer", "n1"}, {"dir", "out"}), 220);
    oc__prom_family(p, "offcore_peer_bundles_total", "Bundles per peer node.",
                   OC_PROM_COUNTER);
    oc__prom_sample(p, "offcore_peer_bundles_total",
                   OC_PROM_LABELS({"peer", "n1"}, {"dir", "in"}), 21);
    oc__prom_sample(p, "offcore_peer_bundles_total",
                   OC_PROM_LABELS({"peer", "n1"}, {"dir", "out"}), 22);
    oc__prom_family(p, "offcore_peer_bytes_total", "Bytes per peer node.",
                   OC_PROM_COUNTER);
    oc__prom_sample(p, "offcore_peer_bytes_total",
                   OC_PROM_LABELS({"peer", "n1"}, {"dir", "in"}), 2100);
    oc__prom_sample(p, "offcore_peer_bytes_total",
                   OC_PROM_LABELS({"peer", "n1"}, {"dir", "out"}), 2200);
    oc__prom_family(p, "offcore_peer_blocklist_depth",
                   "Bundles waiting for the peer.", OC_PROM_GAUGE);
    oc__prom_sample(p, "offcore_peer_blocklist_depth",
                   OC_PROM_LABELS({"peer", "n1"}), 6);
    /* the transport per peer: a text column; n2 has no counters yet, and
     * an exporter's control character must not reach the terminal */
    oc__prom_family(p, OC_M_PEER_TRANSPORT, "Transport per peer.",
                   OC_PROM_GAUGE);
    oc__prom_sample(p, OC_M_PEER_TRANSPORT,
                   OC_PROM_LABELS({"peer", "n1"}, {"transport", "rc_mlx5/mlx5_0:1"},
                                  {"class", "rdma"}), 1);
    oc__prom_sample(p, OC_M_PEER_TRANSPORT,
                   OC_PROM_LABELS({"peer", "n2"}, {"transport", "tcp/e\x1bth0"},
                                  {"class", "tcp"}), 1);
    oc__prom_family(p, "offcore_thread_messages_total",
                   "Messages per routing thread.", OC_PROM_COUNTER);
    oc__prom_sample(p, "offcore_thread_messages_total",
                   OC_PROM_LABELS({"thread", "0"}), 700);
    oc__prom_sample(p, "offcore_thread_messages_total",
                   OC_PROM_LABELS({"thread", "1"}), 301);
    oc__prom_family(p, "offcore_thread_bundles_total",
                   "Bundles per routing thread.", OC_PROM_COUNTER);
    oc__prom_sample(p, "offcore_thread_bundles_total",
                   OC_PROM_LABELS({"thread", "0"}, {"dir", "in"}), 31);
    oc__prom_sample(p, "offcore_thread_bundles_total",
                   OC_PROM_LABELS({"thread", "0"}, {"dir", "out"}), 32);
    oc__prom_family(p, "offcore_thread_bundles_forwarded_total",
                   "Bundles sent on whole.", OC_PROM_COUNTER);
    oc__prom_sample(p, "offcore_thread_bundles_forwarded_total",
                   OC_PROM_LABELS({"thread", "0"}), 33);
    oc__prom_family(p, "offcore_thread_shm_bundles_total",
                   "Bundles through ranks' rings.", OC_PROM_COUNTER);
    oc__prom_sample(p, "offcore_thread_shm_bundles_total",
                   OC_PROM_LABELS({"thread", "0"}, {"dir", "in"}), 34);
    oc__prom_sample(p, "offcore_thread_shm_bundles_total",
                   OC_PROM_LABELS({"thread", "0"}, {"dir", "out"}), 35);
    oc__prom_family(p, "offcore_thread_shm_ring_full_total",
                   "Rings found full.", OC_PROM_COUNTER);
    oc__prom_sample(p, "offcore_thread_shm_ring_full_total",
                   OC_PROM_LABELS({"thread", "0"}), 36);
    oc__prom_family(p, "offcore_thread_flushes_total",
                   "Bundle flushes by reason.", OC_PROM_COUNTER);
    oc__prom_sample(p, "offcore_thread_flushes_total",
                   OC_PROM_LABELS({"thread", "0"}, {"reason", "full"}), 41);
    oc__prom_sample(p, "offcore_thread_flushes_total",
                   OC_PROM_LABELS({"thread", "0"}, {"reason", "timeout"}), 42);
    oc__prom_sample(p, "offcore_thread_flushes_total",
                   OC_PROM_LABELS({"thread", "0"}, {"reason", "idle"}), 43);
    oc__prom_sample(p, "offcore_thread_flushes_total",
                   OC_PROM_LABELS({"thread", "0"}, {"reason", "explicit"}), 44);
    oc__prom_family(p, "offcore_thread_blocklist_depth",
                   "Bundles a thread holds back.", OC_PROM_GAUGE);
    oc__prom_sample(p, "offcore_thread_blocklist_depth",
                   OC_PROM_LABELS({"thread", "0"}), 1);
    oc__prom_sample(p, "offcore_thread_blocklist_depth",
                   OC_PROM_LABELS({"thread", "1"}), 0);
    oc__prom_family(p, "offcore_rejects_total", "Rejected bundles by reason.",
                   OC_PROM_COUNTER);
    oc__prom_sample(p, "offcore_rejects_total",
                   OC_PROM_LABELS({"reason", "OC_ERR_WIRE_MAGIC"}), 2);
    oc__prom_sample(p, "offcore_rejects_total",
                   OC_PROM_LABELS({"reason", "OC_ERR_WIRE_JOB"}), 1);
    /* not known to offcore stat: must show under "other" */
    oc__prom_family(p, "offcore_mystery_total", "Something new.",
                   OC_PROM_COUNTER);
    oc__prom_sample(p, "offcore_mystery_total", OC_PROM_LABELS({"what", "a\"b"}),
                   99);
    if (a->bad_name)
        oc__prom_family(p, "bad-name", NULL, OC_PROM_GAUGE);
    return a->fail;
}

/* ------------------------------------------------------------------- HTTP */

typedef struct {
    long code;
    char *body;
    size_t len;
    char ctype[128];
    char allow[64];
} reply_t;

static size_t on_body(char *p, size_t size, size_t n, void *arg)
{
    reply_t *r = arg;
    char *b = realloc(r->body, r->len + size * n + 1);

    if (b == NULL)
        return 0;
    memcpy(b + r->len, p, size * n);
    r->len += size * n;
    b[r->len] = '\0';
    r->body = b;
    return size * n;
}

static size_t on_header(char *p, size_t size, size_t n, void *arg)
{
    reply_t *r = arg;
    size_t len = size * n;

    if (len > 7 && strncasecmp(p, "Allow: ", 7) == 0)
        snprintf(r->allow, sizeof(r->allow), "%.*s", (int)(len - 9), p + 7);
    return len;
}

static void http(const char *method, uint16_t port, const char *path,
                 reply_t *r)
{
    char url[128];
    char *ct = NULL;
    CURL *c = curl_easy_init();

    assert_non_null(c);
    memset(r, 0, sizeof(*r));
    snprintf(url, sizeof(url), "http://127.0.0.1:%u%s", (unsigned)port, path);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_PROXY, "");
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 5000L);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, r);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, r);
    if (!strcmp(method, "HEAD"))
        curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
    else if (strcmp(method, "GET") != 0) {
        curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
        if (!strcmp(method, "POST"))
            curl_easy_setopt(c, CURLOPT_POSTFIELDS, "a=1");
    }
    CURLcode rc = curl_easy_perform(c);
    if (rc != CURLE_OK)
        fail_msg("%s %s: %s", method, url, curl_easy_strerror(rc));
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r->code);
    curl_easy_getinfo(c, CURLINFO_CONTENT_TYPE, &ct);
    if (ct)
        snprintf(r->ctype, sizeof(r->ctype), "%s", ct);
    curl_easy_cleanup(c);
}

static oc_metrics_server_t *start(fake_agent_t *a)
{
    oc_metrics_server_t *srv = NULL;

    assert_int_equal(oc__metrics_server_start("127.0.0.1:0", fake_fill, a, &srv),
                     OC_OK);
    assert_non_null(srv);
    assert_int_not_equal(oc__metrics_server_port(srv), 0);
    return srv;
}

static void test_http_serve(void **state)
{
    fake_agent_t a = {.msgs = 1000};
    oc_metrics_server_t *srv = start(&a);
    uint16_t port = oc__metrics_server_port(srv);
    oc_prom_buf_t want = {0};
    oc_prom_t p;
    reply_t r;

    oc__prom_init(&p, &want);
    /* the server's own family first: the build (util/version.h) */
    oc__prom_family(&p, OC_M_BUILD_INFO, "The build of this daemon",
                    OC_PROM_GAUGE);
    oc__prom_sample(&p, OC_M_BUILD_INFO,
                    OC_PROM_LABELS({"version", oc__version()}), 1);
    fake_fill(&a, &p);
    assert_int_equal(oc__prom_status(&p), OC_OK);

    http("GET", port, "/metrics", &r);
    assert_int_equal(r.code, 200);
    assert_string_equal(r.ctype, OC_METRICS_CONTENT_TYPE);
    assert_string_equal(r.ctype, "text/plain; version=0.0.4; charset=utf-8");
    assert_string_equal(r.body, want.data);
    assert_int_equal(oc__prom_parse(r.body, r.len, NULL, NULL, NULL), OC_OK);
    free(r.body);

    /* each scrape calls fill again and sees the counters move */
    atomic_fetch_add_explicit(&a.msgs, 5, memory_order_relaxed);
    http("GET", port, "/metrics?x=1", &r);
    assert_int_equal(r.code, 200);
    assert_non_null(strstr(r.body, "offcore_job_messages_total{job=\"7\","
                                   "dir=\"in\"} 1005\n"));
    free(r.body);

    http("HEAD", port, "/metrics", &r);
    assert_int_equal(r.code, 200);
    assert_string_equal(r.ctype, OC_METRICS_CONTENT_TYPE);
    assert_null(r.body);

    http("GET", port, "/", &r);
    assert_int_equal(r.code, 404);
    free(r.body);
    http("GET", port, "/metricsx", &r);
    assert_int_equal(r.code, 404);
    free(r.body);
    http("POST", port, "/metrics", &r);
    assert_int_equal(r.code, 405);
    assert_string_equal(r.allow, "GET, HEAD");
    free(r.body);
    http("DELETE", port, "/metrics", &r);
    assert_int_equal(r.code, 405);
    free(r.body);

    assert_true(LD(a.scrapes) >= 4);
    oc__metrics_server_stop(srv);
    oc__metrics_server_stop(NULL);
    oc__prom_buf_free(&want);
}

static void test_http_fill_errors(void **state)
{
    fake_agent_t a = {.fail = OC_ERR_STATE};
    oc_metrics_server_t *srv = start(&a);
    uint16_t port = oc__metrics_server_port(srv);
    reply_t r;

    http("GET", port, "/metrics", &r);
    assert_int_equal(r.code, 500);
    assert_non_null(strstr(r.body, "OC_ERR_STATE"));
    free(r.body);
    a.fail = OC_OK;
    a.bad_name = 1; /* a writer error: logged by the writer, 500 too */
    http("GET", port, "/metrics", &r);
    assert_int_equal(r.code, 500);
    assert_non_null(strstr(r.body, "OC_ERR_INVALID_PARAM"));
    free(r.body);
    a.bad_name = 0;
    http("GET", port, "/metrics", &r);
    assert_int_equal(r.code, 200);
    free(r.body);
    oc__metrics_server_stop(srv);
}

static int nonlocal_bind_allowed(void)
{
    FILE *f = fopen("/proc/sys/net/ipv4/ip_nonlocal_bind", "r");
    int v = 0;

    if (f) {
        if (fscanf(f, "%d", &v) != 1)
            v = 0;
        fclose(f);
    }
    return v;
}

static void test_http_addresses(void **state)
{
    static const char *const bad[] = {
        "127.0.0.1:", "127.0.0.1:99999", "127.0.0.1:abc",
        "[::1",       "[]:80",           "[::1]x",
        ":",          "123456",          "127.0.0.1:-1",
    };
    fake_agent_t a = {0};
    oc_metrics_server_t *srv = NULL, *srv2 = NULL;
    char addr[64];

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        if (oc__metrics_server_start(bad[i], fake_fill, &a, &srv) !=
            OC_ERR_CONFIG)
            fail_msg("accepted listen address '%s'", bad[i]);
    assert_null(srv);
    assert_int_equal(oc__metrics_server_start("127.0.0.1:0", NULL, &a, &srv),
                     OC_ERR_INVALID_PARAM);
    assert_int_equal(
        oc__metrics_server_start("127.0.0.1:0", fake_fill, &a, NULL),
        OC_ERR_INVALID_PARAM);

    /* the port is taken: a clear error, and the first server unharmed */
    srv = start(&a);
    snprintf(addr, sizeof(addr), "127.0.0.1:%u",
             (unsigned)oc__metrics_server_port(srv));
    assert_int_equal(oc__metrics_server_start(addr, fake_fill, &a, &srv2),
                     OC_ERR_CONFIG);
    assert_null(srv2);
    reply_t r;
    http("GET", oc__metrics_server_port(srv), "/metrics", &r);
    assert_int_equal(r.code, 200);
    free(r.body);
    oc__metrics_server_stop(srv);

    /* and free again once stopped: restarting on the same port works */
    assert_int_equal(oc__metrics_server_start(addr, fake_fill, &a, &srv), OC_OK);
    oc__metrics_server_stop(srv);

    /* an address this host does not have */
    if (!nonlocal_bind_allowed())
        assert_int_equal(
            oc__metrics_server_start("192.0.2.1:0", fake_fill, &a, &srv2),
            OC_ERR_CONFIG);
    /* a name, and "localhost" resolves */
    assert_int_equal(
        oc__metrics_server_start("localhost:0", fake_fill, &a, &srv), OC_OK);
    oc__metrics_server_stop(srv);
}

/* ------------------------------------------------------------------- stat */

typedef struct {
    char *out, *err;
    size_t out_len, err_len;
    int rc;
} run_t;

static void run_stat(run_t *r, const char *const *args)
{
    char *argv[16];
    int argc = 0;
    FILE *out, *err;

    memset(r, 0, sizeof(*r));
    argv[argc++] = "stat";
    for (; *args; args++)
        argv[argc++] = (char *)*args;
    argv[argc] = NULL;
    out = open_memstream(&r->out, &r->out_len);
    err = open_memstream(&r->err, &r->err_len);
    assert_non_null(out);
    assert_non_null(err);
    r->rc = oc__stat_main(argc, argv, out, err);
    fclose(out);
    fclose(err);
}

static void run_free(run_t *r)
{
    free(r->out);
    free(r->err);
}

/* The line of section @p title whose first word is @p key, as words. */
static int row(const char *text, const char *title, const char *key,
               char words[24][48])
{
    char head[64];
    const char *s;
    int n = 0;

    snprintf(head, sizeof(head), "\n%s\n", title);
    s = strstr(text, head);
    if (s == NULL)
        return -1;
    s += strlen(head);
    while (*s == ' ') {
        const char *e = strchr(s, '\n');
        char line[512], *tok, *save;
        if (e == NULL)
            e = s + strlen(s);
        snprintf(line, sizeof(line), "%.*s", (int)(e - s), s);
        tok = strtok_r(line, " ", &save);
        if (tok && !strcmp(tok, key)) {
            for (; tok && n < 24; tok = strtok_r(NULL, " ", &save))
                snprintf(words[n++], 48, "%s", tok);
            return n;
        }
        s = *e ? e + 1 : e;
    }
    return -1;
}

static void expect_row(const char *text, const char *title,
                       const char *const *want)
{
    char w[24][48];
    int n = row(text, title, want[0], w), i;

    if (n < 0)
        fail_msg("no row '%s' in section '%s':\n%s", want[0], title, text);
    for (i = 0; want[i]; i++)
        if (i >= n || strcmp(w[i], want[i]) != 0)
            fail_msg("section '%s' row '%s': word %d is '%s', want '%s'\n%s",
                     title, want[0], i, i < n ? w[i] : "(none)", want[i], text);
    if (i != n)
        fail_msg("section '%s' row '%s': %d words, want %d", title, want[0], n,
                 i);
}

#define ROW(text, title, ...)                                                  \
    expect_row(text, title, (const char *const[]){__VA_ARGS__, NULL})

#define HAS(t, sub)                                                            \
    do {                                                                       \
        if (strstr((t), (sub)) == NULL)                                        \
            fail_msg("no \"%s\" in:\n%s", (sub), (t));                         \
    } while (0)

static void check_tables(const char *t)
{
    HAS(t, "offcored on node n0, version 0.1 at http://127.0.0.1:");
    HAS(t, "/metrics, up 1h 2m 5s\n");
    HAS(t, "\njobs\n  job");
    ROW(t, "jobs", "job", "ranks", "msgs", "in", "msgs", "out", "bytes", "in",
        "bytes", "out", "bundles", "in", "bundles", "out", "rejects");
    ROW(t, "peers", "peer", "transport", "msgs", "in", "msgs", "out", "bundles",
        "in", "bundles", "out", "bytes", "in", "bytes", "out", "blocklist");
    ROW(t, "threads", "thread", "msgs", "bundles", "in", "bundles", "out",
        "forwarded", "shm", "in", "shm", "out", "shm", "full", "flush", "full",
        "flush", "timeout", "flush", "idle", "flush", "explicit", "blocklist");
    ROW(t, "rejects by reason", "reason", "rejects");
    ROW(t, "jobs", "7", "4", "1000", "1001", "80000", "80080", "10", "11", "3");
    ROW(t, "jobs", "12", "2", "18446744073709551610", "5", "-", "-", "-", "-",
        "-");
    /* the sum overflows 64 bits: shown as a double */
    ROW(t, "jobs", "total", "6", "1.84467e+19", "1006", "80000", "80080", "10",
        "11", "3");
    ROW(t, "peers", "n1", "rc_mlx5/mlx5_0:1", "210", "220", "21", "22", "2100",
        "2200", "6");
    ROW(t, "peers", "n2", "tcp/e\\x1bth0", "-", "-", "-", "-", "-", "-", "-");
    /* text is never summed: the total row has no transport */
    ROW(t, "peers", "total", "210", "220", "21", "22", "2100", "2200", "6");
    ROW(t, "threads", "0", "700", "31", "32", "33", "34", "35", "36", "41", "42",
        "43", "44", "1");
    ROW(t, "threads", "1", "301", "-", "-", "-", "-", "-", "-", "-", "-", "-",
        "-", "0");
    ROW(t, "threads", "total", "1001", "31", "32", "33", "34", "35", "36", "41",
        "42", "43", "44", "1");
    ROW(t, "rejects by reason", "OC_ERR_WIRE_JOB", "1");
    ROW(t, "rejects by reason", "OC_ERR_WIRE_MAGIC", "2");
    ROW(t, "rejects by reason", "total", "3");
    assert_non_null(strstr(t, "\nother\n  offcore_mystery_total{what=\"a\\\""
                              "b\"} 99\n"));
    /* rows in natural order: job 7 before job 12 */
    assert_true(strstr(t, "\n  7 ") < strstr(t, "\n  12 "));
}

static void test_stat_tables(void **state)
{
    fake_agent_t a = {.msgs = 1000};
    oc_metrics_server_t *srv = start(&a);
    char addr[64], url[80];
    run_t r;

    snprintf(addr, sizeof(addr), "127.0.0.1:%u",
             (unsigned)oc__metrics_server_port(srv));
    run_stat(&r, (const char *[]){"--agent", addr, NULL});
    assert_int_equal(r.rc, 0);
    assert_string_equal(r.err, "");
    check_tables(r.out);
    assert_null(strstr(r.out, "/s ")); /* no rates without --watch */
    run_free(&r);

    /* the address forms and the environment variable */
    snprintf(url, sizeof(url), "http://%s", addr);
    run_stat(&r, (const char *[]){"--agent", url, NULL});
    assert_int_equal(r.rc, 0);
    check_tables(r.out);
    run_free(&r);
    snprintf(url, sizeof(url), "--agent=:%u",
             (unsigned)oc__metrics_server_port(srv));
    run_stat(&r, (const char *[]){url, NULL});
    assert_int_equal(r.rc, 0);
    run_free(&r);
    setenv(OC_STAT_ENV, addr, 1);
    run_stat(&r, (const char *[]){NULL});
    unsetenv(OC_STAT_ENV);
    assert_int_equal(r.rc, 0);
    check_tables(r.out);
    run_free(&r);

    /* --json: one object holding every sample, exact integers */
    run_stat(&r, (const char *[]){"-a", addr, "--json", NULL});
    assert_int_equal(r.rc, 0);
    assert_int_equal(strncmp(r.out, "{\"agent\":\"http://127.0.0.1:", 27), 0);
    assert_non_null(strstr(
        r.out, "{\"name\":\"offcore_job_messages_total\",\"type\":\"counter\","
               "\"labels\":{\"job\":\"12\",\"dir\":\"in\"},"
               "\"value\":18446744073709551610}"));
    assert_non_null(strstr(r.out, "\"labels\":{\"what\":\"a\\\"b\"},"
                                  "\"value\":99}"));
    assert_non_null(strstr(r.out, "\"value\":3725.5}"));
    assert_non_null(strstr(r.out, "{\"name\":\"offcore_peer_transport\","
                                  "\"type\":\"gauge\",\"labels\":{\"peer\":"
                                  "\"n1\",\"transport\":\"rc_mlx5/mlx5_0:1\","
                                  "\"class\":\"rdma\"},\"value\":1}"));
    assert_string_equal(r.out + r.out_len - 3, "]}\n");
    assert_true(strchr(r.out, '\n') == r.out + r.out_len - 1); /* one line */
    run_free(&r);
    oc__metrics_server_stop(srv);
}

/* The test's "routing thread": bumps the counter while stat watches. */
static void *bump(void *arg)
{
    fake_agent_t *a = arg;

    while (!atomic_load(&a->stop)) {
        atomic_fetch_add_explicit(&a->msgs, 50, memory_order_relaxed);
        usleep(2000);
    }
    return NULL;
}

static void test_stat_watch(void **state)
{
    fake_agent_t a = {.msgs = 1000};
    oc_metrics_server_t *srv = start(&a);
    char addr[64];
    pthread_t th;
    run_t r;

    snprintf(addr, sizeof(addr), "127.0.0.1:%u",
             (unsigned)oc__metrics_server_port(srv));
    assert_int_equal(pthread_create(&th, NULL, bump, &a), 0);
    run_stat(&r, (const char *[]){"--agent", addr, "--watch", "0.2", "--count",
                                  "3", NULL});
    atomic_store(&a.stop, 1);
    pthread_join(th, NULL);
    assert_int_equal(r.rc, 0);
    /* three refreshes; the later two carry a rate line under job 7 whose
     * msgs in rate is positive and msgs out rate 0 */
    const char *s = r.out;
    int frames = 0, rates = 0;
    while ((s = strstr(s, "offcored on node")) != NULL) {
        frames++;
        s++;
    }
    assert_int_equal(frames, 3);
    s = r.out;
    while ((s = strstr(s, "\n  7 ")) != NULL) {
        const char *nl = strchr(s + 1, '\n');
        char line[256], *w[4], *save = NULL;
        int n = 0;
        s++;
        if (nl == NULL || strncmp(nl + 1, "     /s ", 8) != 0)
            continue;
        snprintf(line, sizeof(line), "%.*s", (int)strcspn(nl + 1, "\n"),
                 nl + 1);
        for (char *t = strtok_r(line, " ", &save); t && n < 4;
             t = strtok_r(NULL, " ", &save))
            w[n++] = t;
        /* "/s", then msgs in, msgs out (ranks is a gauge: no rate) */
        assert_true(n >= 3);
        assert_true(atof(w[1]) > 0);
        assert_string_equal(w[2], "0");
        rates++;
    }
    assert_int_equal(rates, 2);
    assert_non_null(strstr(r.out, "\n     /s"));
    run_free(&r);

    /* --watch --json: one object per refresh, one per line */
    run_stat(&r, (const char *[]){"--agent", addr, "-w", "0.1", "-n", "2", "-j",
                                  NULL});
    assert_int_equal(r.rc, 0);
    s = strchr(r.out, '\n');
    assert_non_null(s);
    assert_int_equal(strncmp(s + 1, "{\"agent\":", 9), 0);
    assert_string_equal(strchr(s + 1, '\n'), "\n");
    run_free(&r);
    oc__metrics_server_stop(srv);
}

/* A loopback port with nothing listening (bound, read, closed). */
static uint16_t dead_port(void)
{
    struct sockaddr_in in = {.sin_family = AF_INET};
    socklen_t sl = sizeof(in);
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    in.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_true(fd >= 0);
    assert_int_equal(bind(fd, (struct sockaddr *)&in, sizeof(in)), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&in, &sl), 0);
    close(fd);
    return ntohs(in.sin_port);
}

static void test_stat_no_agent(void **state)
{
    char addr[64], want[256];
    uint16_t port = dead_port();
    run_t r;

    snprintf(addr, sizeof(addr), "127.0.0.1:%u", (unsigned)port);
    snprintf(want, sizeof(want),
             "offcore stat: no agent answers at "
             "http://127.0.0.1:%u/metrics: connection refused or "
             "unreachable: is offcored running? (start it with offcored "
             "--listen ...)\n",
             (unsigned)port);
    run_stat(&r, (const char *[]){"--agent", addr, NULL});
    assert_int_equal(r.rc, 1);
    assert_string_equal(r.out, "");
    assert_int_equal(strncmp(r.err, want, strlen(want)), 0);
    run_free(&r);
    /* --watch gives up at once too when the first fetch fails */
    run_stat(&r, (const char *[]){"--agent", addr, "--watch", "1", NULL});
    assert_int_equal(r.rc, 1);
    run_free(&r);
}

static void test_stat_bad_answers(void **state)
{
    fake_agent_t a = {.fail = OC_ERR_STATE};
    oc_metrics_server_t *srv = start(&a);
    char url[96];
    run_t r;

    /* HTTP errors: 500 from a failing fill, 404 from a wrong path */
    snprintf(url, sizeof(url), "127.0.0.1:%u",
             (unsigned)oc__metrics_server_port(srv));
    run_stat(&r, (const char *[]){"--agent", url, NULL});
    assert_int_equal(r.rc, 3);
    assert_non_null(strstr(r.err, "answered HTTP 500: metrics unavailable"));
    run_free(&r);
    snprintf(url, sizeof(url), "http://127.0.0.1:%u/nothing",
             (unsigned)oc__metrics_server_port(srv));
    run_stat(&r, (const char *[]){"--agent", url, NULL});
    assert_int_equal(r.rc, 3);
    assert_non_null(strstr(r.err, "answered HTTP 404"));
    run_free(&r);
    oc__metrics_server_stop(srv);
}

static void test_stat_usage(void **state)
{
    static const char *const bad[][5] = {
        {"--bogus", NULL},      {"--agent", NULL},      {"--agent=", NULL},
        {"--watch", "0", NULL}, {"--watch", "x", NULL}, {"--watch=-1", NULL},
        {"--count", "2", NULL}, {"-w", "1", "-n", "0"},
    };
    run_t r;

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        run_stat(&r, bad[i]);
        if (r.rc != 2)
            fail_msg("'%s %s': exit %d, want 2", bad[i][0],
                     bad[i][1] ? bad[i][1] : "", r.rc);
        assert_string_equal(r.out, "");
        assert_true(r.err_len > 0);
        run_free(&r);
    }
    run_stat(&r, (const char *[]){"--help", NULL});
    assert_int_equal(r.rc, 0);
    assert_non_null(strstr(r.out, "usage: offcore stat"));
    assert_non_null(strstr(r.out, OC_STAT_ENV));
    run_free(&r);
}

/* Run the offcore binary; its stdout and stderr into files read back. */
static int run_binary(const char *const *args, char **out, char **err)
{
    char of[] = "/tmp/oc-stat-out.XXXXXX", ef[] = "/tmp/oc-stat-err.XXXXXX";
    int ofd = mkstemp(of), efd = mkstemp(ef), status;
    posix_spawn_file_actions_t fa;
    const char *wrapper = getenv("MESON_EXE_WRAPPER");
    char *argv[16];
    int argc = 0;
    pid_t pid;

    assert_true(ofd >= 0 && efd >= 0);
    /* a cross build's binary runs under the emulator meson names (one
     * program, e.g. qemu-aarch64: cross/aarch64-linux-gnu.ini) */
    if (wrapper != NULL && *wrapper != '\0')
        argv[argc++] = (char *)wrapper;
    argv[argc++] = (char *)offcore_bin;
    for (; *args; args++)
        argv[argc++] = (char *)*args;
    argv[argc] = NULL;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, ofd, 1);
    posix_spawn_file_actions_adddup2(&fa, efd, 2);
    assert_int_equal(posix_spawn(&pid, argv[0], &fa, NULL, argv, environ), 0);
    posix_spawn_file_actions_destroy(&fa);
    assert_int_equal(waitpid(pid, &status, 0), pid);
    for (int k = 0; k < 2; k++) {
        int fd = k ? efd : ofd;
        off_t n = lseek(fd, 0, SEEK_END);
        char *b = malloc((size_t)n + 1);
        assert_non_null(b);
        assert_int_equal(pread(fd, b, (size_t)n, 0), n);
        b[n] = '\0';
        *(k ? err : out) = b;
        close(fd);
    }
    unlink(of);
    unlink(ef);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void test_stat_binary(void **state)
{
    fake_agent_t a = {.msgs = 1000};
    oc_metrics_server_t *srv;
    char addr[64], *out, *err;

    if (offcore_bin == NULL)
        skip();
    srv = start(&a);
    snprintf(addr, sizeof(addr), "127.0.0.1:%u",
             (unsigned)oc__metrics_server_port(srv));
    assert_int_equal(
        run_binary((const char *[]){"stat", "--agent", addr, NULL}, &out, &err),
        0);
    check_tables(out);
    free(out);
    free(err);
    oc__metrics_server_stop(srv);

    snprintf(addr, sizeof(addr), "127.0.0.1:%u", (unsigned)dead_port());
    assert_int_equal(
        run_binary((const char *[]){"stat", "--agent", addr, NULL}, &out, &err),
        1);
    assert_non_null(strstr(err, "no agent answers at http://127.0.0.1:"));
    assert_non_null(strstr(err, "is offcored running?"));
    free(out);
    free(err);
    assert_int_equal(
        run_binary((const char *[]){"stat", "--nope", NULL}, &out, &err), 2);
    free(out);
    free(err);
    assert_int_equal(run_binary((const char *[]){"help", NULL}, &out, &err), 0);
    assert_non_null(strstr(out, "  stat [--agent ADDR]"));
    free(out);
    free(err);
}

/* --------------------------------------------------------------- promtool */

/* `promtool check metrics` on what the server answers: Prometheus's own
 * parser and linter (exit 77 when promtool is absent). */
static int promtool_check(void)
{
    fake_agent_t a = {.msgs = 1000};
    oc_metrics_server_t *srv = NULL;
    char path[] = "/tmp/oc-metrics.XXXXXX", cmd[256];
    reply_t r;
    FILE *f;
    int fd, rc;

    if (system("command -v promtool >/dev/null 2>&1") != 0) {
        printf("SKIP: promtool not found (Debian package prometheus)\n");
        return 77;
    }
    if (oc__metrics_server_start("127.0.0.1:0", fake_fill, &a, &srv) != OC_OK)
        return 1;
    http("GET", oc__metrics_server_port(srv), "/metrics", &r);
    oc__metrics_server_stop(srv);
    fd = mkstemp(path);
    if (fd < 0 || (f = fdopen(fd, "w")) == NULL)
        return 1;
    fwrite(r.body, 1, r.len, f);
    fclose(f);
    free(r.body);
    snprintf(cmd, sizeof(cmd), "promtool check metrics < %s", path);
    rc = system(cmd);
    unlink(path);
    printf("%s: promtool check metrics %s\n", rc == 0 ? "PASS" : "FAIL",
           rc == 0 ? "accepts the exposition" : "rejects the exposition");
    return rc == 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_writer_exact),
        cmocka_unit_test(test_writer_errors),
        cmocka_unit_test(test_writer_histogram),
        cmocka_unit_test(test_writer_escapes),
        cmocka_unit_test(test_parse_roundtrip),
        cmocka_unit_test(test_parse_tolerant),
        cmocka_unit_test(test_parse_rejects),
        cmocka_unit_test(test_parse_random),
        cmocka_unit_test(test_http_serve),
        cmocka_unit_test(test_http_fill_errors),
        cmocka_unit_test(test_http_addresses),
        cmocka_unit_test(test_stat_tables),
        cmocka_unit_test(test_stat_watch),
        cmocka_unit_test(test_stat_no_agent),
        cmocka_unit_test(test_stat_bad_answers),
        cmocka_unit_test(test_stat_usage),
        cmocka_unit_test(test_stat_binary),
    };
    int rc;

    /* the writer and server log bad input at error level on purpose */
    setenv("OC_LOG", "agent:error", 0);
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
        return 1;
    if (argc > 1 && !strcmp(argv[1], "--promtool"))
        rc = promtool_check();
    else {
        offcore_bin = argc > 1 ? argv[1] : NULL;
        rc = cmocka_run_group_tests_name("metrics", tests, NULL, NULL);
    }
    curl_global_cleanup();
    return rc;
}
