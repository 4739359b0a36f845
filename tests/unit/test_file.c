/*
 * test_file.c — the file loader (util/file.h): what is read whole,
 * what is refused at once and with which reason (FIFO, device, directory,
 * socket, too large, growing past the cap, descriptor limit), that no
 * message quotes the file's contents, and that a FIFO never waits.
 * Single-threaded; makes its files under a fresh /tmp directory.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "util/file.h"

static char dir[] = "/tmp/oc-file-XXXXXX";
static const oc_file_rules_t rules = {.what = "rules file", .max_bytes = 64};

static const char *put(const char *name, const char *text)
{
    static char path[128];
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    return path;
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + t.tv_nsec / 1e9;
}

static void refused(const char *path, const oc_file_rules_t *r,
                    const char *want)
{
    char *buf = (char *)0x1, why[512] = "";
    size_t n = 99;
    double t0 = now_s();

    assert_int_equal(oc__file_read(path, r, &buf, &n, why, sizeof(why)),
                     OC_ERR_CONFIG);
    assert_true(now_s() - t0 < 1.0); /* at once: nothing waited on */
    assert_int_equal(n, 99);          /* outputs untouched */
    assert_ptr_equal(buf, (char *)0x1);
    if (strstr(why, want) == NULL)
        fail_msg("%s: reason '%s' lacks '%s'", path, why, want);
    if (strncmp(why, r->what, strlen(r->what)) != 0)
        fail_msg("reason '%s' does not start with '%s'", why, r->what);
    assert_null(strstr(why, "s3cret")); /* never the contents */
}

static void test_read(void **state)
{
    char *buf = NULL, why[256];
    size_t n = 0;
    char exact[65];
    const char *p;

    (void)state;
    p = put("ok.rules", "rule id=1 action=allow\n");
    assert_int_equal(oc__file_read(p, &rules, &buf, &n, why, sizeof(why)),
                     OC_OK);
    assert_int_equal(n, 23);
    assert_string_equal(buf, "rule id=1 action=allow\n"); /* NUL after */
    free(buf);

    /* empty, and exactly max_bytes: read; one byte more: refused */
    p = put("empty.rules", "");
    assert_int_equal(oc__file_read(p, &rules, &buf, &n, why, sizeof(why)),
                     OC_OK);
    assert_int_equal(n, 0);
    assert_int_equal(buf[0], '\0');
    free(buf);
    memset(exact, 's', 64);
    exact[64] = '\0';
    p = put("exact.rules", exact);
    assert_int_equal(oc__file_read(p, &rules, &buf, &n, why, sizeof(why)),
                     OC_OK);
    assert_int_equal(n, 64);
    free(buf);
    refused(put("big.rules", "s3cret-s3cret-s3cret-s3cret-s3cret-s3cret-"
                             "s3cret-s3cret-s3cret-s3cret\n"),
            &rules, "larger than 64 bytes");

    /* a symbolic link is followed unless the rules say private */
    {
        char link[160];
        snprintf(link, sizeof(link), "%s/link.rules", dir);
        assert_int_equal(symlink(put("target.rules", "x\n"), link), 0);
        assert_int_equal(oc__file_read(link, &rules, &buf, &n, why,
                                       sizeof(why)), OC_OK);
        free(buf);
        const oc_file_rules_t priv = {"key file", 64, OC_FILE_PRIVATE};
        refused(link, &priv, "a symbolic link");
        unlink(link);
    }
    refused("/nonexistent/oc.rules", &rules, "No such file");
}

static void test_not_regular(void **state)
{
    char fifo[160], sock[100];
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    int s;

    (void)state;
    /* a FIFO with no writer: refused at once, never waited on */
    snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    refused(fifo, &rules, "not a regular file (a FIFO)");
    unlink(fifo);
    /* /dev/zero would be read for ever; devices are refused unread */
    refused("/dev/zero", &rules, "not a regular file (a character device)");
    refused(dir, &rules, "not a regular file (a directory)");
    snprintf(sock, sizeof(sock), "%s/sock", dir);
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock);
    s = socket(AF_UNIX, SOCK_STREAM, 0);
    assert_true(s >= 0);
    assert_int_equal(bind(s, (struct sockaddr *)&sa, sizeof(sa)), 0);
    refused(sock, &rules, "No such device or address"); /* open(2): ENXIO */
    close(s);
}

static void test_growing(void **state)
{
    char *buf = NULL, why[256];
    size_t n = 0;
    const oc_file_rules_t big = {"config file", 1 << 20, 0};

    (void)state;
    /* /proc files say size 0 and have more: read up to the cap */
    assert_int_equal(oc__file_read("/proc/self/status", &big, &buf, &n, why,
                                   sizeof(why)), OC_OK);
    assert_true(n > 100);
    assert_non_null(strstr(buf, "Name:"));
    free(buf);
    refused("/proc/self/status", &rules, "larger than 64 bytes");
}

static void test_fd_limit(void **state)
{
    struct rlimit old, low;
    int fds[64], n = 0;
    char path[128];

    (void)state;
    snprintf(path, sizeof(path), "%s", put("ok2.rules", "x\n"));
    assert_int_equal(getrlimit(RLIMIT_NOFILE, &old), 0);
    low = old;
    low.rlim_cur = 16;
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
    while (n < 64 && (fds[n] = dup(0)) >= 0)
        n++;
    refused(path, &rules, "the descriptor limit");
    while (n > 0)
        close(fds[--n]);
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &old), 0);
}

static void test_fd(void **state)
{
    char buf[8], why[256];
    size_t n = 0;
    const oc_file_rules_t key = {"key file", 7, OC_FILE_PRIVATE};
    const char *p = put("k", "s3cret\n");
    int fd;

    (void)state;
    assert_int_equal(chmod(p, 0600), 0);
    assert_int_equal(oc__file_open(p, &key, &fd, why, sizeof(why)), OC_OK);
    assert_int_equal(oc__file_read_fd(fd, p, &key, buf, sizeof(buf), &n, why,
                                      sizeof(why)), OC_OK);
    close(fd);
    assert_int_equal(n, 7);
    p = put("k2", "s3cret-\n");
    assert_int_equal(chmod(p, 0600), 0);
    /* fstat sees 8 > 7 */
    assert_int_equal(oc__file_open(p, &key, &fd, why, sizeof(why)),
                     OC_ERR_CONFIG);
    assert_non_null(strstr(why, "larger than 7 bytes"));
    assert_int_equal(chmod(p, 0644), 0);
    assert_int_equal(oc__file_open(p, &key, &fd, why, sizeof(why)),
                     OC_ERR_CONFIG);
    assert_non_null(strstr(why, "lets others read it"));
}

static void test_size_str(void **state)
{
    char b[32];
    (void)state;
    assert_string_equal(oc__file_size_str(64u << 20, b, sizeof(b)), "64 MiB");
    assert_string_equal(oc__file_size_str(4096, b, sizeof(b)), "4 KiB");
    assert_string_equal(oc__file_size_str(100, b, sizeof(b)), "100 bytes");
}

static int setup(void **state)
{
    (void)state;
    return mkdtemp(dir) == NULL ? -1 : 0;
}

static int teardown(void **state)
{
    char cmd[64];
    (void)state;
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_read),
        cmocka_unit_test(test_not_regular),
        cmocka_unit_test(test_growing),
        cmocka_unit_test(test_fd_limit),
        cmocka_unit_test(test_fd),
        cmocka_unit_test(test_size_str),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
