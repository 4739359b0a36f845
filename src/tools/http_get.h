/*
 * http_get.h — GET a URL into memory with libcurl, the answer bounded:
 * how `offcore stat` (stat.c) and `offcore nvmf` (nvmf.c) read a
 * daemon's /metrics.  The answer is untrusted; its size is capped here,
 * its text is the Prometheus parser's to check.  Threading: one call at a
 * time per CURL handle (the caller's, with its own timeouts set).
 */
#ifndef OC_TOOLS_HTTP_GET_H
#define OC_TOOLS_HTTP_GET_H

#include <curl/curl.h>
#include <stddef.h>

typedef struct {
    char  *data; /* NUL-terminated (NULL when nothing came); free() it */
    size_t len;
    long   code; /* the HTTP status; 0 when there was none */
    char   err[CURL_ERROR_SIZE]; /* curl's words, when it said any */
} oc__http_answer_t;

/**
 * GET @p url with @p curl into @p a (zeroed here first).
 * @return curl's result: CURLE_OK (then look at a->code), or its error;
 *         CURLE_WRITE_ERROR when the answer passed @p max bytes or memory
 *         ran out.  a->data is the caller's to free either way.
 */
CURLcode oc__http_get(CURL *curl, const char *url, size_t max,
                      oc__http_answer_t *a);

#endif
