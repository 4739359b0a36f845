/*
 * test_secret.c — key files (util/secret.h): what is read, what is
 * refused and with which reason (mode, owner, symlink, FIFO, directory,
 * length), and the hex decoding every key reader shares.
 * Single-threaded; makes its files under a fresh /tmp directory.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "util/secret.h"

static char dir[] = "/tmp/oc-secret-XXXXXX";

static const char *put(const char *name, const char *text, mode_t mode)
{
    static char path[128];
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    assert_int_equal(chmod(path, mode), 0);
    return path;
}

static void refused(const char *path, size_t cap, const char *want)
{
    uint8_t buf[64];
    char why[512] = "";
    size_t n = 99;

    assert_int_equal(oc__secret_read(path, buf, cap, &n, why, sizeof(why)),
                     OC_ERR_CONFIG);
    assert_int_equal(n, 99); /* untouched */
    if (strstr(why, want) == NULL)
        fail_msg("%s: reason '%s' lacks '%s'", path, why, want);
    assert_null(strstr(why, "s3cret")); /* never the contents */
}

static void test_read(void **state)
{
    uint8_t buf[64];
    char why[512], link[160], fifo[160];
    size_t n = 0;
    const char *p;

    (void)state;
    p = put("ok.key", "s3cret\n", 0600);
    assert_int_equal(oc__secret_read(p, buf, sizeof(buf), &n, why, sizeof(why)),
                     OC_OK);
    assert_int_equal(n, 7);
    assert_memory_equal(buf, "s3cret\n", 7);
    p = put("400.key", "s3cret", 0400);
    assert_int_equal(oc__secret_read(p, buf, sizeof(buf), &n, why, sizeof(why)),
                     OC_OK);

    refused(put("open.key", "s3cret", 0644), 64,
            "mode 644 lets others read it (chmod 600 ");
    refused(put("group.key", "s3cret", 0640), 64, "mode 640");
    /* a file as long as the buffer is no key */
    refused(put("long.key", "s3cret-and-more", 0600), 15, "larger than 14 bytes");
    refused("/nonexistent/oc.key", 64, "No such file");

    snprintf(link, sizeof(link), "%s/link.key", dir);
    assert_int_equal(symlink(put("target.key", "s3cret", 0600), link), 0);
    refused(link, 64, "symbolic link");
    unlink(link);

    /* refused at once, never waited on for a writer */
    snprintf(fifo, sizeof(fifo), "%s/fifo.key", dir);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    refused(fifo, 64, "not a regular file (a FIFO)");
    unlink(fifo);
    refused(dir, 64, "not a regular file (a directory)");

    if (geteuid() == 0) { /* only root can give a file away */
        p = put("other.key", "s3cret", 0600);
        assert_int_equal(chown(p, 4242, 4242), 0);
        refused(p, 64, "owned by uid 4242");
    }
}

static long hex(const char *s, uint8_t *out)
{
    return oc__secret_hex((const uint8_t *)s, strlen(s), out, 4);
}

static void test_hex(void **state)
{
    uint8_t out[4];
    (void)state;

    assert_int_equal(hex("0x0aFf", out), 2);
    assert_int_equal(out[0], 0x0a);
    assert_int_equal(out[1], 0xff);
    /* blanks anywhere, a trailing newline */
    assert_int_equal(hex(" 01 02\r\n0304\n", out), 4);
    assert_int_equal(out[3], 4);
    assert_int_equal(hex("", out), 0);
    /* not hex text at all: -1; hex but wrong: -2 */
    assert_int_equal(hex("01g2", out), -1);
    assert_int_equal(hex("0x-1", out), -1);
    assert_int_equal(hex("012", out), -2);
    assert_int_equal(hex("0102030405", out),
                     -2);
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
        cmocka_unit_test(test_hex),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
