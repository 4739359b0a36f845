/*
 * test_kv.c — the configuration tokenizer (util/kv.h): word
 * splitting and comments, KEY=VALUE against a key table with its three
 * named errors, strict numbers, IPv4 addresses and prefixes, and the
 * FILE:LINE error list (cut whole, echoed, counted past the cut).
 * Single-threaded.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "util/kv.h"

static void test_split(void **state)
{
    char line[] = "  threads\t2 \r\n", many[] = "a b c d";
    char com[] = "rule id=1 #action=deny x", only[] = "   # all comment";
    char hash[] = "path=/a#b next";
    char *w[4];

    (void)state;
    assert_int_equal(oc__kv_split(line, w, 4), 2);
    assert_string_equal(w[0], "threads");
    assert_string_equal(w[1], "2");
    /* a word starting with '#' ends the line; '#' inside a word does not */
    assert_int_equal(oc__kv_split(com, w, 4), 2);
    assert_string_equal(w[1], "id=1");
    assert_int_equal(oc__kv_split(only, w, 4), 0);
    assert_int_equal(oc__kv_split(hash, w, 4), 2);
    assert_string_equal(w[0], "path=/a#b");
    /* one word more than room: -1, the room filled */
    assert_int_equal(oc__kv_split(many, w, 3), -1);
    assert_string_equal(w[2], "c");
    char empty[] = "";
    assert_int_equal(oc__kv_split(empty, w, 4), 0);

    /* const text: its first line, copied */
    char buf[16];
    const char *text = "id=1 action=allow\nid=2";
    assert_int_equal(oc__kv_split_text(text, buf, sizeof(buf), w, 4), -2);
    char big[32];
    assert_int_equal(oc__kv_split_text(text, big, sizeof(big), w, 4), 2);
    assert_string_equal(w[1], "action=allow");
    assert_string_equal(text, "id=1 action=allow\nid=2"); /* untouched */
    assert_int_equal(oc__kv_split_text("a b c", big, sizeof(big), w, 2), -1);
}

static void test_key(void **state)
{
    static const char *const keys[] = {"id", "prio", "action", NULL};
    char a[] = "prio=7", b[] = "action=", c[] = "prio=8", d[] = "colour=red";
    char e[] = "novalue", f[] = "id=a=b";
    char why[128], *val = NULL;
    unsigned seen = 0;

    (void)state;
    assert_int_equal(oc__kv_key(a, keys, &seen, &val, why, sizeof(why)), 1);
    assert_string_equal(val, "7");
    assert_int_equal(seen, 2);
    /* an empty value is the value's parser's to refuse */
    assert_int_equal(oc__kv_key(b, keys, &seen, &val, why, sizeof(why)), 2);
    assert_string_equal(val, "");
    assert_int_equal(oc__kv_key(c, keys, &seen, &val, why, sizeof(why)), -1);
    assert_string_equal(why, "'prio' given twice");
    /* without a seen set, repeats pass */
    char c2[] = "prio=9";
    assert_int_equal(oc__kv_key(c2, keys, NULL, &val, why, sizeof(why)), 1);
    assert_string_equal(val, "9");
    assert_int_equal(oc__kv_key(d, keys, &seen, &val, why, sizeof(why)), -1);
    assert_string_equal(why, "unknown key 'colour' (id prio action)");
    assert_string_equal(d, "colour=red"); /* left as it was */
    assert_int_equal(oc__kv_key(e, keys, &seen, &val, why, sizeof(why)), -1);
    assert_string_equal(why, "'novalue': expected KEY=VALUE");
    /* split at the first '=' */
    assert_int_equal(oc__kv_key(f, keys, &seen, &val, why, sizeof(why)), 0);
    assert_string_equal(val, "a=b");
    /* a short reason buffer is cut, still terminated */
    char g[] = "zz=1", small[12];
    assert_int_equal(oc__kv_key(g, keys, NULL, &val, small, sizeof(small)), -1);
    assert_int_equal(strlen(small), sizeof(small) - 1);
}

static void test_numbers(void **state)
{
    uint64_t v = 42;
    uint32_t ip = 0;
    uint8_t len = 99;

    (void)state;
    assert_int_equal(oc__kv_u64("0", 0, 10, &v), 0);
    assert_int_equal(v, 0);
    assert_int_equal(oc__kv_u64("18446744073709551615", 0, UINT64_MAX, &v), 0);
    assert_true(v == UINT64_MAX);
    v = 42;
    static const char *const bad[] = {"", "-1", "+1", " 1", "1 ", "0x10", "11",
                                      "18446744073709551616", "1k"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        if (oc__kv_u64(bad[i], 0, 10, &v) != -1)
            fail_msg("'%s' taken as a number in 0..10", bad[i]);
        assert_int_equal(v, 42); /* untouched */
    }
    assert_int_equal(oc__kv_ipv4("10.1.2.3", &ip), 0);
    assert_int_equal(ip, 0x0a010203);
    assert_int_equal(oc__kv_ipv4("10.1.2", &ip), -1);
    assert_int_equal(oc__kv_ipv4("10.1.2.256", &ip), -1);
    assert_int_equal(oc__kv_prefix("10.1.2.3/8", &ip, &len), 0);
    assert_int_equal(ip, 0x0a000000);
    assert_int_equal(len, 8);
    assert_int_equal(oc__kv_prefix("10.1.2.3", &ip, &len), 0);
    assert_int_equal(ip, 0x0a010203);
    assert_int_equal(len, 32);
    assert_int_equal(oc__kv_prefix("10.1.2.3/0", &ip, &len), 0);
    assert_int_equal(ip, 0);
    assert_int_equal(len, 0);
    assert_int_equal(oc__kv_prefix("any", &ip, &len), 0);
    assert_int_equal(len, 0);
    ip = 7;
    len = 7;
    static const char *const badp[] = {"10.1.2.3/33", "10.1.2.3/", "/8",
                                       "10.1.2.3/-1", "10.1.2.3/8/8",
                                       "255.255.255.255.255/8", "anything"};
    for (size_t i = 0; i < sizeof(badp) / sizeof(badp[0]); i++) {
        if (oc__kv_prefix(badp[i], &ip, &len) != -1)
            fail_msg("'%s' taken as a prefix", badp[i]);
        assert_int_equal(ip, 7);
        assert_int_equal(len, 7);
    }
}

static void test_errors(void **state)
{
    oc_conf_errors_t e;
    char *echoed = NULL;
    size_t elen = 0;

    (void)state;
    memset(&e, 0, sizeof(e));
    e.echo = open_memstream(&echoed, &elen);
    assert_non_null(e.echo);
    oc__conf_error(&e, "a.conf", 3, "threads '%s': expected 1..%u", "0", 64u);
    oc__conf_error(&e, "a.conf", 0, "no 'attach' line");
    assert_int_equal(e.count, 2);
    assert_string_equal(e.text, "a.conf:3: threads '0': expected 1..64\n"
                                "a.conf: no 'attach' line\n");
    fclose(e.echo);
    assert_string_equal(echoed, e.text);
    free(echoed);

    /* a full list keeps whole lines only, and counts every error */
    memset(&e, 0, sizeof(e));
    char big[600];
    memset(big, 'x', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    for (int i = 0; i < 100; i++)
        oc__conf_error(&e, "b.conf", (unsigned)i + 1, "%s", big);
    assert_int_equal(e.count, 100);
    size_t l = strlen(e.text);
    assert_true(l < sizeof(e.text));
    assert_true(l > sizeof(e.text) - 700);
    assert_int_equal(e.text[l - 1], '\n');
    /* every line is one whole message */
    for (char *p = e.text; *p != '\0';) {
        char *nl = strchr(p, '\n');
        assert_non_null(nl);
        assert_true(strncmp(p, "b.conf:", 7) == 0);
        assert_true(nl[-1] == 'x');
        p = nl + 1;
    }
}

static void test_lines(void **state)
{
    static const char text[] = "one\r\n\ntoo long a line\nnul\0x\nlast";
    oc_conf_errors_t e;
    char buf[8];
    size_t pos = 0;
    unsigned ln = 0;

    (void)state;
    memset(&e, 0, sizeof(e));
    assert_int_equal(oc__kv_next_line(text, sizeof(text) - 1, &pos, buf,
                                     sizeof(buf), "f", &ln, &e), 1);
    assert_string_equal(buf, "one"); /* CRLF ends a line too */
    assert_int_equal(oc__kv_next_line(text, sizeof(text) - 1, &pos, buf,
                                     sizeof(buf), "f", &ln, &e), 1);
    assert_string_equal(buf, "");
    assert_int_equal(oc__kv_next_line(text, sizeof(text) - 1, &pos, buf,
                                     sizeof(buf), "f", &ln, &e), -1);
    /* a NUL would hide the rest of its line: refused, not cut */
    assert_int_equal(oc__kv_next_line(text, sizeof(text) - 1, &pos, buf,
                                     sizeof(buf), "f", &ln, &e), -1);
    assert_int_equal(oc__kv_next_line(text, sizeof(text) - 1, &pos, buf,
                                     sizeof(buf), "f", &ln, &e), 1);
    assert_string_equal(buf, "last"); /* no final newline */
    assert_int_equal(ln, 5);
    assert_int_equal(oc__kv_next_line(text, sizeof(text) - 1, &pos, buf,
                                     sizeof(buf), "f", &ln, &e), 0);
    assert_int_equal(e.count, 2);
    assert_string_equal(e.text, "f:3: line longer than 7 bytes\n"
                                "f:4: NUL byte\n");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_split),
        cmocka_unit_test(test_key),
        cmocka_unit_test(test_numbers),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_lines),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
