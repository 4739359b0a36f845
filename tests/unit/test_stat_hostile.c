/*
 * test_stat_hostile.c — `offcore stat` against exporters that are not a
 * healthy offcored (issue #10, findings 6-8): a fake HTTP server on
 * loopback answers each connection with canned bytes, and oc__stat_main()
 * must escape what it prints, refuse what is not an offcored with exit 3,
 * and tell a refused connection, a timeout, a protocol error, a malformed
 * and an unsupported address apart (exit 1, 1, 3, 2, 2).
 *
 * Uses only oc__stat_main(), so the same file builds against older trees
 * (which is how it was checked to fail before the fix).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tools/stat.h"

/* ------------------------------------------------------------ fake server */

typedef struct {
    int lfd;
    uint16_t port;
    const char *answer; /* NULL: accept, read, never answer */
    size_t len;
    pthread_t thr;
} fake_t;

static void *serve(void *arg)
{
    fake_t *f = arg;
    int fd = accept(f->lfd, NULL, NULL);
    char req[4096];
    size_t got = 0;

    if (fd < 0)
        return NULL;
    /* the whole request head, then the canned answer */
    while (got < sizeof(req) - 1) {
        ssize_t n = read(fd, req + got, sizeof(req) - 1 - got);
        if (n <= 0)
            break;
        got += (size_t)n;
        req[got] = '\0';
        if (strstr(req, "\r\n\r\n") != NULL)
            break;
    }
    if (f->answer != NULL) {
        (void)!write(fd, f->answer, f->len);
        shutdown(fd, SHUT_WR);
    }
    /* hold it until the client leaves (the timeout case) */
    while (read(fd, req, sizeof(req)) > 0)
        ;
    close(fd);
    return NULL;
}

static void fake_start(fake_t *f, const char *answer)
{
    struct sockaddr_in in = {.sin_family = AF_INET};
    socklen_t sl = sizeof(in);
    int one = 1;

    f->answer = answer;
    f->len = answer != NULL ? strlen(answer) : 0;
    in.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    f->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(f->lfd >= 0);
    setsockopt(f->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    assert_int_equal(bind(f->lfd, (struct sockaddr *)&in, sizeof(in)), 0);
    assert_int_equal(listen(f->lfd, 4), 0);
    assert_int_equal(getsockname(f->lfd, (struct sockaddr *)&in, &sl), 0);
    f->port = ntohs(in.sin_port);
    assert_int_equal(pthread_create(&f->thr, NULL, serve, f), 0);
}

static void fake_stop(fake_t *f)
{
    shutdown(f->lfd, SHUT_RDWR); /* ends an accept() nobody reached */
    pthread_join(f->thr, NULL);
    close(f->lfd);
}

/* ------------------------------------------------------------ running */

typedef struct {
    char *out, *err;
    size_t out_len, err_len;
    int rc;
} run_t;

static void run_stat(run_t *r, const char *agent)
{
    char *argv[] = {"stat", "--agent", (char *)agent, NULL};
    FILE *out, *err;

    memset(r, 0, sizeof(*r));
    out = open_memstream(&r->out, &r->out_len);
    err = open_memstream(&r->err, &r->err_len);
    assert_non_null(out);
    assert_non_null(err);
    r->rc = oc__stat_main(3, argv, out, err);
    fclose(out);
    fclose(err);
}

static void run_free(run_t *r)
{
    free(r->out);
    free(r->err);
}

/* Serve @p answer once, run stat against it; the caller frees *r. */
static void against(run_t *r, const char *answer)
{
    fake_t f;
    char addr[32];

    fake_start(&f, answer);
    snprintf(addr, sizeof(addr), "127.0.0.1:%u", (unsigned)f.port);
    run_stat(r, addr);
    fake_stop(&f);
}

#define HTTP_OK(body)                                                          \
    "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\n"          \
    "Connection: close\r\n\r\n" body

/* ------------------------------------------------------------ tests */

/* [6] label values are printed with control characters escaped */
static void test_escapes_labels(void **state)
{
    run_t r;

    (void)state;
    against(&r, HTTP_OK(
        "offcore_agent_info{node=\"0\",version=\"\x1b[31mred\"} 1\n"
        "offcore_job_ranks{job=\"\x1b]0;owned\x07\"} 2\n"
        "offcore_thread_messages_total{thread=\"\xc2\x9b" "2J\"} 5\n"
        "offcore_custom_total{who=\"\x1b[2J\"} 1\n"));
    if (r.rc != 0)
        fail_msg("exit %d: %s", r.rc, r.err);
    if (memchr(r.out, 0x1b, r.out_len) != NULL ||
        memchr(r.out, 0x07, r.out_len) != NULL ||
        strstr(r.out, "\xc2\x9b") != NULL)
        fail_msg("raw control characters reached the terminal:\n%s", r.out);
    assert_non_null(strstr(r.out, "\\x1b[31mred"));
    assert_non_null(strstr(r.out, "\\x1b]0;owned\\x07"));
    assert_non_null(strstr(r.out, "\\u009b2J"));
    assert_non_null(strstr(r.out, "\\x1b[2J"));
    run_free(&r);
}

/* [7] an empty answer, or another exporter, is no offcored: exit 3 */
static void test_not_offcored(void **state)
{
    run_t r;

    (void)state;
    against(&r, HTTP_OK(""));
    assert_int_equal(r.rc, 3);
    assert_string_equal(r.out, "");
    assert_non_null(strstr(r.err, "not as offcored"));
    assert_non_null(strstr(r.err, "no metrics at all"));
    run_free(&r);

    against(&r, HTTP_OK("# TYPE node_load1 gauge\nnode_load1 0.5\n"
                        "go_goroutines 8\n"));
    assert_int_equal(r.rc, 3);
    assert_string_equal(r.out, "");
    assert_non_null(strstr(r.err, "not as offcored"));
    run_free(&r);
}

/* [8] protocol errors are not "no agent answers" */
static void test_protocol_errors(void **state)
{
    static const char *const bad[] = {
        "SSH-2.0-OpenSSH_9.2\r\n",                     /* not HTTP at all */
        "HTTP/1.1 200 OK\r\nContent-Length: 999\r\n\r\n"
        "offcore_agent_info 1\n",                      /* body cut short */
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
        "zz\r\nnot a chunk\r\n",                       /* bad chunking */
        "HTTP/1.1 200 OK\r\nContent-Length: -5\r\n\r\n", /* bad length */
    };
    run_t r;

    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        against(&r, bad[i]);
        if (r.rc != 3 || strstr(r.err, "no agent answers") != NULL ||
            strstr(r.err, "is offcored running") != NULL)
            fail_msg("answer %zu: exit %d, %s", i, r.rc, r.err);
        run_free(&r);
    }
}

/* [8] refused and timed out: exit 1, each said as what it is */
static void test_refused_and_timeout(void **state)
{
    fake_t f;
    char addr[32];
    run_t r;

    (void)state;
    fake_start(&f, NULL); /* accepts, never answers */
    snprintf(addr, sizeof(addr), "127.0.0.1:%u", (unsigned)f.port);
    run_stat(&r, addr);
    fake_stop(&f);
    assert_int_equal(r.rc, 1);
    assert_non_null(strstr(r.err, "did not answer within"));
    assert_null(strstr(r.err, "is offcored running"));
    run_free(&r);

    /* the same port, now closed: refused */
    run_stat(&r, addr);
    assert_int_equal(r.rc, 1);
    assert_non_null(strstr(r.err, "connection refused"));
    run_free(&r);
}

/* [8] malformed and unsupported addresses: exit 2, said before any I/O */
static void test_bad_addresses(void **state)
{
    static const struct {
        const char *addr, *want;
    } cases[] = {
        {"unix:/run/offcore/offcored.sock", "unsupported address"},
        {"/run/offcore/offcored.sock", "unsupported address"},
        {"tcp:127.0.0.1:7000", "unsupported address"},
        {"ftp://127.0.0.1:9464/metrics", "unsupported scheme"},
        {"127.0.0.1:abc", "malformed address"},
        {"127.0.0.1:99999", "malformed address"},
        {"127.0.0.1:", "malformed address"},
        {"bad host:9464", "malformed address"},
        {"[zz::1]:9464", "malformed address"},
    };
    run_t r;

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        run_stat(&r, cases[i].addr);
        if (r.rc != 2 || strstr(r.err, cases[i].want) == NULL)
            fail_msg("'%s': exit %d, %s", cases[i].addr, r.rc, r.err);
        run_free(&r);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_escapes_labels),
        cmocka_unit_test(test_not_offcored),
        cmocka_unit_test(test_protocol_errors),
        cmocka_unit_test(test_refused_and_timeout),
        cmocka_unit_test(test_bad_addresses),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
