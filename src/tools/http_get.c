/*
 * http_get.c — a bounded GET into memory (http_get.h).  libcurl does the
 * HTTP; this is only its write callback, growing one buffer up to a cap.
 */
#include "http_get.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    oc__http_answer_t *a;
    size_t cap, max;
} sink_t;

static size_t on_data(char *ptr, size_t size, size_t nmemb, void *arg)
{
    sink_t *k = arg;
    oc__http_answer_t *a = k->a;
    size_t n = size * nmemb;

    if (n > k->max - a->len)
        return 0; /* curl fails the transfer with CURLE_WRITE_ERROR */
    if (a->len + n + 1 > k->cap) {
        size_t cap = k->cap ? k->cap : 16384;
        char *d;
        while (cap < a->len + n + 1)
            cap *= 2;
        d = realloc(a->data, cap);
        if (d == NULL)
            return 0;
        a->data = d;
        k->cap = cap;
    }
    memcpy(a->data + a->len, ptr, n);
    a->len += n;
    a->data[a->len] = '\0';
    return n;
}

CURLcode oc__http_get(CURL *curl, const char *url, size_t max,
                      oc__http_answer_t *a)
{
    sink_t k = {a, 0, max};
    CURLcode rc;

    memset(a, 0, sizeof(*a));
    curl_easy_setopt(curl, CURLOPT_URL, url);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &k);
    curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, a->err);
    rc = curl_easy_perform(curl);
    /* the handle may outlive @p a: let it keep no pointer into it */
    curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, NULL);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, NULL);
    if (rc == CURLE_OK)
        curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &a->code);
    return rc;
}
