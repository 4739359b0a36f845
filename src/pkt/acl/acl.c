/*
 * acl.c — the classifier object: live updates over a rebuilt tree.
 *
 * What readers see (state_t, published through an RCU pointer):
 *  - the tree (acl_tree.c), built from a snapshot of the rules, immutable;
 *  - `dead`: one byte per tree rank, set by the writer when a rule of the
 *    snapshot is deleted (a tombstone: the lookup skips it and falls
 *    through to the next matching rule of the leaf);
 *  - the side part: rules added since the snapshot, in 8-rule blocks that
 *    every lookup scans; a slot is filled, then `count` is released, so a
 *    reader never sees a half-written rule.  Side slots have tombstones too.
 * An add or delete is therefore O(1) plus a hash update: no rebuild, no
 * wait for readers.  A background thread folds pending changes into a new
 * tree (a few ms for 10K rules) and swaps the state pointer; the old state
 * is freed after a grace period (liburcu, QSBR flavour: readers pay
 * nothing per lookup, they report quiescent states between bursts).
 *
 * Writer side: one writer thread at a time (acl.h); `mu` serialises it with
 * the rebuild thread's publish step only, never with readers.
 */
#include "pkt/acl/acl.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <urcu-qsbr.h>

#include "acl_tree.h"
#include "acl_idx.h"
#include "util/clock.h"
#include "util/log.h"

#define SIDE_CAP 1024u     /* rules added between two rebuilds, at most */
_Static_assert(SIDE_CAP / OC__ACL_LANES <= 64 * OC__ACL_SIDE_WORDS,
               "side filters have a bit per side block");
#define SIDE_URGENT 64u    /* rebuild at once beyond this many pending */
#define COALESCE_NS 2000000 /* else wait 2 ms for more changes first */
#define LOC_SIDE 0x80000000u

typedef struct {
    oc__acl_blk_t *blk; /* SIDE_CAP / 16 blocks; lane rank = slot */
    uint64_t *order;
    uint64_t *blk_min; /* lowest order per block: lets lookups skip it */
    oc__acl_side_filter_t *fsrc, *fdst; /* blocks per address top byte */
    uint32_t *userdata;
    uint8_t *dead;
    uint32_t count; /* released after the slot is written */
} side_t;

typedef struct {
    oc__acl_tree_t *tree;
    uint64_t snap_seq; /* the tree holds the rules present then, seq below */
    uint32_t *idmap;   /* id -> tree rank + 1 (open addressing), for del */
    size_t idmask;
    uint8_t *dead; /* per tree rank */
    int any_dead;  /* set (release) after the first tombstone */
    side_t side;
    size_t mem;
} state_t;

typedef struct {
    oc_acl_rule_t rule;
    uint64_t seq; /* add order; the tree remembers it per rank */
    uint32_t loc; /* LOC_SIDE | side slot, when seq >= state->snap_seq */
    uint32_t put; /* publish generation that gave it its side slot */
} rec_t;

/* What changed while a rebuild ran (replayed when it publishes). */
#define LOG_CAP 4096
typedef struct {
    uint32_t id;
    uint64_t seq;
} logent_t;

struct oc_acl {
    state_t *state; /* RCU-protected */
    uint32_t max_rules;
    /* writer state, under mu */
    pthread_mutex_t mu;
    pthread_cond_t wake, done;
    rec_t *recs;
    size_t nrecs;
    uint32_t *hash; /* rec index + 1, 0 = empty; open addressing */
    size_t hmask;
    uint64_t next_seq, epoch, builds, attempts;
    size_t ndead;   /* tombstones in the current state */
    int want, urgent, stop;
    /* changes since the running rebuild's snapshot: replayed at publish;
     * past LOG_CAP the publish falls back to a full pass over the rules */
    int logging, log_full;
    logent_t *dlog; /* deleted: id and seq */
    uint32_t *alog; /* added: id */
    size_t ndlog, nalog;
    uint32_t put_gen;
    oc_status_t rebuild_st;
    pthread_t thr;
};

void oc__acl_reader_register(void) { rcu_register_thread(); }
void oc__acl_reader_unregister(void) { rcu_unregister_thread(); }
void oc__acl_reader_quiescent(void) { rcu_quiescent_state(); }
void oc__acl_reader_offline(void) { rcu_thread_offline(); }
void oc__acl_reader_online(void) { rcu_thread_online(); }

/* ------------------------------------------------------------ id hash */

static uint32_t rec_id(const void *ctx, uint32_t pos)
{
    return ((const oc_acl_t *)ctx)->recs[pos].rule.id;
}

static size_t hfind(const oc_acl_t *acl, uint32_t id) /* slot or SIZE_MAX */
{
    return oc__acl_idx_find(acl->hash, acl->hmask, id, rec_id, acl);
}

static void hput(oc_acl_t *acl, uint32_t id, uint32_t idx)
{
    oc__acl_idx_put(acl->hash, acl->hmask, id, idx);
}

static void hdel(oc_acl_t *acl, size_t s)
{
    oc__acl_idx_del(acl->hash, acl->hmask, s, rec_id, acl);
}

static void hrebuild(oc_acl_t *acl)
{
    memset(acl->hash, 0, (acl->hmask + 1) * sizeof(*acl->hash));
    for (size_t i = 0; i < acl->nrecs; i++)
        hput(acl, acl->recs[i].rule.id, (uint32_t)i);
}

/* ------------------------------------------------------------- states */

static void state_free(state_t *s)
{
    if (s == NULL)
        return;
    oc__acl_tree_free(s->tree);
    free(s->idmap);
    free(s->dead);
    free(s->side.blk);
    free(s->side.order);
    free(s->side.blk_min);
    free(s->side.fsrc);
    free(s->side.fdst);
    free(s->side.userdata);
    free(s->side.dead);
    free(s);
}

static uint32_t rank_id(const void *ctx, uint32_t rank)
{
    return (uint32_t)((const state_t *)ctx)->tree->order[rank];
}

/* tree rank of the rule with @p id, or OC__ACL_NONE */
static uint32_t idmap_find(const state_t *s, uint32_t id)
{
    size_t h = oc__acl_idx_find(s->idmap, s->idmask, id, rank_id, s);
    return h == SIZE_MAX ? OC__ACL_NONE : s->idmap[h] - 1;
}

/* A state for @p tree, built from the rules present at @p snap_seq.  No
 * lock needed: nothing is shared yet. */
static state_t *state_new(oc__acl_tree_t *tree, uint64_t snap_seq)
{
    state_t *s = calloc(1, sizeof(*s));
    size_t nb = SIDE_CAP / OC__ACL_LANES, cap = 16;
    if (s == NULL)
        return NULL;
    s->tree = tree;
    s->snap_seq = snap_seq;
    while (cap < 2 * (size_t)tree->nrules)
        cap *= 2;
    s->idmask = cap - 1;
    s->idmap = calloc(cap, sizeof(*s->idmap));
    if (s->idmap != NULL)
        for (uint32_t r = 0; r < tree->nrules; r++)
            oc__acl_idx_put(s->idmap, s->idmask, (uint32_t)tree->order[r], r);
    s->dead = calloc(tree->nrules ? tree->nrules : 1, 1);
    s->side.order = malloc(SIDE_CAP * sizeof(uint64_t));
    s->side.blk_min = malloc(nb * sizeof(uint64_t));
    s->side.fsrc = calloc(1, sizeof(oc__acl_side_filter_t));
    s->side.fdst = calloc(1, sizeof(oc__acl_side_filter_t));
    s->side.userdata = malloc(SIDE_CAP * sizeof(uint32_t));
    s->side.dead = calloc(SIDE_CAP, 1);
    if (posix_memalign((void **)&s->side.blk, 64, nb * sizeof(oc__acl_blk_t)))
        s->side.blk = NULL;
    if (s->idmap == NULL || s->dead == NULL || s->side.order == NULL ||
        s->side.blk_min == NULL || s->side.fsrc == NULL ||
        s->side.fdst == NULL ||
        s->side.userdata == NULL ||
        s->side.dead == NULL || s->side.blk == NULL) {
        s->tree = NULL; /* the caller still owns it */
        state_free(s);
        return NULL;
    }
    for (size_t i = 0; i < nb; i++) {
        oc__acl_blk_clear(&s->side.blk[i]);
        s->side.blk_min[i] = UINT64_MAX;
    }
    s->mem = sizeof(*s) + tree->mem + tree->nrules + cap * sizeof(uint32_t) +
             nb * sizeof(oc__acl_blk_t) + SIDE_CAP * (8 + 4 + 1) +
             nb * sizeof(uint64_t) + 2 * sizeof(oc__acl_side_filter_t);
    return s;
}

/* Mark block @p b in the filter entries a prefix covers. */
static void filter_set(oc__acl_side_filter_t *f, uint32_t ip, uint8_t len,
                       uint32_t b)
{
    uint32_t span = len >= 8 ? 1 : 1u << (8 - len);
    uint32_t first = (ip >> 24) & ~(span - 1);
    for (uint32_t v = first; v < first + span; v++)
        __atomic_or_fetch(&(*f)[v][b / 64], 1ull << (b % 64), __ATOMIC_RELAXED);
}

/* Put @p r into the next side slot of @p s (not yet published). */
static uint32_t side_put(state_t *s, const oc_acl_rule_t *r)
{
    uint32_t slot = s->side.count;
    s->side.order[slot] = (uint64_t)r->priority << 32 | r->id;
    s->side.userdata[slot] = r->userdata;
    s->side.dead[slot] = 0;
    if (s->side.order[slot] < s->side.blk_min[slot / OC__ACL_LANES])
        __atomic_store_n(&s->side.blk_min[slot / OC__ACL_LANES],
                         s->side.order[slot], __ATOMIC_RELAXED);
    oc__acl_blk_set(&s->side.blk[slot / OC__ACL_LANES], slot % OC__ACL_LANES,
                    r, slot);
    filter_set(s->side.fsrc, r->src_ip, r->src_len, slot / OC__ACL_LANES);
    filter_set(s->side.fdst, r->dst_ip, r->dst_len, slot / OC__ACL_LANES);
    __atomic_store_n(&s->side.count, slot + 1, __ATOMIC_RELEASE);
    return slot;
}

static int cmp_rec(const void *a, const void *b)
{
    const oc_acl_rule_t *x = &((const rec_t *)a)->rule;
    const oc_acl_rule_t *y = &((const rec_t *)b)->rule;
    return oc__acl_rule_before(x, y) ? -1 : oc__acl_rule_before(y, x) ? 1 : 0;
}

/* Build a tree from @p recs (sorted here).  No lock needed. */
static oc_status_t build_from(rec_t *recs, size_t n, oc__acl_tree_t **out)
{
    oc_acl_rule_t *rules = malloc((n ? n : 1) * sizeof(*rules));
    uint64_t *seq = malloc((n ? n : 1) * sizeof(*seq));
    oc_status_t st = OC_ERR_NO_MEMORY;
    if (rules != NULL && seq != NULL) {
        qsort(recs, n, sizeof(*recs), cmp_rec);
        for (size_t i = 0; i < n; i++) {
            rules[i] = recs[i].rule;
            seq[i] = recs[i].seq;
        }
        st = oc__acl_tree_build(rules, seq, n, out);
    }
    free(rules);
    free(seq);
    return st;
}

/* Under mu: make the new state @p s, whose tree was built from a snapshot
 * holding every rule with seq < @p snap_seq that was present then, reflect
 * the rules present now; every record's loc is updated.  Cannot fail. */
static void state_fill(oc_acl_t *acl, state_t *s)
{
    const oc__acl_tree_t *tree = s->tree;
    size_t ndead = 0;
    for (uint32_t r = 0; r < tree->nrules; r++) {
        size_t h = hfind(acl, (uint32_t)tree->order[r]);
        rec_t *rec = h == SIZE_MAX ? NULL : &acl->recs[acl->hash[h] - 1];
        if (rec == NULL || rec->seq != tree->seq[r]) {
            s->dead[r] = 1;
            s->any_dead = 1;
            ndead++;
        }
    }
    for (size_t i = 0; i < acl->nrecs; i++) {
        rec_t *rec = &acl->recs[i];
        if (rec->seq >= s->snap_seq)
            rec->loc = LOC_SIDE | side_put(s, &rec->rule);
    }
    acl->ndead = ndead;
}

/* Under mu, what state_fill does, from the change logs of the rebuild
 * that built @p s: O(changes while it ran) instead of O(rules), so a
 * writer waits microseconds for a publish. */
static void state_replay(oc_acl_t *acl, state_t *s)
{
    const oc__acl_tree_t *tree = s->tree;
    size_t ndead = 0;
    uint32_t gen = ++acl->put_gen;
    for (size_t i = 0; i < acl->ndlog; i++) {
        uint32_t r = idmap_find(s, acl->dlog[i].id);
        if (r != OC__ACL_NONE && tree->seq[r] == acl->dlog[i].seq &&
            !s->dead[r]) {
            s->dead[r] = 1;
            s->any_dead = 1;
            ndead++;
        }
    }
    for (size_t i = 0; i < acl->nalog; i++) {
        size_t h = hfind(acl, acl->alog[i]);
        rec_t *rec = h == SIZE_MAX ? NULL : &acl->recs[acl->hash[h] - 1];
        if (rec != NULL && rec->seq >= s->snap_seq && rec->put != gen) {
            rec->loc = LOC_SIDE | side_put(s, &rec->rule);
            rec->put = gen;
        }
    }
    acl->ndead = ndead;
}

static void log_change(oc_acl_t *acl, logent_t *d, uint32_t add_id)
{
    if (!acl->logging)
        return;
    if (d != NULL && acl->ndlog < LOG_CAP)
        acl->dlog[acl->ndlog++] = *d;
    else if (d == NULL && acl->nalog < LOG_CAP)
        acl->alog[acl->nalog++] = add_id;
    else
        acl->log_full = 1;
}

static void publish(oc_acl_t *acl, state_t *s, state_t **old)
{
    *old = rcu_xchg_pointer(&acl->state, s);
    acl->builds++;
    acl->attempts++;
    pthread_cond_broadcast(&acl->done);
}

static int pending(const oc_acl_t *acl)
{
    return acl->state->side.count > 0 || acl->ndead > 0;
}

static void *rebuild_main(void *arg)
{
    oc_acl_t *acl = arg;
    pthread_mutex_lock(&acl->mu);
    for (;;) {
        uint64_t epoch, snap_seq;
        rec_t *snap;
        size_t n;
        oc__acl_tree_t *tree = NULL;
        state_t *s, *old = NULL;
        oc_status_t st;

        while (!acl->stop && !acl->want)
            pthread_cond_wait(&acl->wake, &acl->mu);
        if (acl->stop)
            break;
        if (acl->state->side.count < SIDE_URGENT && !acl->urgent) {
            /* let changes gather, on the wake condition (monotonic): a
             * destroy, a sync or a full side part ends the wait at once
             * (a plain sleep held oc__acl_sync and oc__acl_destroy up to
             * COALESCE_NS) */
            uint64_t end = oc__now_ns() + COALESCE_NS;
            struct timespec ts = {(time_t)(end / 1000000000u),
                                  (long)(end % 1000000000u)};
            while (!acl->stop && !acl->urgent &&
                   acl->state->side.count < SIDE_URGENT &&
                   pthread_cond_timedwait(&acl->wake, &acl->mu, &ts) == 0)
                ;
            if (acl->stop)
                break;
        }
        acl->want = 0;
        acl->urgent = 0;
        epoch = acl->epoch;
        snap_seq = acl->next_seq;
        n = acl->nrecs;
        snap = malloc((n ? n : 1) * sizeof(*snap));
        if (snap != NULL)
            memcpy(snap, acl->recs, n * sizeof(*snap));
        acl->logging = 1;
        acl->log_full = 0;
        acl->ndlog = acl->nalog = 0;
        pthread_mutex_unlock(&acl->mu);

        st = snap == NULL ? OC_ERR_NO_MEMORY : build_from(snap, n, &tree);
        free(snap);
        s = NULL;
        if (st == OC_OK && (s = state_new(tree, snap_seq)) == NULL)
            st = OC_ERR_NO_MEMORY;

        pthread_mutex_lock(&acl->mu);
        acl->logging = 0;
        if (st != OC_OK || acl->epoch != epoch) {
            if (s != NULL) /* failed, or a load() replaced all */
                state_free(s);
            else
                oc__acl_tree_free(tree);
            acl->rebuild_st = st;
            acl->attempts++;
            pthread_cond_broadcast(&acl->done);
            continue;
        }
        if (acl->log_full)
            state_fill(acl, s);
        else
            state_replay(acl, s);
        acl->rebuild_st = OC_OK;
        publish(acl, s, &old);
        pthread_mutex_unlock(&acl->mu);
        synchronize_rcu(); /* outside the lock: writers go on meanwhile */
        state_free(old);
        pthread_mutex_lock(&acl->mu);
    }
    pthread_mutex_unlock(&acl->mu);
    return NULL;
}

/* ---------------------------------------------------------------- API */

oc_status_t oc__acl_create(uint32_t max_rules, oc_acl_t **out)
{
    oc_acl_t *acl;
    oc__acl_tree_t *tree;
    size_t hcap = 16;

    if (max_rules == 0 || max_rules > OC_ACL_MAX_RULES || out == NULL)
        return OC_ERR_INVALID_PARAM;
    if (getenv("OC_ACL_PATH") != NULL &&
        oc__acl_set_lookup_path(getenv("OC_ACL_PATH")) != OC_OK) {
        oc_error(OC_COMP_PKT, "OC_ACL_PATH=%s: not a lookup path of this CPU "
                 "(scalar, avx512-leaf, avx512, avx2, auto)", getenv("OC_ACL_PATH"));
        return OC_ERR_CONFIG;
    }
    acl = calloc(1, sizeof(*acl));
    if (acl == NULL)
        return OC_ERR_NO_MEMORY;
    while (hcap < 2 * (size_t)max_rules)
        hcap *= 2;
    acl->max_rules = max_rules;
    acl->hmask = hcap - 1;
    acl->hash = calloc(hcap, sizeof(*acl->hash));
    acl->recs = malloc(max_rules * sizeof(*acl->recs));
    acl->dlog = malloc(LOG_CAP * sizeof(*acl->dlog));
    acl->alog = malloc(LOG_CAP * sizeof(*acl->alog));
    if (acl->hash == NULL || acl->recs == NULL || acl->dlog == NULL ||
        acl->alog == NULL)
        goto err_mem;
    if (oc__acl_tree_build(NULL, NULL, 0, &tree) != OC_OK)
        goto err_mem;
    acl->state = state_new(tree, 0);
    if (acl->state == NULL) {
        oc__acl_tree_free(tree);
        goto err_mem;
    }
    pthread_mutex_init(&acl->mu, NULL);
    {
        pthread_condattr_t ca; /* the coalescing wait's deadline is monotonic */
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_init(&acl->wake, &ca);
        pthread_condattr_destroy(&ca);
    }
    pthread_cond_init(&acl->done, NULL);
    if (pthread_create(&acl->thr, NULL, rebuild_main, acl) != 0)
        goto err_thread;
    *out = acl;
    return OC_OK;
err_thread:
    pthread_cond_destroy(&acl->done);
    pthread_cond_destroy(&acl->wake);
    pthread_mutex_destroy(&acl->mu);
    state_free(acl->state);
err_mem:
    free(acl->alog);
    free(acl->dlog);
    free(acl->recs);
    free(acl->hash);
    free(acl);
    return OC_ERR_NO_MEMORY;
}

void oc__acl_destroy(oc_acl_t *acl)
{
    if (acl == NULL)
        return;
    pthread_mutex_lock(&acl->mu);
    acl->stop = 1;
    pthread_cond_signal(&acl->wake);
    pthread_mutex_unlock(&acl->mu);
    pthread_join(acl->thr, NULL);
    pthread_cond_destroy(&acl->done);
    pthread_cond_destroy(&acl->wake);
    pthread_mutex_destroy(&acl->mu);
    state_free(acl->state);
    free(acl->alog);
    free(acl->dlog);
    free(acl->recs);
    free(acl->hash);
    free(acl);
}

/* want == 1 already: the rebuild thread is gathering changes or building,
 * not idle; it is woken then only when the gathering must end early */
static void kick(oc_acl_t *acl)
{
    int was = acl->want;
    acl->want = 1;
    if (!was || acl->urgent || acl->state->side.count >= SIDE_URGENT)
        pthread_cond_signal(&acl->wake);
}

oc_status_t oc__acl_add(oc_acl_t *acl, const oc_acl_rule_t *rule)
{
    rec_t *rec;
    if (oc__acl_rule_check(rule, NULL) != OC_OK)
        return OC_ERR_INVALID_PARAM;
    pthread_mutex_lock(&acl->mu);
    if (hfind(acl, rule->id) != SIZE_MAX) {
        pthread_mutex_unlock(&acl->mu);
        return OC_ERR_INVALID_PARAM;
    }
    if (acl->nrecs >= acl->max_rules) {
        pthread_mutex_unlock(&acl->mu);
        return OC_ERR_NO_MEMORY;
    }
    /* side part full: back-pressure on the writer until the rebuild has
     * folded it in (readers are never held up) */
    while (acl->state->side.count == SIDE_CAP) {
        kick(acl);
        pthread_cond_wait(&acl->done, &acl->mu);
        if (acl->state->side.count == SIDE_CAP && acl->rebuild_st != OC_OK) {
            oc_status_t st = acl->rebuild_st;
            pthread_mutex_unlock(&acl->mu);
            return st;
        }
    }
    rec = &acl->recs[acl->nrecs];
    rec->rule = *rule;
    rec->seq = acl->next_seq++;
    rec->loc = LOC_SIDE | side_put(acl->state, rule);
    rec->put = 0;
    hput(acl, rule->id, (uint32_t)acl->nrecs++);
    log_change(acl, NULL, rule->id);
    kick(acl);
    pthread_mutex_unlock(&acl->mu);
    return OC_OK;
}

oc_status_t oc__acl_del(oc_acl_t *acl, uint32_t id)
{
    size_t h, idx;
    rec_t *rec;
    state_t *s;

    pthread_mutex_lock(&acl->mu);
    h = hfind(acl, id);
    if (h == SIZE_MAX) {
        pthread_mutex_unlock(&acl->mu);
        return OC_ERR_INVALID_PARAM;
    }
    idx = acl->hash[h] - 1;
    rec = &acl->recs[idx];
    s = acl->state;
    if (rec->seq >= s->snap_seq) { /* added since the tree was built */
        __atomic_store_n(&s->side.dead[rec->loc & ~LOC_SIDE], 1, __ATOMIC_RELEASE);
    } else {
        uint32_t r = idmap_find(s, id);
        __atomic_store_n(&s->dead[r], 1, __ATOMIC_RELEASE);
        __atomic_store_n(&s->any_dead, 1, __ATOMIC_RELEASE);
        acl->ndead++;
        /* lookups that hit it take the slow path until the rebuild */
        if (s->tree->cover[r])
            acl->urgent = 1;
    }
    {
        logent_t d = {id, rec->seq};
        log_change(acl, &d, 0);
    }
    hdel(acl, h);
    if (idx != acl->nrecs - 1) { /* move the last record into the hole */
        acl->recs[idx] = acl->recs[acl->nrecs - 1];
        acl->hash[hfind(acl, acl->recs[idx].rule.id)] = (uint32_t)idx + 1;
    }
    acl->nrecs--;
    kick(acl);
    pthread_mutex_unlock(&acl->mu);
    return OC_OK;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

oc_status_t oc__acl_load(oc_acl_t *acl, const oc_acl_rule_t *rules, size_t n)
{
    rec_t *recs;
    uint32_t *ids;
    oc__acl_tree_t *tree = NULL;
    state_t *s, *old;
    oc_status_t st;
    uint64_t seq0;

    if (n > acl->max_rules)
        return OC_ERR_NO_MEMORY;
    for (size_t i = 0; i < n; i++)
        if (oc__acl_rule_check(&rules[i], NULL) != OC_OK)
            return OC_ERR_INVALID_PARAM;
    ids = malloc((n ? n : 1) * sizeof(*ids));
    recs = malloc((n ? n : 1) * sizeof(*recs));
    if (ids == NULL || recs == NULL) {
        st = OC_ERR_NO_MEMORY;
        goto out;
    }
    for (size_t i = 0; i < n; i++)
        ids[i] = rules[i].id;
    qsort(ids, n, sizeof(*ids), cmp_u32);
    for (size_t i = 1; i < n; i++)
        if (ids[i] == ids[i - 1]) {
            st = OC_ERR_INVALID_PARAM;
            goto out;
        }
    pthread_mutex_lock(&acl->mu);
    seq0 = acl->next_seq;
    acl->next_seq += n;
    pthread_mutex_unlock(&acl->mu);
    for (size_t i = 0; i < n; i++) {
        recs[i].rule = rules[i];
        recs[i].seq = seq0 + i;
    }
    st = build_from(recs, n, &tree);
    if (st != OC_OK)
        goto out;
    s = state_new(tree, seq0 + n);
    if (s == NULL) {
        oc__acl_tree_free(tree);
        st = OC_ERR_NO_MEMORY;
        goto out;
    }
    pthread_mutex_lock(&acl->mu);
    memcpy(acl->recs, recs, n * sizeof(*recs));
    acl->nrecs = n;
    hrebuild(acl);
    /* every rule is in the tree, live: nothing to mark; rules added
     * meanwhile by this same writer cannot exist (one writer) */
    acl->ndead = 0;
    acl->logging = 0; /* a rebuild in flight is now stale (epoch) */
    acl->epoch++; /* a rebuild in flight is now stale */
    publish(acl, s, &old);
    pthread_mutex_unlock(&acl->mu);
    synchronize_rcu();
    state_free(old);
out:
    free(ids);
    free(recs);
    return st;
}

size_t oc__acl_count(const oc_acl_t *acl) { return acl->nrecs; }

static int cmp_rule(const void *a, const void *b)
{
    const oc_acl_rule_t *x = a, *y = b;
    return oc__acl_rule_before(x, y) ? -1 : oc__acl_rule_before(y, x) ? 1 : 0;
}

size_t oc__acl_rules(const oc_acl_t *acl, oc_acl_rule_t *out, size_t cap)
{
    pthread_mutex_t *mu = (pthread_mutex_t *)&acl->mu;
    oc_acl_rule_t *tmp;
    size_t n;

    /* under mu: the rebuild thread updates records' bookkeeping */
    pthread_mutex_lock(mu);
    n = acl->nrecs;
    tmp = malloc((n ? n : 1) * sizeof(*tmp));
    for (size_t i = 0; i < n; i++)
        if (tmp != NULL)
            tmp[i] = acl->recs[i].rule;
        else if (i < cap) /* unsorted rather than nothing */
            out[i] = acl->recs[i].rule;
    pthread_mutex_unlock(mu);
    if (tmp == NULL)
        return n;
    qsort(tmp, n, sizeof(*tmp), cmp_rule);
    memcpy(out, tmp, (n < cap ? n : cap) * sizeof(*out));
    free(tmp);
    return n;
}

size_t oc__acl_mem_bytes(const oc_acl_t *acl)
{
    size_t m;
    /* under mu: the rebuild thread cannot retire the state meanwhile */
    pthread_mutex_lock((pthread_mutex_t *)&acl->mu);
    m = acl->state->mem;
    pthread_mutex_unlock((pthread_mutex_t *)&acl->mu);
    return m;
}

oc_status_t oc__acl_sync(oc_acl_t *acl)
{
    oc_status_t st = OC_OK;
    pthread_mutex_lock(&acl->mu);
    while (pending(acl)) {
        uint64_t a = acl->attempts;
        acl->urgent = 1; /* a caller waits: no coalescing delay */
        kick(acl);
        while (acl->attempts == a)
            pthread_cond_wait(&acl->done, &acl->mu);
        if (acl->rebuild_st != OC_OK) {
            st = acl->rebuild_st;
            break;
        }
    }
    pthread_mutex_unlock(&acl->mu);
    return st;
}

#define CHUNK 64

static inline uint32_t lookup(oc_acl_t *acl, const oc_acl_key_t *keys,
                              uint32_t n, uint32_t *out, int scalar)
{
    state_t *s = rcu_dereference(acl->state);
    const oc__acl_tree_t *t = s->tree;
    oc__acl_side_view_t sv = {
        s->side.blk, s->side.order, s->side.blk_min,
        (const oc__acl_side_filter_t *)s->side.fsrc,
        (const oc__acl_side_filter_t *)s->side.fdst, s->side.userdata,
        s->side.dead, __atomic_load_n(&s->side.count, __ATOMIC_ACQUIRE)};
    const uint8_t *dead =
        __atomic_load_n(&s->any_dead, __ATOMIC_ACQUIRE) ? s->dead : NULL;
    uint32_t rank[CHUNK];
    uint64_t best[CHUNK];

    for (uint32_t c = 0; c < n; c += CHUNK) {
        uint32_t cn = n - c < CHUNK ? n - c : CHUNK;
        if (scalar)
            oc__acl_tree_lookup_scalar(t, dead, keys + c, cn, rank);
        else
            oc__acl_tree_lookup(t, dead, keys + c, cn, rank);
        for (uint32_t i = 0; i < cn; i++) {
            uint32_t r = rank[i];
            out[c + i] = r == OC__ACL_NONE ? OC_ACL_NO_MATCH : t->userdata[r];
        }
        if (sv.cnt > 0) { /* rules added since the tree was built */
            for (uint32_t i = 0; i < cn; i++)
                best[i] = rank[i] == OC__ACL_NONE ? UINT64_MAX : t->order[rank[i]];
            oc__acl_side_lookup(&sv, keys + c, cn, best, out + c, scalar);
        }
    }
    return n;
}

uint32_t oc__acl_lookup_burst(oc_acl_t *acl, const oc_acl_key_t *keys,
                             uint32_t n, uint32_t *out_userdata)
{
    return lookup(acl, keys, n, out_userdata, 0);
}

uint32_t oc__acl_lookup_burst_scalar(oc_acl_t *acl, const oc_acl_key_t *keys,
                                    uint32_t n, uint32_t *out_userdata)
{
    return lookup(acl, keys, n, out_userdata, 1);
}
