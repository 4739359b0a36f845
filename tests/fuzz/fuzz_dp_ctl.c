/*
 * fuzz_dp_ctl.c — libFuzzer target for offcore-dp's control socket reader
 * (src/dp/conf/ctl_line.c, oc__dp_ctl_line()) and the command parsers an
 * accepted line reaches that need no running daemon (rules add's rule
 * syntax, rules load's options: src/dp/conf/rule.c).
 *
 * Input: the first byte says how the client's bytes arrive (chunks of 1
 * to 16 bytes, or all at once) and whether it then closes or goes quiet;
 * the rest are the bytes.  They are fed to the reader the way the
 * daemon's serve_client() does, into a buffer of the daemon's size.
 * Checked: the reader decides once no more bytes come; its verdict does
 * not depend on the chunking (an oracle written apart says what it must
 * be); an accepted line is NUL-terminated, exactly the bytes before the
 * first newline (less a '\r'), and printable ASCII or tabs; every reason
 * given — the reader's and the parsers' — is printable text.  A broken
 * invariant aborts.
 */
#include "fuzz_dp_ctl.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dp/dp.h"
#include "util/log.h"

#define CHECK(cond)                                                            \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "fuzz_dp_ctl.c:%d: invariant broken: %s\n",        \
                    __LINE__, #cond);                                          \
            abort();                                                           \
        }                                                                      \
    } while (0)

unsigned long fuzz_dp_ctl_accepted;
int fuzz_dp_ctl_last_valid;

static bool text_ok(unsigned char c)
{
    return (c >= 0x20 && c < 0x7f) || c == '\t';
}

static void check_text(const char *s)
{
    CHECK(s[0] != '\0');
    for (; *s; s++)
        CHECK(text_ok((unsigned char)*s));
}

/* What the reader must answer for these bytes, however they arrive. */
static int oracle(const uint8_t *d, size_t n, size_t cap)
{
    const uint8_t *nl = memchr(d, '\n', n < cap ? n : cap);
    size_t end;

    if (nl == NULL)
        return -1;
    end = (size_t)(nl - d);
    if (end > 0 && d[end - 1] == '\r')
        end--;
    for (size_t i = 0; i < end; i++)
        if (!text_ok(d[i]))
            return -1;
    return 1;
}

static void parse_more(const char *line)
{
    char why[512], copy[OC_DP_LINE_MAX], *tok[4];
    oc_dp_rule_t r;

    why[0] = '\0';
    if (!strncmp(line, "rules add ", 10)) {
        if (oc__dp_rule_parse(line + 10, &r, why, sizeof(why)) != 0)
            check_text(why);
    } else if (!strncmp(line, "log ", 4)) {
        /* the level spec offcore dp log hands oc__log_set(): parsed into a
         * local table here, the process's levels left alone */
        int levels[OC_COMP_MAX];
        (void)oc__log_parse(line + 4, levels);
        for (int i = 0; i < OC_COMP_MAX; i++)
            if (levels[i] < OC_LOG_ERROR || levels[i] > OC_LOG_TRACE)
                abort();
    } else if (!strncmp(line, "rules load ", 11)) {
        oc_acl_action_t action;
        uint32_t id_base;
        int n;
        snprintf(copy, sizeof(copy), "%s", line + 11);
        n = oc__kv_split(copy, tok, 4);
        if (n > 1 && oc__dp_rules_opts(tok + 1, n - 1, &action, &id_base, why,
                                       sizeof(why)) != 0)
            check_text(why);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char line[OC_DP_LINE_MAX], why[160];
    const size_t cap = sizeof(line) - 1;
    size_t len = 0, pos = 0, chunk;
    bool closed = false;
    int rc;

    if (size < 1)
        return 0;
    chunk = data[0] & 15 ? (size_t)(data[0] & 15) : (size_t)-1;
    data++;
    size--;
    why[0] = '\0';
    while ((rc = oc__dp_ctl_line(line, len, cap, closed, why,
                                 sizeof(why))) == 0) {
        size_t k = size - pos < chunk ? size - pos : chunk;
        CHECK(!closed); /* closed: the reader must decide */
        if (k > cap - len)
            k = cap - len;
        if (k == 0) {
            closed = true;
            continue;
        }
        memcpy(line + len, data + pos, k);
        len += k;
        pos += k;
    }
    CHECK(rc == oracle(data, size, cap));
    fuzz_dp_ctl_last_valid = rc == 1;
    if (rc < 0) {
        check_text(why);
        return 0;
    }
    fuzz_dp_ctl_accepted++;
    {
        const uint8_t *nl = memchr(data, '\n', size);
        size_t n = strlen(line);
        CHECK(nl != NULL);
        CHECK(n == (size_t)(nl - data) ||
              (n + 1 == (size_t)(nl - data) && data[n] == '\r'));
        CHECK(memcmp(line, data, n) == 0);
        for (size_t i = 0; i < n; i++)
            CHECK(text_ok((unsigned char)line[i]));
    }
    parse_more(line);
    return 0;
}
