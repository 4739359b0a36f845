/*
 * fuzz_prom.c — libFuzzer target for the Prometheus text parser
 * (src/metrics/prom_parse.c), which reads whatever answers `offcore stat`:
 * untrusted input.  Besides "no crash, no read past the end" (ASan, and
 * an exact-size copy in the replay driver), it checks what the parser
 * promises its callers:
 *   - validating (no callback) and parsing give the same verdict;
 *   - a malformed text delivers no sample at all;
 *   - every sample delivered has a valid metric name, at most
 *     OC_PROM_MAX_LABELS labels with valid names, values that are valid
 *     UTF-8 without NUL, and a type that exists.
 */
#include "fuzz_prom.h"

#include "metrics/metrics.h"
#include "metrics/prom_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(c)                                                               \
    do {                                                                       \
        if (!(c)) {                                                            \
            fprintf(stderr, "fuzz_prom: %s:%d: %s\n", __FILE__, __LINE__, #c); \
            abort();                                                           \
        }                                                                      \
    } while (0)

unsigned long fuzz_prom_samples;
int fuzz_prom_last_valid;

static int name_ok(const char *s, int metric)
{
    if (s == NULL || *s == '\0')
        return 0;
    for (size_t i = 0; s[i]; i++)
        if (!(metric ? metric_char((unsigned char)s[i], i == 0)
                     : label_char((unsigned char)s[i], i == 0)))
            return 0;
    return 1;
}

static oc_status_t check_sample(void *arg, const oc_prom_sample_t *s)
{
    unsigned long *n = arg;

    CHECK(name_ok(s->name, 1));
    CHECK((unsigned)s->type <= OC_PROM_UNTYPED);
    CHECK(s->nlabels <= OC_PROM_MAX_LABELS);
    for (size_t i = 0; i < s->nlabels; i++) {
        const char *v = s->labels[i].value;
        CHECK(name_ok(s->labels[i].name, 0));
        CHECK(v != NULL);
        CHECK(utf8_valid((const unsigned char *)v, strlen(v)));
    }
    (*n)++;
    return OC_OK;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int init;
    unsigned long n = 0;
    oc_prom_error_t err;
    oc_status_t v, p;

    if (!init) {
        setenv("OC_LOG", "error", 0);
        init = 1;
    }
    v = oc__prom_parse((const char *)data, size, NULL, NULL, &err);
    p = oc__prom_parse((const char *)data, size, check_sample, &n, &err);
    CHECK(v == p);
    if (p != OC_OK)
        CHECK(n == 0); /* the whole text is checked before any sample */
    fuzz_prom_last_valid = p == OC_OK;
    fuzz_prom_samples += n;
    return 0;
}
