/*
 * tlbook.c — the book of which transports each endpoint picked, kept for
 * threads that do not own the endpoint's worker.
 *
 * offcored's endpoints live on its routing threads (one UCX worker each,
 * UCS_THREAD_MODE_SINGLE: no other thread may touch them), while its
 * control thread logs and its HTTP thread exports what they use.  Once
 * oc__tr_book_enable() is called, oc__tr_ep_create() asks UCX, on the
 * creating thread, which transports the new endpoint's active messages
 * use (oc__tr_ep_transports) and writes that here under the remote
 * worker's unique id (ucp_worker_address_query); oc__tr_ep_destroy()
 * strikes it out.  Any thread may then look an address up.  Off by
 * default: the runtime asks its own endpoints at oc_init (watch.c).
 * Thread-safe: one mutex over a short list; the input is UCX's own
 * description of its endpoints, not untrusted.
 */
#include "transport_int.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct entry {
    uint64_t      uid;   /* the remote worker's */
    const void   *ep;    /* whose entry: struck out when it is destroyed */
    unsigned      cls;
    int           failed; /* the endpoint could not be made: tls says why */
    char          tls[128];
    struct entry *next;
} entry_t;

static pthread_mutex_t book_mu = PTHREAD_MUTEX_INITIALIZER;
static entry_t        *book;
static atomic_int      book_on;

void oc__tr_book_enable(void)
{
    atomic_store(&book_on, 1);
}

int oc__tr_book_on(void)
{
    return atomic_load(&book_on);
}

void oc__tr_book_add(const void *ep, uint64_t uid, unsigned cls,
                     const char *tls)
{
    entry_t *e = calloc(1, sizeof(*e));
    if (e == NULL)
        return; /* unknown then, never wrong: lookups say "not known" */
    e->uid = uid;
    e->ep = ep;
    e->cls = cls;
    snprintf(e->tls, sizeof(e->tls), "%s", tls);
    pthread_mutex_lock(&book_mu);
    e->next = book;
    book = e;
    pthread_mutex_unlock(&book_mu);
}

void oc__tr_book_del(const void *ep)
{
    entry_t *gone = NULL;
    pthread_mutex_lock(&book_mu);
    for (entry_t **pp = &book; *pp != NULL; pp = &(*pp)->next)
        if ((*pp)->ep == ep) {
            gone = *pp;
            *pp = gone->next;
            break;
        }
    pthread_mutex_unlock(&book_mu);
    free(gone);
}

/* An endpoint that could not be made (ep NULL): the owner of the rank
 * learns why at its next lookup (oc__tr_book_forget strikes it out). */
void oc__tr_book_failed(uint64_t uid, const char *why)
{
    entry_t *e = calloc(1, sizeof(*e));
    if (e == NULL)
        return;
    e->uid = uid;
    e->failed = 1;
    snprintf(e->tls, sizeof(e->tls), "%s", why);
    pthread_mutex_lock(&book_mu);
    e->next = book;
    book = e;
    pthread_mutex_unlock(&book_mu);
}

void oc__tr_book_forget(const void *addr)
{
    uint64_t uid;

    if (oc__tr_addr_uid(addr, &uid) != OC_OK)
        return;
    pthread_mutex_lock(&book_mu);
    for (entry_t **pp = &book; *pp != NULL;) {
        entry_t *e = *pp;
        if (e->uid == uid && e->failed) {
            *pp = e->next;
            free(e);
        } else {
            pp = &e->next;
        }
    }
    pthread_mutex_unlock(&book_mu);
}

int oc__tr_book_lookup(const void *addr, unsigned *cls, char *out,
                      size_t outlen)
{
    uint64_t uid;
    int found = 0;

    if (outlen)
        out[0] = '\0';
    if (oc__tr_addr_uid(addr, &uid) != OC_OK)
        return 0;
    pthread_mutex_lock(&book_mu);
    for (const entry_t *e = book; e != NULL; e = e->next)
        if (e->uid == uid) { /* the newest endpoint to it comes first */
            *cls = e->cls;
            snprintf(out, outlen, "%s", e->tls);
            found = e->failed ? -1 : 1;
            break;
        }
    pthread_mutex_unlock(&book_mu);
    return found;
}
