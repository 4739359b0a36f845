/*
 * test_spsc.c — the shared-memory ring and doorbell (util/spsc.h), the
 * rank<->agent segment built on it (wire/shmseg.h), and the engine's
 * outlets writing into a ring in place (oc_eng_out_t.ring): geometry,
 * wrap-around, full, one fence for many doorbells, a producer that
 * breaks the rules, a producer and a
 * consumer in two threads sleeping on doorbells, two mappings of one
 * segment, and bundles built in ring slots read back by src/wire.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#include "engine/engine.h"
#include "util/clock.h"
#include "util/spsc.h"
#include "wire/shmseg.h"

static void *ring_mem(uint32_t nslots, uint32_t slot, size_t *bytes)
{
    void *m;
    *bytes = oc__spsc_bytes(nslots, slot);
    assert_true(*bytes > 0);
    m = aligned_alloc(OC_SPSC_ALIGN, (*bytes + 63) & ~(size_t)63);
    assert_non_null(m);
    return m;
}

static void test_geometry(void **state)
{
    oc_spsc_t r;
    size_t bytes;
    uint8_t *m;
    (void)state;

    assert_int_equal(oc__spsc_bytes(3, 64), 0);   /* not a power of two */
    assert_int_equal(oc__spsc_bytes(0, 64), 0);
    assert_int_equal(oc__spsc_bytes(4, 0), 0);
    m = ring_mem(4, 100, &bytes);
    assert_int_equal(oc__spsc_attach(&r, m + 8, bytes, 4, 100, 1),
                     OC_ERR_INVALID_PARAM); /* misaligned */
    assert_int_equal(oc__spsc_attach(&r, m, bytes - 1, 4, 100, 1),
                     OC_ERR_INVALID_PARAM); /* too small */
    assert_int_equal(oc__spsc_attach(&r, m, bytes, 4, 100, 1), OC_OK);
    assert_int_equal(r.slot_size, 128); /* rounded to a cache line */
    free(m);
}

/* Lengths and bytes come out as they went in, in order, across many
 * turns of a 4-slot ring; a full ring refuses, a release makes room. */
static void test_wrap_full(void **state)
{
    oc_spsc_t p, c;
    size_t bytes;
    uint8_t *m = ring_mem(4, 64, &bytes), *s;
    uint32_t len, next_in = 0, next_out = 0;
    (void)state;

    assert_int_equal(oc__spsc_attach(&p, m, bytes, 4, 64, 1), OC_OK);
    assert_int_equal(oc__spsc_attach(&c, m, bytes, 4, 64, 0), OC_OK);
    assert_null(oc__spsc_peek(&c, &len)); /* empty */
    for (int round = 0; round < 50; round++) {
        int k = 1 + round % 4; /* publish k, then take k */
        for (int i = 0; i < k; i++) {
            s = oc__spsc_reserve(&p);
            assert_non_null(s);
            assert_ptr_equal(oc__spsc_reserve(&p), s); /* same slot */
            memset(s, (int)(next_in & 0xff), 64);
            oc__spsc_publish(&p, next_in % 65);
            next_in++;
        }
        if (k == 4) {
            assert_null(oc__spsc_reserve(&p)); /* full */
            assert_int_equal(oc__spsc_in_use(&p), 4);
        }
        for (int i = 0; i < k; i++) {
            assert_true(oc__spsc_ready(&c));
            s = oc__spsc_peek(&c, &len);
            assert_non_null(s);
            assert_int_equal(len, next_out % 65);
            assert_int_equal(s[0], next_out & 0xff);
            assert_int_equal(s[63], next_out & 0xff);
            next_out++;
            if (k == 4 && i == 0) { /* one released: room for one */
                oc__spsc_release(&c);
                assert_non_null(oc__spsc_reserve(&p));
                continue;
            }
            oc__spsc_release(&c);
        }
        assert_null(oc__spsc_peek(&c, &len));
        assert_false(oc__spsc_ready(&c));
    }
    assert_int_equal(oc__spsc_in_use(&p), 0);
    assert_false(c.broken);
    free(m);
}

/* Peeks run ahead of releases; releases go in order. */
static void test_peek_ahead(void **state)
{
    oc_spsc_t p, c;
    size_t bytes;
    uint8_t *m = ring_mem(8, 64, &bytes);
    uint32_t len;
    uint8_t *a, *b;
    (void)state;

    oc__spsc_attach(&p, m, bytes, 8, 64, 1);
    oc__spsc_attach(&c, m, bytes, 8, 64, 0);
    for (int i = 0; i < 3; i++) {
        oc__spsc_reserve(&p)[0] = (uint8_t)i;
        oc__spsc_publish(&p, 1);
    }
    a = oc__spsc_peek(&c, &len);
    b = oc__spsc_peek(&c, &len);
    assert_int_equal(a[0], 0);
    assert_int_equal(b[0], 1);
    oc__spsc_release(&c);
    assert_int_equal(oc__spsc_in_use(&p), 2);
    assert_int_equal(oc__spsc_peek(&c, &len)[0], 2);
    free(m);
}

/* A producer that scribbles on the shared indices or lengths: the
 * consumer stops, marked broken, never reads out of bounds. */
static void test_broken(void **state)
{
    oc_spsc_t p, c;
    size_t bytes;
    uint8_t *m = ring_mem(4, 64, &bytes);
    uint32_t len;
    (void)state;

    oc__spsc_attach(&p, m, bytes, 4, 64, 1);
    oc__spsc_attach(&c, m, bytes, 4, 64, 0);
    atomic_store(&p.sh->tail, 1000); /* more than the ring holds */
    assert_null(oc__spsc_peek(&c, &len));
    assert_true(c.broken);

    oc__spsc_attach(&p, m, bytes, 4, 64, 1);
    oc__spsc_attach(&c, m, bytes, 4, 64, 0);
    oc__spsc_reserve(&p);
    oc__spsc_publish(&p, 10);
    p.lens[0] = 65; /* longer than a slot */
    assert_null(oc__spsc_peek(&c, &len));
    assert_true(c.broken);
    free(m);
}

/* ---- two threads ---------------------------------------------------- */

#define NITEMS 200000u
#define PER_SLOT 7u

typedef struct {
    oc_spsc_t p, c;
    oc_bell_t room, data;    /* consumer rings room, producer rings data */
    uint64_t  prod_slept, cons_slept;
} pair_t;

static void *producer(void *arg)
{
    pair_t *x = arg;
    uint64_t v = 0;
    while (v < NITEMS) {
        uint8_t *s = oc__spsc_reserve(&x->p);
        if (s == NULL) {
            uint32_t seen = oc__bell_prepare(&x->room);
            if (oc__spsc_in_use(&x->p) < x->p.nslots) {
                oc__bell_cancel(&x->room);
                continue;
            }
            x->prod_slept += (uint64_t)oc__bell_wait(&x->room, seen, 100000);
            continue;
        }
        uint32_t k = 0;
        for (; k < PER_SLOT && v < NITEMS; k++, v++)
            memcpy(s + 8 * k, &v, 8);
        oc__spsc_publish(&x->p, 8 * k);
        oc__bell_ring(&x->data);
    }
    return NULL;
}

static void test_threads(void **state)
{
    pair_t x;
    size_t bytes;
    uint8_t *m = ring_mem(8, 64, &bytes);
    pthread_t t;
    uint64_t expect = 0;
    (void)state;

    memset(&x, 0, sizeof(x));
    oc__spsc_attach(&x.p, m, bytes, 8, 64, 1);
    oc__spsc_attach(&x.c, m, bytes, 8, 64, 0);
    assert_int_equal(pthread_create(&t, NULL, producer, &x), 0);
    while (expect < NITEMS) {
        uint32_t len;
        uint8_t *s = oc__spsc_peek(&x.c, &len);
        if (s == NULL) {
            uint32_t seen = oc__bell_prepare(&x.data);
            if (oc__spsc_ready(&x.c)) {
                oc__bell_cancel(&x.data);
                continue;
            }
            x.cons_slept += (uint64_t)oc__bell_wait(&x.data, seen, 100000);
            continue;
        }
        assert_true(len % 8 == 0 && len > 0 && len <= 8 * PER_SLOT);
        for (uint32_t k = 0; k < len / 8; k++) {
            uint64_t v;
            memcpy(&v, s + 8 * k, 8);
            assert_true(v == expect); /* in order, none lost or doubled */
            expect++;
        }
        oc__spsc_release(&x.c);
        oc__bell_ring(&x.room);
    }
    pthread_join(t, NULL);
    assert_false(x.c.broken);
    assert_int_equal(oc__spsc_in_use(&x.p), 0);
    print_message("  %u items; producer slept %llu times, consumer %llu\n",
                  NITEMS, (unsigned long long)x.prod_slept,
                  (unsigned long long)x.cons_slept);
    free(m);
}

/* One fence, many bells: oc__bell_ring_fenced wakes a waiter as
 * oc__bell_ring does, once, and costs nothing where nobody waits. */
static void test_bell_fenced(void **state)
{
    oc_bell_t b[3];
    (void)state;
    memset(b, 0, sizeof(b));
    (void)oc__bell_prepare(&b[1]);
    atomic_thread_fence(memory_order_seq_cst);
    assert_int_equal(oc__bell_ring_fenced(&b[0]), 0);
    assert_int_equal(oc__bell_ring_fenced(&b[1]), 1);
    assert_int_equal(oc__bell_ring_fenced(&b[2]), 0);
    assert_int_equal(oc__bell_ring_fenced(&b[1]), 0); /* once */
    assert_int_equal(atomic_load(&b[1].waiting), 0);
}

/* A bell rung while its sleeper waits wakes it once: the rings that follow
 * before the sleeper runs again find nobody waiting (no system call), and
 * a sleeper rung between prepare and wait does not sleep. */
static void test_bell_once(void **state)
{
    oc_bell_t b;
    uint32_t seen;
    (void)state;
    memset(&b, 0, sizeof(b));
    assert_int_equal(oc__bell_ring(&b), 0); /* nobody waits */
    seen = oc__bell_prepare(&b);
    assert_int_equal(oc__bell_ring(&b), 1); /* the waiter: woken */
    assert_int_equal(oc__bell_ring(&b), 0); /* once */
    assert_int_equal(oc__bell_ring(&b), 0);
    /* rung before it waits: the wait returns at once (seq moved) */
    assert_int_equal(oc__bell_wait(&b, seen, 10000000), 0);
    assert_int_equal(atomic_load(&b.waiting), 0);
}

/* The asymmetric fence (spsc.h), as the store-buffering litmus test it
 * exists for: each round, the "rank" publishes (store X) and reads the
 * agent's flag (load Y) with no fence of its own; the "agent" sets its flag
 * (store Y), calls oc__membarrier_global, and reads X.  Both reading the
 * old value (r1 = r2 = 0) is the lost wake-up: x86 allows it without the
 * barrier (OC_TEST_NO_MEMBARRIER=1 shows it happen), never with it.
 * Skipped where the kernel has no expedited membarrier. */
typedef struct {
    _Atomic uint32_t x, y, go, ready;
    uint32_t         r1;
    _Atomic uint32_t rounds;  /* lowered by the main thread at its deadline */
} sb_t;

static void *sb_rank(void *arg)
{
    sb_t *t = arg;
    for (uint32_t k = 1; k <= atomic_load(&t->rounds); k++) {
        /* both threads leave the same line's spin together */
        atomic_fetch_add_explicit(&t->go, 1, memory_order_acq_rel);
        while (atomic_load_explicit(&t->go, memory_order_acquire) < 2 * k)
            ;
        atomic_store_explicit(&t->x, k, memory_order_relaxed);
        atomic_signal_fence(memory_order_seq_cst); /* no CPU fence */
        t->r1 = atomic_load_explicit(&t->y, memory_order_relaxed);
        atomic_store_explicit(&t->ready, k, memory_order_release);
    }
    return NULL;
}

static void test_membarrier(void **state)
{
    sb_t t;
    pthread_t th;
    uint32_t both_old = 0;
    const int barrier = getenv("OC_TEST_NO_MEMBARRIER") == NULL;
    (void)state;
    if (!oc__membarrier_supported() || !oc__membarrier_register())
        skip();
    memset(&t, 0, sizeof(t));
    atomic_store(&t.rounds, 50000);
    assert_int_equal(pthread_create(&th, NULL, sb_rank, &t), 0);
    const uint64_t deadline = oc__now_us() + 3000000; /* a loaded machine */
    for (uint32_t k = 1; k <= atomic_load(&t.rounds); k++) {
        if ((k & 1023) == 0 && oc__now_us() > deadline)
            atomic_store(&t.rounds, k); /* this round is the last */
        atomic_fetch_add_explicit(&t.go, 1, memory_order_acq_rel);
        while (atomic_load_explicit(&t.go, memory_order_acquire) < 2 * k)
            ;
        atomic_store_explicit(&t.y, k, memory_order_seq_cst);
        if (barrier)
            assert_int_equal(oc__membarrier_global(), 0);
        uint32_t r2 = atomic_load_explicit(&t.x, memory_order_relaxed);
        while (atomic_load_explicit(&t.ready, memory_order_acquire) != k)
            ;
        both_old += t.r1 != k && r2 != k;
    }
    pthread_join(th, NULL);
    print_message("  %u rounds, %s: both saw the old value %u times\n",
                  atomic_load(&t.rounds), barrier ? "membarrier" : "NO membarrier",
                  both_old);
    assert_int_equal(both_old, 0);
}

/* ---- the segment ---------------------------------------------------- */

static void test_segment(void **state)
{
    oc_shmseg_t a, r;
    int fd;
    uint32_t len;
    uint8_t *s;
    (void)state;

    assert_int_equal(oc__shmseg_create(3, 512, 1, &a, &fd), OC_ERR_INVALID_PARAM);
    assert_int_equal(oc__shmseg_create(4, 512, 1, &a, &fd), OC_OK);
    assert_int_equal(oc__shmseg_map(fd, &r), OC_OK); /* a second mapping */
    assert_ptr_not_equal(a.base, r.base);
    /* rank -> agent */
    s = oc__spsc_reserve(&r.up);
    memcpy(s, "hello", 5);
    oc__spsc_publish(&r.up, 5);
    s = oc__spsc_peek(&a.up, &len);
    assert_non_null(s);
    assert_int_equal(len, 5);
    assert_memory_equal(s, "hello", 5);
    oc__spsc_release(&a.up);
    assert_int_equal(oc__spsc_in_use(&r.up), 0);
    /* agent -> rank */
    s = oc__spsc_reserve(&a.down[0]);
    memcpy(s, "back", 4);
    oc__spsc_publish(&a.down[0], 4);
    assert_memory_equal(oc__spsc_peek(&r.down[0], &len), "back", 4);
    /* sealed: the rank cannot shrink it under the agent */
    assert_int_not_equal(ftruncate(fd, 4096), 0);
    oc__shmseg_unmap(&r);
    oc__shmseg_unmap(&a);
    oc__shmseg_unmap(&a); /* twice: no-op */
    close(fd);

    /* not a segment: refused */
    fd = memfd_create("not-a-segment", MFD_CLOEXEC);
    assert_true(fd >= 0);
    assert_int_equal(ftruncate(fd, 65536), 0);
    assert_int_equal(oc__shmseg_map(fd, &r), OC_ERR_INVALID_PARAM);
    close(fd);
}

/* One down ring per routing thread: each its own slots, the rank reads
 * them apart; the count is bounded and checked on both sides.  The
 * descriptor ring is apart from them and from the completion ring. */
static void test_segment_down_rings(void **state)
{
    oc_shmseg_t a, r;
    oc_shmseg_hdr_t h;
    int fd;
    uint32_t len;
    (void)state;

    assert_int_equal(oc__shmseg_create(4, 512, 0, &a, &fd), OC_ERR_INVALID_PARAM);
    assert_int_equal(oc__shmseg_create(4, 512, OC_SHMSEG_MAX_DOWN + 1, &a, &fd),
                     OC_ERR_INVALID_PARAM);
    assert_int_equal(oc__shmseg_create(4, 512, 3, &a, &fd), OC_OK);
    assert_int_equal(oc__shmseg_map(fd, &r), OC_OK);
    assert_int_equal(r.ndown, 3);
    for (uint32_t i = 0; i < 3; i++) {
        uint8_t *s = oc__spsc_reserve(&a.down[i]);
        assert_non_null(s);
        s[0] = (uint8_t)('a' + i);
        oc__spsc_publish(&a.down[i], 1);
    }
    for (uint32_t i = 0; i < 3; i++) {
        const uint8_t *s = oc__spsc_peek(&r.down[i], &len);
        assert_non_null(s);
        assert_int_equal(len, 1);
        assert_int_equal(s[0], 'a' + i);
        assert_null(oc__spsc_peek(&r.down[i], &len)); /* one each */
        oc__spsc_release(&r.down[i]);
    }
    assert_int_equal(oc__spsc_in_use(&a.down[1]), 0);
    /* the rings do not overlap: filling ring 2 leaves ring 0 empty */
    for (int k = 0; k < 4; k++) {
        assert_non_null(oc__spsc_reserve(&a.down[2]));
        oc__spsc_publish(&a.down[2], 512);
    }
    assert_null(oc__spsc_reserve(&a.down[2]));
    assert_int_equal(oc__spsc_in_use(&a.down[0]), 0);
    assert_null(oc__spsc_peek(&r.down[0], &len));
    /* the descriptor ring, the rank's to write: apart from the completion
     * ring (same geometry) and the last down ring */
    for (uint32_t k = 0; k < OC_SHMSEG_CDOWN_SLOTS; k++) {
        uint8_t *s = oc__spsc_reserve(&r.cup);
        assert_non_null(s);
        memset(s, 0xc0 + (int)(k & 15), OC_SHMSEG_CDOWN_SLOT);
        oc__spsc_publish(&r.cup, OC_SHMSEG_CDOWN_SLOT);
    }
    assert_null(oc__spsc_reserve(&r.cup)); /* full */
    assert_int_equal(oc__spsc_in_use(&a.cdown), 0);
    assert_null(oc__spsc_peek(&r.cdown, &len));
    for (uint32_t k = 0; k < OC_SHMSEG_CDOWN_SLOTS; k++) {
        const uint8_t *s = oc__spsc_peek(&a.cup, &len);
        assert_non_null(s);
        assert_int_equal(len, OC_SHMSEG_CDOWN_SLOT);
        assert_int_equal(s[0], 0xc0 + (k & 15));
        assert_int_equal(s[OC_SHMSEG_CDOWN_SLOT - 1], 0xc0 + (k & 15));
        oc__spsc_release(&a.cup);
    }
    for (uint32_t k = 0; k < 4; k++) { /* down ring 2 kept its slots */
        assert_non_null(oc__spsc_peek(&r.down[2], &len));
        assert_int_equal(len, 512);
    }
    oc__shmseg_unmap(&r);
    oc__shmseg_unmap(&a);
    /* a header that claims more rings than the file holds: refused */
    assert_int_equal(pread(fd, &h, sizeof(h), 0), (ssize_t)sizeof(h));
    h.ndown = 4;
    assert_int_equal(pwrite(fd, &h, sizeof(h), 0), (ssize_t)sizeof(h));
    assert_int_equal(oc__shmseg_map(fd, &r), OC_ERR_INVALID_PARAM);
    h.ndown = 0;
    assert_int_equal(pwrite(fd, &h, sizeof(h), 0), (ssize_t)sizeof(h));
    assert_int_equal(oc__shmseg_map(fd, &r), OC_ERR_INVALID_PARAM);
    h.ndown = 3, h.version = 1; /* the one-down-ring layout */
    assert_int_equal(pwrite(fd, &h, sizeof(h), 0), (ssize_t)sizeof(h));
    assert_int_equal(oc__shmseg_map(fd, &r), OC_ERR_INVALID_PARAM);
    h.version = 2; /* no descriptor ring */
    assert_int_equal(pwrite(fd, &h, sizeof(h), 0), (ssize_t)sizeof(h));
    assert_int_equal(oc__shmseg_map(fd, &r), OC_ERR_INVALID_PARAM);
    close(fd);

    /* more rings than any agent has threads, in a file of exactly that
     * size (not sealed: a forged segment): refused by the bound itself */
    const size_t ring = oc__spsc_bytes(4, 512);
    const size_t cring = oc__spsc_bytes(OC_SHMSEG_CDOWN_SLOTS,
                                        OC_SHMSEG_CDOWN_SLOT);
    h.version = OC_SHMSEG_VERSION, h.ndown = OC_SHMSEG_MAX_DOWN + 1;
    fd = memfd_create("forged-segment", MFD_CLOEXEC);
    assert_true(fd >= 0);
    assert_int_equal(ftruncate(fd, (off_t)(OC_SHMSEG_HDR +
                                           (2 + (size_t)OC_SHMSEG_MAX_DOWN) * ring +
                                           2 * cring)), 0);
    assert_int_equal(pwrite(fd, &h, sizeof(h), 0), (ssize_t)sizeof(h));
    assert_int_equal(oc__shmseg_map(fd, &r), OC_ERR_INVALID_PARAM);
    h.ndown = UINT32_MAX; /* overflows any size */
    assert_int_equal(pwrite(fd, &h, sizeof(h), 0), (ssize_t)sizeof(h));
    assert_int_equal(oc__shmseg_map(fd, &r), OC_ERR_INVALID_PARAM);
    h.ndown = OC_SHMSEG_MAX_DOWN + 1, h.cnslots = 3; /* completion ring */
    assert_int_equal(pwrite(fd, &h, sizeof(h), 0), (ssize_t)sizeof(h));
    assert_int_equal(oc__shmseg_map(fd, &r), OC_ERR_INVALID_PARAM);
    close(fd);
}

/* ---- the engine's outlets in a ring ---------------------------------- */

typedef struct {
    oc_spsc_t *ring;
    int        published, pooled;
} own_t;

static oc_status_t handoff(void *arg, oc_eng_out_t *o, oc_eng_buf_t *b,
                           uint32_t len, uint32_t count)
{
    own_t *w = arg;
    (void)o;
    (void)count;
    if (b->ring) {
        oc__spsc_publish(w->ring, len);
        w->published++;
    } else {
        w->pooled++;
        oc__eng_buf_put(b->eng, b);
    }
    return OC_OK;
}

static void test_engine_ring(void **state)
{
    oc_spsc_t p, c;
    size_t bytes;
    uint8_t *m = ring_mem(4, 512, &bytes);
    own_t w = {&p, 0, 0};
    oc_eng_params_t ep;
    oc_eng_t *e;
    oc_eng_out_t o;
    oc_eng_buf_t rb;
    uint64_t v, got = 0;
    uint32_t n = 0, len;
    uint8_t *s;
    (void)state;

    oc__spsc_attach(&p, m, bytes, 4, 512, 1);
    oc__spsc_attach(&c, m, bytes, 4, 512, 0);
    memset(&ep, 0, sizeof(ep));
    ep.bundle_size = 1024; /* larger than a slot: the slot bounds it */
    ep.nbufs = 2;
    ep.flush_timeout_us = 1000;
    ep.handoff = handoff;
    ep.arg = &w;
    ep.reserve = true;
    assert_int_equal(oc__eng_create(&ep, &e), OC_OK);
    oc__eng_out_init(&o);
    memset(&rb, 0, sizeof(rb));
    o.ring = &p;
    o.ring_buf = &rb;
    o.column = 1;
    o.mixed_only = 1;
    o.flags = OC_WIRE_F_STREAM;
    o.src = 1;
    o.job = 9;
    /* fill the ring: the fifth bundle finds it full */
    for (v = 0;; v++) {
        oc_status_t st = oc__eng_put(e, &o, (uint32_t)(v % 3), 1, &v, 8);
        if (st == OC_ERR_NO_RESOURCE)
            break;
        assert_int_equal(st, OC_OK);
        n++;
    }
    assert_int_equal(w.published, 4);
    assert_int_equal(w.pooled, 0);
    /* a handler's reply still gets a buffer (the reserve) */
    e->in_handler = 1;
    assert_int_equal(oc__eng_put(e, &o, 0, 1, &v, 8), OC_OK);
    e->in_handler = 0;
    oc__eng_flush(e, &o, OC_ENG_FLUSH_EXPLICIT);
    assert_int_equal(w.pooled, 1);
    /* the consumer reads the bundles in place, as a receiver validates */
    while ((s = oc__spsc_peek(&c, &len)) != NULL) {
        oc_wire_hdr_t h;
        oc_wire_check_t chk = {9, 3, OC_WIRE_RANK_NONE, OC_WIRE_RANK_NONE, 0};
        oc_wire_iter_t it;
        oc_wire_msg_t msg;
        assert_true(len <= 512);
        assert_int_equal(oc__wire_validate(s, len, &chk, &h), OC_OK);
        oc__wire_iter_init(&it, s, &h);
        while (oc__wire_iter_next(&it, &msg)) {
            uint64_t x;
            memcpy(&x, msg.payload, 8);
            assert_true(x == got);
            assert_int_equal(msg.dst, (uint32_t)(got % 3));
            got++;
        }
        oc__spsc_release(&c);
    }
    assert_int_equal(got, n);
    oc__eng_destroy(e);
    free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_geometry),
        cmocka_unit_test(test_wrap_full),
        cmocka_unit_test(test_peek_ahead),
        cmocka_unit_test(test_broken),
        cmocka_unit_test(test_threads),
        cmocka_unit_test(test_bell_once),
        cmocka_unit_test(test_bell_fenced),
        cmocka_unit_test(test_membarrier),
        cmocka_unit_test(test_segment),
        cmocka_unit_test(test_segment_down_rings),
        cmocka_unit_test(test_engine_ring),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
