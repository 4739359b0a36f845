/*
 * test_util.c — unit tests of src/util: status names, OC_LOG parsing, and
 * the declarative configuration tables (environment, overrides, listing).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "test_common.h"

#include "util/config.h"
#include "util/guard.h"
#include "util/log.h"
#include "util/reject.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

/* ----------------------------------------------------------------- status */

#define S(x)                                                                   \
    {                                                                          \
        x, #x                                                                  \
    }
static const struct {
    oc_status_t st;
    const char *name;
} all_status[] = {
    S(OC_OK),
    S(OC_INPROGRESS),
    S(OC_ERR_NO_RESOURCE),
    S(OC_ERR_INVALID_PARAM),
    S(OC_ERR_NO_MEMORY),
    S(OC_ERR_MSG_TOO_LONG),
    S(OC_ERR_RANK_RANGE),
    S(OC_ERR_TRANSPORT),
    S(OC_ERR_BOOTSTRAP),
    S(OC_ERR_CONFIG),
    S(OC_ERR_STATE),
    S(OC_ERR_UNSUPPORTED),
    S(OC_ERR_PEER_FAILED),
    S(OC_ERR_TRANSPORT_REQUIRED),
    S(OC_ERR_WIRE_TRUNCATED),
    S(OC_ERR_WIRE_MAGIC),
    S(OC_ERR_WIRE_VERSION),
    S(OC_ERR_WIRE_FLAGS),
    S(OC_ERR_WIRE_LENGTH),
    S(OC_ERR_WIRE_COUNT),
    S(OC_ERR_WIRE_RANK),
    S(OC_ERR_WIRE_JOB),
    S(OC_ERR_WIRE_EMPTY),
    S(OC_ERR_WIRE_ITEM_SIZE),
    S(OC_ERR_CTL_TYPE),
    S(OC_ERR_CTL_VALUE),
    S(OC_ERR_CTL_AUTH),
    S(OC_ERR_CTL_KEY),
    S(OC_ERR_CTL_TIMEOUT),
    S(OC_ERR_CTL_ADDR),
    S(OC_ERR_CTL_CONNECT),
    S(OC_ERR_CTL_DENIED),
    S(OC_ERR_CTL_VERSION),
    S(OC_ERR_COLL_DTYPE),
    S(OC_ERR_COLL_OP),
    S(OC_ERR_COLL_BUFFER),
    S(OC_ERR_COLL_COUNT),
    S(OC_ERR_COLL_ROOT),
    S(OC_ERR_COLL_REQUEST),
    S(OC_ERR_COLL_MISMATCH),
    S(OC_ERR_COLL_PEER_FAILED),
    S(OC_ERR_COLL_MEMORY),
    S(OC_ERR_GPU),
};
#define N_STATUS (sizeof(all_status) / sizeof(all_status[0]))

static int is_known(int v)
{
    for (size_t i = 0; i < N_STATUS; i++)
        if ((int)all_status[i].st == v)
            return 1;
    return 0;
}

static void test_status_names(void **state)
{
    for (size_t i = 0; i < N_STATUS; i++) {
        const char *s = oc_status_string(all_status[i].st);
        size_t n = strlen(all_status[i].name);

        assert_non_null(s);
        /* "NAME: description" */
        if (strncmp(s, all_status[i].name, n) != 0 || s[n] != ':')
            fail_msg("%s is named \"%s\"", all_status[i].name, s);
        assert_true(strlen(s) > n + 2);
        assert_null(strstr(s, "UNKNOWN"));
        for (size_t j = 0; j < i; j++)
            assert_string_not_equal(s, oc_status_string(all_status[j].st));
    }
}

static void test_status_all_values_listed(void **state)
{
    /* Every value from -128 to 128 that oc_status_string() knows is in the
     * table above: a new enum value must come with its test entry. */
    for (int v = -128; v <= 128; v++) {
        const char *s = oc_status_string((oc_status_t)v);
        int unknown = strstr(s, "UNKNOWN") != NULL;
        if (unknown == is_known(v))
            fail_msg("status %d: \"%s\"", v, s);
    }
}

static void test_status_unknown(void **state)
{
    static const int bad[] = {
        2, 3, -13, -19, -30, 1000, -1000, 0x7fffffff, -0x7fffffff - 1};
    const char *u = oc_status_string((oc_status_t)bad[0]);

    assert_string_equal(u, "OC_ERR_UNKNOWN: unknown status");
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_string_equal(oc_status_string((oc_status_t)bad[i]), u);
}

/* -------------------------------------------------------------------- log */

static void expect_levels(const int *lv, const int *want)
{
    for (int i = 0; i < OC_COMP_MAX; i++)
        if (lv[i] != want[i])
            fail_msg("component %d: level %d, want %d", i, lv[i], want[i]);
}

static void all(int *lv, int v)
{
    for (int i = 0; i < OC_COMP_MAX; i++)
        lv[i] = v;
}

static void test_log_parse_good(void **state)
{
    int lv[OC_COMP_MAX], want[OC_COMP_MAX];

    all(want, OC_LOG_WARN);
    assert_int_equal(oc__log_parse(NULL, lv), 0);
    expect_levels(lv, want);
    assert_int_equal(oc__log_parse("", lv), 0);
    expect_levels(lv, want);

    static const char *const names[] = {"error", "warn", "info", "debug",
                                        "trace"};
    for (int l = 0; l < 5; l++) {
        all(want, l);
        assert_int_equal(oc__log_parse(names[l], lv), 0);
        expect_levels(lv, want);
    }

    all(want, OC_LOG_WARN);
    want[OC_COMP_TRANSPORT] = OC_LOG_DEBUG;
    want[OC_COMP_RUNTIME] = OC_LOG_INFO;
    assert_int_equal(oc__log_parse("transport:debug,runtime:info", lv), 0);
    expect_levels(lv, want);

    all(want, OC_LOG_INFO);
    want[OC_COMP_WIRE] = OC_LOG_TRACE;
    assert_int_equal(oc__log_parse("info,wire:trace", lv), 0);
    expect_levels(lv, want);

    /* later items win: a global level after a component one overrides it */
    all(want, OC_LOG_ERROR);
    assert_int_equal(oc__log_parse("wire:trace,error", lv), 0);
    expect_levels(lv, want);

    all(want, OC_LOG_WARN);
    want[OC_COMP_UTIL] = OC_LOG_ERROR;
    want[OC_COMP_AGENT] = OC_LOG_DEBUG;
    want[OC_COMP_APP] = OC_LOG_TRACE;
    assert_int_equal(oc__log_parse("util:error,agent:debug,app:trace,", lv), 0);
    expect_levels(lv, want);

    /* every module is a component of its own (tests/logcomp.py) */
    for (int i = 0; i < OC_COMP_MAX; i++)
        want[i] = OC_LOG_WARN;
    want[OC_COMP_CTL] = OC_LOG_INFO;
    want[OC_COMP_METRICS] = OC_LOG_ERROR;
    want[OC_COMP_COLL] = OC_LOG_DEBUG;
    want[OC_COMP_NVMF] = OC_LOG_DEBUG;
    want[OC_COMP_ROUTER] = OC_LOG_TRACE;
    assert_int_equal(oc__log_parse("ctl:info,metrics:error,coll:debug,"
                                   "nvmf:debug,router:trace", lv), 0);
    expect_levels(lv, want);
}

static void test_log_parse_bad(void **state)
{
    int lv[OC_COMP_MAX], want[OC_COMP_MAX];
    static const char *const bad[] = {
        "loud", "warning", "foo:info", "wire:loud",   "wire:",      ":info",
        "wire", "info,,",  ",info",    "wire:info:x", "wire:info;", "transport",
    };

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        if (oc__log_parse(bad[i], lv) != -1)
            fail_msg("OC_LOG='%s' accepted", bad[i]);

    /* what parsed is kept */
    all(want, OC_LOG_DEBUG);
    want[OC_COMP_WIRE] = OC_LOG_TRACE;
    assert_int_equal(oc__log_parse("debug,bogus,wire:trace", lv), -1);
    expect_levels(lv, want);
}

/* ----------------------------------------------------------------- config */

typedef struct {
    uint64_t count;
    uint64_t size;
    int flag;
    char name[OC_CFG_STRLEN];
    int mode;
} tcfg_t;

static const char *const modes[] = {"inline", "agent", "auto", NULL};

#define LONG_DOC                                                               \
    "A long description that must be wrapped over several lines of the "       \
    "listing because it is far longer than seventy-six columns, and every "    \
    "word of it has to survive the wrapping unchanged. Supercalifragilistic."

static const oc_cfg_field_t table[] = {
    {"UTEST_COUNT", OC_CFG_UINT, "16", "How many things; 16 is enough.",
     offsetof(tcfg_t, count), 1, 1000, NULL},
    {"UTEST_SIZE", OC_CFG_SIZE, "64K", LONG_DOC, offsetof(tcfg_t, size), 4096,
     (uint64_t)1 << 32, NULL},
    {"UTEST_FLAG", OC_CFG_BOOL, "n", "Turn the thing on.",
     offsetof(tcfg_t, flag), 0, 0, NULL},
    {"UTEST_NAME", OC_CFG_STRING, "dflt-name", "A name for logs.",
     offsetof(tcfg_t, name), 0, 0, NULL},
    {"UTEST_MODE", OC_CFG_ENUM, "auto", "Placement.", offsetof(tcfg_t, mode), 0,
     0, modes},
    OC_CFG_END,
};

static const char *const vars[] = {"OC_UTEST_COUNT", "OC_UTEST_SIZE",
                                   "OC_UTEST_FLAG", "OC_UTEST_NAME",
                                   "OC_UTEST_MODE"};

static int clear_env(void **state)
{
    for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
        unsetenv(vars[i]);
    return 0;
}

static oc_status_t load_with(const char *var, const char *value, tcfg_t *c)
{
    oc_status_t st;
    clear_env(NULL);
    if (var)
        setenv(var, value, 1);
    memset(c, 0x5a, sizeof(*c));
    st = oc__config_load(table, c);
    clear_env(NULL);
    return st;
}

static void test_config_defaults(void **state)
{
    tcfg_t c;

    assert_status(load_with(NULL, NULL, &c), OC_OK);
    assert_int_equal(c.count, 16);
    assert_int_equal(c.size, 65536);
    assert_int_equal(c.flag, 0);
    assert_string_equal(c.name, "dflt-name");
    assert_int_equal(c.mode, 2);
}

static void test_config_env_uint(void **state)
{
    static const struct {
        const char *v;
        uint64_t want;
    } ok[] = {{"42", 42},      {"1", 1},  {"1000", 1000}, {"0x10", 16},
              {"0X3e8", 1000}, {" 7", 7}, {"010", 10},    {"+5", 5}};
    static const char *const bad[] = {"0",
                                      "1001",
                                      "abc",
                                      "",
                                      "-1",
                                      "12x",
                                      "4K",
                                      "0x",
                                      "1e3",
                                      "7 ",
                                      "99999999999999999999999",
                                      "18446744073709551616",
                                      "1.5",
                                      "0x3e9"};
    tcfg_t c;

    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        assert_status(load_with("OC_UTEST_COUNT", ok[i].v, &c), OC_OK);
        if (c.count != ok[i].want)
            fail_msg("'%s' -> %llu, want %llu", ok[i].v,
                     (unsigned long long)c.count,
                     (unsigned long long)ok[i].want);
    }
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        if (load_with("OC_UTEST_COUNT", bad[i], &c) != OC_ERR_CONFIG)
            fail_msg("OC_UTEST_COUNT='%s' accepted", bad[i]);
}

static void test_config_env_size(void **state)
{
    static const struct {
        const char *v;
        uint64_t want;
    } ok[] = {
        {"4096", 4096},
        {"4K", 4096},
        {"4k", 4096},
        {"4KB", 4096},
        {"4KiB", 4096},
        {"4kib", 4096},
        {"2M", 2u << 20},
        {"2MB", 2u << 20},
        {"1G", 1u << 30},
        {"4G", (uint64_t)4 << 30},
        {"0x1000", 4096},
        {"64K", 65536},
        {"4194304K", (uint64_t)4 << 30},
    };
    static const char *const bad[] = {
        "4095", "3K",  "5G",           "4T",   "4KX",
        "K",    "-4K", "4 K",          "4KBB", "4KiBB",
        "4Bi",  "4B",  "17179869184G", "4.5K", "18446744073709551615K"};
    tcfg_t c;

    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        assert_status(load_with("OC_UTEST_SIZE", ok[i].v, &c), OC_OK);
        if (c.size != ok[i].want)
            fail_msg("'%s' -> %llu, want %llu", ok[i].v,
                     (unsigned long long)c.size,
                     (unsigned long long)ok[i].want);
    }
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        if (load_with("OC_UTEST_SIZE", bad[i], &c) != OC_ERR_CONFIG)
            fail_msg("OC_UTEST_SIZE='%s' accepted (%llu)", bad[i],
                     (unsigned long long)c.size);
}

static void test_config_env_bool(void **state)
{
    static const char *const yes[] = {"y",    "Y",    "yes", "YES", "1",
                                      "true", "True", "on",  "ON"};
    static const char *const no[] = {"n",     "N",     "no",  "No", "0",
                                     "false", "FALSE", "off", "Off"};
    static const char *const bad[] = {"", "2", "maybe", "yess", "t", "of"};
    tcfg_t c;

    for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
        assert_status(load_with("OC_UTEST_FLAG", yes[i], &c), OC_OK);
        assert_int_equal(c.flag, 1);
    }
    for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++) {
        assert_status(load_with("OC_UTEST_FLAG", no[i], &c), OC_OK);
        assert_int_equal(c.flag, 0);
    }
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        if (load_with("OC_UTEST_FLAG", bad[i], &c) != OC_ERR_CONFIG)
            fail_msg("OC_UTEST_FLAG='%s' accepted", bad[i]);
}

static void test_config_env_string_enum(void **state)
{
    char s[OC_CFG_STRLEN + 1];
    tcfg_t c;

    assert_status(load_with("OC_UTEST_NAME", "", &c), OC_OK);
    assert_string_equal(c.name, "");
    assert_status(load_with("OC_UTEST_NAME", "hello world", &c), OC_OK);
    assert_string_equal(c.name, "hello world");
    memset(s, 'x', OC_CFG_STRLEN - 1);
    s[OC_CFG_STRLEN - 1] = '\0';
    assert_status(load_with("OC_UTEST_NAME", s, &c), OC_OK);
    assert_string_equal(c.name, s);
    s[OC_CFG_STRLEN - 1] = 'x'; /* one too long */
    s[OC_CFG_STRLEN] = '\0';
    assert_status(load_with("OC_UTEST_NAME", s, &c), OC_ERR_CONFIG);

    assert_status(load_with("OC_UTEST_MODE", "inline", &c), OC_OK);
    assert_int_equal(c.mode, 0);
    assert_status(load_with("OC_UTEST_MODE", "AGENT", &c), OC_OK);
    assert_int_equal(c.mode, 1);
    assert_status(load_with("OC_UTEST_MODE", "Auto", &c), OC_OK);
    assert_int_equal(c.mode, 2);
    assert_status(load_with("OC_UTEST_MODE", "dpu", &c), OC_ERR_CONFIG);
    assert_status(load_with("OC_UTEST_MODE", "", &c), OC_ERR_CONFIG);
    assert_status(load_with("OC_UTEST_MODE", "agen", &c), OC_ERR_CONFIG);
}

static void test_config_env_several(void **state)
{
    tcfg_t c;

    setenv("OC_UTEST_COUNT", "7", 1);
    setenv("OC_UTEST_SIZE", "1M", 1);
    setenv("OC_UTEST_FLAG", "yes", 1);
    setenv("OC_UTEST_MODE", "agent", 1);
    assert_status(oc__config_load(table, &c), OC_OK);
    assert_int_equal(c.count, 7);
    assert_int_equal(c.size, 1 << 20);
    assert_int_equal(c.flag, 1);
    assert_string_equal(c.name, "dflt-name");
    assert_int_equal(c.mode, 1);
    /* one bad value fails the whole load */
    setenv("OC_UTEST_FLAG", "sometimes", 1);
    assert_status(oc__config_load(table, &c), OC_ERR_CONFIG);
    clear_env(NULL);
}

static void test_config_bad_default(void **state)
{
    static const oc_cfg_field_t bad_table[] = {
        {"UTEST_COUNT", OC_CFG_UINT, "5000", "Default above max.",
         offsetof(tcfg_t, count), 1, 1000, NULL},
        OC_CFG_END,
    };
    tcfg_t c;

    assert_status(oc__config_load(bad_table, &c), OC_ERR_CONFIG);
}

static void test_config_set(void **state)
{
    tcfg_t c;

    assert_status(load_with(NULL, NULL, &c), OC_OK);
    assert_status(oc__config_set(table, &c, "UTEST_COUNT", "99"), OC_OK);
    assert_int_equal(c.count, 99);
    assert_status(oc__config_set(table, &c, "utest_count", "98"), OC_OK);
    assert_int_equal(c.count, 98);
    assert_status(oc__config_set(table, &c, "utest-count", "97"), OC_OK);
    assert_int_equal(c.count, 97);
    assert_status(oc__config_set(table, &c, "Utest-Size", "8K"), OC_OK);
    assert_int_equal(c.size, 8192);
    assert_status(oc__config_set(table, &c, "utest-flag", "on"), OC_OK);
    assert_int_equal(c.flag, 1);
    assert_status(oc__config_set(table, &c, "utest-name", "n2"), OC_OK);
    assert_string_equal(c.name, "n2");
    assert_status(oc__config_set(table, &c, "utest-mode", "inline"), OC_OK);
    assert_int_equal(c.mode, 0);

    /* bad values leave the field as it was */
    assert_status(oc__config_set(table, &c, "utest-count", "0"), OC_ERR_CONFIG);
    assert_status(oc__config_set(table, &c, "utest-count", "x"), OC_ERR_CONFIG);
    assert_int_equal(c.count, 97);
    assert_status(oc__config_set(table, &c, "utest-size", "1K"), OC_ERR_CONFIG);
    assert_int_equal(c.size, 8192);
    assert_status(oc__config_set(table, &c, "utest-mode", "x"), OC_ERR_CONFIG);
    assert_int_equal(c.mode, 0);
    /* unknown names, and the OC_ prefix is not part of the name */
    assert_status(oc__config_set(table, &c, "nope", "1"), OC_ERR_CONFIG);
    assert_status(oc__config_set(table, &c, "", "1"), OC_ERR_CONFIG);
    assert_status(oc__config_set(table, &c, "UTEST_COUN", "1"), OC_ERR_CONFIG);
    assert_status(oc__config_set(table, &c, "UTEST_COUNTX", "1"), OC_ERR_CONFIG);
    assert_status(oc__config_set(table, &c, "OC_UTEST_COUNT", "1"),
                  OC_ERR_CONFIG);
    assert_int_equal(c.count, 97);
}

static char *dump(const void *cfg)
{
    char *text = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&text, &n);

    assert_non_null(f);
    oc__config_dump(f, "utest", table, cfg);
    assert_int_equal(fclose(f), 0);
    assert_non_null(text);
    return text;
}

static void assert_contains(const char *hay, const char *needle)
{
    if (hay == NULL)
        fail_msg("no listing");
    else if (strstr(hay, needle) == NULL)
        fail_msg("\"%s\" not in the listing:\n%s", needle, hay);
}

static void test_config_dump(void **state)
{
    tcfg_t c;
    char *text, *copy, *line, *save = NULL;
    char words[1024] = "";

    assert_status(load_with(NULL, NULL, &c), OC_OK);
    c.count = 123;
    c.flag = 1;
    c.mode = 1;
    strcpy(c.name, "cur-name");
    text = dump(&c);
    assert_contains(text, "# utest\n");
    assert_contains(text, "How many things; 16 is enough.");
    assert_contains(text, "# default: 16\n");
    assert_contains(text, "OC_UTEST_COUNT=123\n");
    assert_contains(text, "# default: 64K\n");
    assert_contains(text, "OC_UTEST_SIZE=65536\n");
    assert_contains(text, "# default: n\n");
    assert_contains(text, "OC_UTEST_FLAG=y\n");
    assert_contains(text, "# default: dflt-name\n");
    assert_contains(text, "OC_UTEST_NAME=cur-name\n");
    assert_contains(text, "# default: auto\n");
    assert_contains(text, "OC_UTEST_MODE=agent\n");
    assert_contains(text, "Turn the thing on.");
    assert_contains(text, "Placement.");

    /* the long description is wrapped, and no word is lost or split */
    copy = strdup(text);
    for (line = strtok_r(copy, "\n", &save); line;
         line = strtok_r(NULL, "\n", &save)) {
        if (strlen(line) > 78)
            fail_msg("line too long (%zu): %s", strlen(line), line);
        if (strncmp(line, "# ", 2) == 0 &&
            (strstr(LONG_DOC, line + 2) != NULL)) {
            if (words[0])
                strcat(words, " ");
            strcat(words, line + 2);
        }
    }
    assert_string_equal(words, LONG_DOC);
    free(copy);
    free(text);
}

static void test_config_dump_defaults(void **state)
{
    char *text;

    /* without a config struct the listing shows the built-in defaults */
    clear_env(NULL);
    text = dump(NULL);
    assert_contains(text, "OC_UTEST_COUNT=16\n");
    assert_contains(text, "OC_UTEST_SIZE=64K\n");
    assert_contains(text, "OC_UTEST_FLAG=n\n");
    assert_contains(text, "OC_UTEST_NAME=dflt-name\n");
    assert_contains(text, "OC_UTEST_MODE=auto\n");
    assert_contains(text, "# default: 16\n");
    free(text);
}

/* ------------------------------------------------- issue #10: hostile use */

/* Run @p fn with stderr (fd 2) going to a file; return what it wrote
 * (malloc'd). */
static char *capture_stderr(void (*fn)(void))
{
    char path[] = "/tmp/oc-test-log.XXXXXX";
    int fd = mkstemp(path), saved = dup(2);
    char *buf;
    off_t n;

    assert_true(fd >= 0 && saved >= 0);
    unlink(path);
    dup2(fd, 2);
    fn();
    dup2(saved, 2);
    close(saved);
    n = lseek(fd, 0, SEEK_END);
    buf = calloc(1, (size_t)n + 1);
    assert_non_null(buf);
    assert_int_equal(pread(fd, buf, (size_t)n, 0), n);
    close(fd);
    return buf;
}

static size_t count_lines(const char *s, const char *needle)
{
    size_t n = 0;
    for (const char *p = s; (p = strstr(p, needle)) != NULL; p++)
        n++;
    return n;
}

static oc_log_limit_t lim_test = OC_LOG_LIMIT_INIT("test warnings");

static void flood_log(void)
{
    for (int i = 0; i < 1000; i++)
        oc_warn_limited(&lim_test, OC_COMP_AGENT, "peer %d sent junk", i);
}

static void after_a_second(void)
{
    struct timespec ts = {1, 50 * 1000 * 1000};
    nanosleep(&ts, NULL);
    assert_int_equal(oc__log_limits_flush(), 1);
}

/* 1,000 peer-caused warnings in a burst print oc__log_rate() lines, then
 * one summary with the count of the rest (finding 3). */
static void test_log_rate_limit(void **state)
{
    char *out;

    unsetenv("OC_LOG");
    oc__log_set_rate(0); /* the default */
    assert_int_equal(oc__log_rate(), 10);
    out = capture_stderr(flood_log);
    assert_int_equal(count_lines(out, "sent junk"), 10);
    assert_int_equal(count_lines(out, "\n"), 10);
    free(out);
    assert_int_equal(oc__log_limit_suppressed(&lim_test), 990);
    out = capture_stderr(after_a_second);
    assert_non_null(strstr(out, "990 similar messages suppressed"));
    assert_non_null(strstr(out, "test warnings"));
    free(out);
}

/* Cap: the oldest pending connection makes room; settled ones never do.
 * Deadline: pending ones expire oldest first. */
static void test_guard_cap_and_deadline(void **state)
{
    oc_guard_params_t p = {3, 1000, 100};
    oc_guard_slot_t s[5], *ev;
    oc_guard_counters_t c;
    oc_guard_t g;
    uint64_t t = 1000000;

    oc__guard_init(&g, "test", &p);
    for (int i = 0; i < 3; i++) {
        assert_true(oc__guard_admit(&g, &ev));
        assert_null(ev);
        oc__guard_add(&g, &s[i], t + (uint64_t)i);
    }
    oc__guard_settle(&g, &s[0]); /* authenticated */
    assert_true(oc__guard_admit(&g, &ev));
    assert_ptr_equal(ev, &s[1]); /* oldest pending, not s[0] */
    oc__guard_remove(&g, ev);
    oc__guard_add(&g, &s[3], t + 10);
    assert_null(oc__guard_expired(&g, t + 999999));
    assert_ptr_equal(oc__guard_expired(&g, t + 1000002), &s[2]);
    assert_null(oc__guard_expired(&g, t + 1000002));
    assert_ptr_equal(oc__guard_expired(&g, t + 2000000), &s[3]);
    oc__guard_remove(&g, &s[2]);
    oc__guard_remove(&g, &s[3]);
    oc__guard_remove(&g, &s[3]); /* idempotent */
    assert_int_equal(g.nconns, 1);
    /* full of settled connections: refused */
    oc__guard_add(&g, &s[1], t);
    oc__guard_add(&g, &s[2], t);
    oc__guard_settle(&g, &s[1]);
    oc__guard_settle(&g, &s[2]);
    assert_false(oc__guard_admit(&g, &ev));
    oc__guard_counters(&g, &c);
    assert_int_equal(c.evicted, 1);
    assert_int_equal(c.refused, 1);
    assert_int_equal(c.expired, 2);
    assert_int_equal(oc__guard_wait_ms(&g, t, 100), 100);
}

/* Out of descriptors: accept fails with EMFILE, and the listener is left
 * alone for the back-off instead of being retried at once (finding 1). */
static void test_guard_emfile_backoff(void **state)
{
    oc_guard_params_t p = {16, 1000, 200};
    struct sockaddr_un sun = {.sun_family = AF_UNIX};
    struct rlimit rl, low;
    oc_guard_counters_t c;
    oc_guard_t g;
    int lfd, cfd, fd = -1, probe, wait = -1;
    uint64_t now;

    oc__guard_init(&g, "test", &p);
    snprintf(sun.sun_path + 1, sizeof(sun.sun_path) - 1, "oc-guard-%d",
             (int)getpid()); /* abstract: nothing to clean up */
    lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
    assert_int_equal(bind(lfd, (struct sockaddr *)&sun, sizeof(sun)), 0);
    assert_int_equal(listen(lfd, 4), 0);
    cfd = socket(AF_UNIX, SOCK_STREAM, 0);
    assert_int_equal(connect(cfd, (struct sockaddr *)&sun, sizeof(sun)), 0);
    /* no descriptor left: the lowest free number becomes the limit */
    probe = dup(0);
    close(probe);
    assert_int_equal(getrlimit(RLIMIT_NOFILE, &rl), 0);
    low = rl;
    low.rlim_cur = (rlim_t)probe;
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
    assert_status(oc__guard_accept(&g, lfd, &fd, NULL, NULL),
                  OC_ERR_NO_RESOURCE);
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &rl), 0);
    now = oc__now_us();
    assert_false(oc__guard_listen_ok(&g, now, &wait));
    assert_true(wait > 0 && wait <= 200);
    assert_true(oc__guard_listen_ok(&g, now + 201000, NULL));
    oc__guard_counters(&g, &c);
    assert_int_equal(c.backoffs, 1);
    /* with descriptors back, the waiting connection is taken */
    assert_status(oc__guard_accept(&g, lfd, &fd, NULL, NULL), OC_OK);
    close(fd);
    close(cfd);
    close(lfd);
}

/* The same verdicts for an accept made elsewhere (offcore-nvmf's io_uring
 * accept hands its completion's result in): a listener failing with
 * EMFILE from a ring was retried at once, forever, before. */
static void test_guard_accept_result(void **state)
{
    oc_guard_params_t p = {16, 1000, 200};
    oc_guard_counters_t c;
    oc_guard_t g;
    uint64_t now;

    (void)state;
    oc__guard_init(&g, "test", &p);
    assert_status(oc__guard_accept_result(&g, 7), OC_OK);
    assert_status(oc__guard_accept_result(&g, -EAGAIN), OC_INPROGRESS);
    assert_status(oc__guard_accept_result(&g, -ECONNABORTED), OC_INPROGRESS);
    now = oc__now_us();
    assert_true(oc__guard_listen_ok(&g, now, NULL));
    assert_status(oc__guard_accept_result(&g, -EMFILE), OC_ERR_NO_RESOURCE);
    assert_int_equal(g.accept_errno, EMFILE);
    assert_false(oc__guard_listen_ok(&g, oc__now_us(), NULL));
    oc__guard_resume(&g);
    assert_status(oc__guard_accept_result(&g, -EBADF), OC_ERR_TRANSPORT);
    assert_false(oc__guard_listen_ok(&g, oc__now_us(), NULL));
    oc__guard_counters(&g, &c);
    assert_int_equal(c.accepted, 1);
    assert_int_equal(c.backoffs, 2);
}

/* Out of descriptors below the cap: the connections that fit under the
 * limit become the cap, less a reserve the server keeps for its own
 * descriptors (a flood would take each freed one at once, and a real job
 * then hangs: hostile-flood); newcomers then evict the oldest pending
 * connection under it; raising the limit lifts it. */
static void test_guard_fd_short(void **state)
{
    oc_guard_params_t p = {200, 1000, 100};
    oc_guard_slot_t s[101], *ev;
    struct rlimit rl, low;
    oc_guard_t g;
    uint64_t t = 1000;
    uint32_t cap;

    (void)state;
    oc__guard_init(&g, "test", &p);
    for (int i = 0; i < 100; i++) {
        assert_true(oc__guard_admit(&g, &ev));
        assert_null(ev);
        oc__guard_add(&g, &s[i], t + (uint64_t)i);
    }
    oc__guard_settle(&g, &s[0]); /* a rank: never shed */
    assert_int_equal(getrlimit(RLIMIT_NOFILE, &rl), 0);
    low = rl;
    low.rlim_cur = rl.rlim_cur - 1;
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
    /* 100 open, 97 of them under the limit (3 above it free nothing under
     * it when closed): the cap is 97 less the reserve, whatever is open */
    assert_int_equal(oc__guard_fd_short(&g, 97), 3 + OC_GUARD_FD_RESERVE);
    cap = 97 - OC_GUARD_FD_RESERVE;
    assert_int_equal(g.fd_cap, cap);
    for (int i = 0; i < 3 + (int)OC_GUARD_FD_RESERVE; i++) {
        oc_guard_slot_t *x = oc__guard_shed(&g);
        assert_ptr_equal(x, &s[1 + i]); /* oldest pending first */
        oc__guard_remove(&g, x);
    }
    assert_int_equal(g.nconns, cap);
    /* at the lowered cap a newcomer takes the oldest handshake's place */
    assert_true(oc__guard_admit(&g, &ev));
    assert_ptr_equal(ev, &s[1 + 3 + OC_GUARD_FD_RESERVE]);
    oc__guard_remove(&g, ev);
    oc__guard_add(&g, &s[100], t + 200);
    assert_int_equal(g.nconns, cap);
    /* more room than the cap (descriptors came back) never raises it for
     * the same limit */
    assert_int_equal(oc__guard_fd_short(&g, cap + 40), 0);
    assert_int_equal(g.fd_cap, cap);
    /* out again under it: the server's own descriptors took 5 of the
     * reserve; the cap goes down so that the reserve is whole again */
    assert_int_equal(oc__guard_fd_short(&g, cap - 5),
                     5 + OC_GUARD_FD_RESERVE);
    assert_int_equal(g.fd_cap, cap - 5 - OC_GUARD_FD_RESERVE);
    /* not lifted while the limit stays, nor before a second has passed */
    assert_false(oc__guard_fd_relax(&g, oc__now_us() + 2000000u));
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &rl), 0);
    assert_false(oc__guard_fd_relax(&g, 0));
    assert_true(oc__guard_fd_relax(&g, oc__now_us() + 4000000u));
    assert_int_equal(g.fd_cap, 0);
    assert_true(oc__guard_admit(&g, &ev));
    assert_null(ev);
    /* a server with nothing to shed is told to shed nothing extra */
    for (int i = 0; i < 101; i++)
        oc__guard_remove(&g, &s[i]);
    assert_int_equal(oc__guard_fd_short(&g, 0), 0);
    assert_int_equal(g.fd_cap, 1);
}

/* A misspelt OC_ variable is reported, with the setting it resembles. */
static void check_env(void)
{
    static const char *const also[] = {"OC_UTEST_OTHER", NULL};
    int saved;

    oc__log_enabled(OC_COMP_UTIL, OC_LOG_WARN); /* initialised */
    saved = oc__log_levels[OC_COMP_UTIL];
    oc__log_levels[OC_COMP_UTIL] = OC_LOG_WARN; /* main() quietens util */
    setenv("OC_UTEST_CUONT", "3", 1);
    setenv("OC_UTEST_OTHER", "1", 1);
    setenv("OC_UTEST_ZZZZZZZZZZZZ", "1", 1);
    assert_int_equal(oc__config_check_env(table, "UTEST_", also), 2);
    unsetenv("OC_UTEST_CUONT");
    unsetenv("OC_UTEST_OTHER");
    unsetenv("OC_UTEST_ZZZZZZZZZZZZ");
    oc__log_levels[OC_COMP_UTIL] = saved;
}

static void test_config_unknown_env(void **state)
{
    char *out = capture_stderr(check_env);
    assert_non_null(strstr(out, "OC_UTEST_CUONT, ignored (did you mean "
                                "OC_UTEST_COUNT?)"));
    assert_non_null(strstr(out, "OC_UTEST_ZZZZZZZZZZZZ, ignored"));
    assert_null(strstr(out, "OC_UTEST_OTHER"));
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_status_names),
        cmocka_unit_test(test_status_all_values_listed),
        cmocka_unit_test(test_status_unknown),
        cmocka_unit_test(test_log_parse_good),
        cmocka_unit_test(test_log_parse_bad),
        cmocka_unit_test_setup(test_config_defaults, clear_env),
        cmocka_unit_test_setup(test_config_env_uint, clear_env),
        cmocka_unit_test_setup(test_config_env_size, clear_env),
        cmocka_unit_test_setup(test_config_env_bool, clear_env),
        cmocka_unit_test_setup(test_config_env_string_enum, clear_env),
        cmocka_unit_test_setup(test_config_env_several, clear_env),
        cmocka_unit_test_setup(test_config_bad_default, clear_env),
        cmocka_unit_test_setup(test_config_set, clear_env),
        cmocka_unit_test_setup(test_config_dump, clear_env),
        cmocka_unit_test_setup(test_config_dump_defaults, clear_env),
        cmocka_unit_test(test_log_rate_limit),
        cmocka_unit_test(test_guard_cap_and_deadline),
        cmocka_unit_test(test_guard_emfile_backoff),
        cmocka_unit_test(test_guard_accept_result),
        cmocka_unit_test(test_guard_fd_short),
        cmocka_unit_test_setup(test_config_unknown_env, clear_env),
    };
    /* bad values are logged at error level; keep the test output short */
    setenv("OC_LOG", "util:error", 0);
    return cmocka_run_group_tests_name("util", tests, NULL, NULL);
}
