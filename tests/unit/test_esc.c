/*
 * test_esc.c — escaping for logs and terminals (util/esc.h), and the
 * sinks that apply it: the log writer (util/log.h) and the config error
 * list (util/kv.h).  Single-threaded; captures stderr through a pipe.
 */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "util/esc.h"
#include "util/kv.h"
#include "util/log.h"

static void test_esc(void **state)
{
    char out[64], again[64];

    (void)state;
    assert_int_equal(oc__esc("abc", 3, out, sizeof(out)), 3);
    assert_string_equal(out, "abc");
    /* ESC, BEL, DEL, 0xff, a newline, a tab: each \xNN */
    oc__esc("\x1b[31mX\a\x7f\xff\n\t", 11, out, sizeof(out));
    assert_string_equal(out, "\\x1b[31mX\\x07\\x7f\\xff\\x0a\\x09");
    /* a NUL inside the span is a byte like the others */
    assert_int_equal(oc__esc("a\0b", 3, out, sizeof(out)), 6);
    assert_string_equal(out, "a\\x00b");
    /* idempotent: a backslash is kept, so escaping again changes nothing */
    oc__esc_str("\x1b" "a\\b", out, sizeof(out));
    assert_string_equal(oc__esc_str(out, again, sizeof(again)), out);
    assert_string_equal(out, "\\x1ba\\b");
    /* cut before an escape that does not fit whole */
    assert_int_equal(oc__esc("ab\x1b", 3, out, 6), 2);
    assert_string_equal(out, "ab");
    assert_int_equal(oc__esc("ab\x1b", 3, out, 7), 6);
    assert_int_equal(oc__esc("abc", 3, out, 1), 0);
    assert_string_equal(out, "");
    assert_int_equal(oc__esc("abc", 3, out, 0), 0);
    assert_true(oc__esc_clean("a b~", 4));
    assert_false(oc__esc_clean("a\tb", 3));
    assert_false(oc__esc_clean("\xc3\xa9", 2));
}

/* Run @p fn with fd 2 sent into a pipe; the text it wrote, in @p buf. */
static void capture(void (*fn)(void), char *buf, size_t cap)
{
    int p[2], saved = dup(2);
    ssize_t n;

    assert_int_equal(pipe(p), 0);
    assert_int_equal(dup2(p[1], 2), 2);
    close(p[1]);
    fn();
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    n = read(p[0], buf, cap - 1);
    close(p[0]);
    assert_true(n > 0);
    buf[n] = '\0';
}

static void log_hostile(void)
{
    oc_error(OC_COMP_APP, "host %s connected", "nqn.evil\x1b]0;pwned\a\xff\nforged");
}

static void test_log(void **state)
{
    char buf[2048];

    (void)state;
    capture(log_hostile, buf, sizeof(buf));
    /* one line, and none of the raw bytes */
    assert_non_null(strstr(buf, "host nqn.evil\\x1b]0;pwned\\x07\\xff\\x0aforged "
                                "connected\n"));
    assert_ptr_equal(strchr(buf, '\n'), buf + strlen(buf) - 1);
    assert_null(strchr(buf, '\x1b'));
    assert_null(strchr(buf, '\a'));
    assert_null(strchr(buf, '\xff'));
}

static void test_conf_error(void **state)
{
    oc_conf_errors_t e;

    (void)state;
    memset(&e, 0, sizeof(e));
    oc__conf_error(&e, "a.conf", 3, "unknown directive '%s'", "\x1b[2J\xff");
    oc__conf_error(&e, NULL, 0, "config file %s: not a regular file", "/x\a");
    assert_int_equal(e.count, 2);
    assert_string_equal(e.text, "a.conf:3: unknown directive '\\x1b[2J\\xff'\n"
                                "config file /x\\x07: not a regular file\n");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_esc),
        cmocka_unit_test(test_log),
        cmocka_unit_test(test_conf_error),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
