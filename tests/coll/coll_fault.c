/*
 * coll_fault.c — one rank of a collective fault test (fault-test.sh): the
 * ranks bootstrap through files (OC_RANK, OC_SIZE, OC_BOOTSTRAP_DIR; no
 * MPI, whose launcher would kill the whole job when one rank dies), check
 * one allreduce or all-to-all result exactly, say "looping", then run the
 * same collective again and again until one fails (saying "in the loop"
 * after two more).  The script SIGKILLs
 * one rank meanwhile; every other rank, blocked in oc_wait(), must get
 * OC_ERR_COLL_PEER_FAILED, and the next collective it starts must fail at
 * once with the same error.  Each survivor prints one JSON line:
 *
 *   {"rank":R,"status":"OC_ERR_COLL_PEER_FAILED","t_err_ns":T,
 *    "iterations":K,"next":"OC_ERR_COLL_PEER_FAILED","next_us":U}
 *
 * T is CLOCK_REALTIME, which the script compares with the time of its
 * kill (date +%s%N): the one clock two processes and a shell share.
 *
 * A survivor then waits until the file --release names exists before it
 * finalizes: a survivor that left early would be the next dead peer of
 * the others, and they must find the one the script killed.
 *
 *   coll_fault [--op allreduce|alltoall] [--bytes N] [--limit S]
 *              [--release PATH]
 *
 * Exit 0 when this rank saw the named error both times, 1 otherwise (also
 * when --limit S seconds pass without any failure: a hang).
 */
#include <offcore/coll.h>

#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static oc_status_t no_msg(void *arg, uint32_t src, const void *msg,
                          size_t len)
{
    (void)arg, (void)src, (void)msg, (void)len;
    return OC_OK;
}

static uint64_t now_ns(int clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void on_alarm(int sig)
{
    static const char msg[] = "coll_fault: FAIL: no failure reported within "
                              "the limit (a hang)\n";
    (void)sig;
    if (write(2, msg, sizeof(msg) - 1) < 0)
        _exit(1);
    _exit(1);
}

/* Start one collective on the whole vector. */
static oc_status_t start(oc_context_t *ctx, int a2a, const int64_t *in,
                         int64_t *out, size_t n, oc_request_t **r)
{
    if (a2a)
        return oc_ialltoall(ctx, in, out, n / oc_size(ctx), OC_INT64, r);
    return oc_iallreduce(ctx, in, out, n, OC_INT64, OC_SUM, r);
}

/* The exact result of the first round: element i of rank r's input is
 * r * 1000003 + i. */
static int verify(const oc_context_t *ctx, int a2a, const int64_t *out,
                  size_t n)
{
    uint32_t size = oc_size(ctx), me = oc_rank(ctx);
    size_t per = n / size;
    for (size_t i = 0; i < (a2a ? per * size : n); i++) {
        int64_t want = 0;
        if (a2a) /* block s from rank s: its elements me*per + j */
            want = (int64_t)(i / per) * 1000003 + (int64_t)(me * per + i % per);
        else
            for (uint32_t r = 0; r < size; r++)
                want += (int64_t)r * 1000003 + (int64_t)i;
        if (out[i] != want) {
            fprintf(stderr, "rank %u: FAIL element %zu: %lld, expected %lld\n",
                    me, i, (long long)out[i], (long long)want);
            return 0;
        }
    }
    return 1;
}

int main(int argc, char **argv)
{
    oc_context_params_t p = {.field_mask = OC_PARAM_HANDLER,
                             .handler = no_msg};
    size_t bytes = 16u << 20, n;
    unsigned limit = 60;
    const char *release = NULL;
    int a2a = 0, ok;
    oc_context_t *ctx;
    oc_request_t *r;
    oc_status_t st, st2;
    int64_t *in, *out;
    uint64_t k = 0, t_err, t0;

    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--op"))
            a2a = !strcmp(argv[i + 1], "alltoall");
        else if (!strcmp(argv[i], "--bytes"))
            bytes = strtoull(argv[i + 1], NULL, 0);
        else if (!strcmp(argv[i], "--limit"))
            limit = (unsigned)atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--release"))
            release = argv[i + 1];
    }
    if ((st = oc_init(&p, &ctx)) != OC_OK) {
        fprintf(stderr, "coll_fault: oc_init: %s\n", oc_status_string(st));
        return 1;
    }
    n = bytes / sizeof(int64_t);
    n -= n % oc_size(ctx);
    in = malloc(n * sizeof(*in));
    out = malloc(n * sizeof(*out));
    if (in == NULL || out == NULL || n == 0)
        return 1;
    for (size_t i = 0; i < n; i++)
        in[i] = (int64_t)oc_rank(ctx) * 1000003 + (int64_t)i;
    signal(SIGALRM, on_alarm);
    alarm(limit);
    /* round 1, checked: the job works before anything dies */
    st = start(ctx, a2a, in, out, n, &r);
    if (st == OC_OK)
        st = oc_wait(&r);
    if (st != OC_OK || !verify(ctx, a2a, out, n)) {
        fprintf(stderr, "rank %u: FAIL first round: %s\n", oc_rank(ctx),
                oc_status_string(st));
        return 1;
    }
    printf("rank %u: looping\n", oc_rank(ctx));
    fflush(stdout);
    do { /* until a peer dies: every rank blocks in oc_wait meanwhile */
        k++;
        st = start(ctx, a2a, in, out, n, &r);
        if (st == OC_OK)
            st = oc_wait(&r);
        if (st == OC_OK && k == 2) { /* the script kills from now on */
            printf("rank %u: in the loop\n", oc_rank(ctx));
            fflush(stdout);
        }
    } while (st == OC_OK);
    t_err = now_ns(CLOCK_REALTIME);
    alarm(0);
    /* later collectives fail fast with the same error */
    t0 = now_ns(CLOCK_MONOTONIC);
    st2 = start(ctx, a2a, in, out, n, &r);
    if (st2 == OC_OK) /* must not happen; bounded all the same */
        st2 = oc_wait(&r);
    t0 = now_ns(CLOCK_MONOTONIC) - t0;
    printf("{\"rank\":%u,\"status\":\"%.*s\",\"t_err_ns\":%llu,"
           "\"iterations\":%llu,\"next\":\"%.*s\",\"next_us\":%.1f}\n",
           oc_rank(ctx), (int)strcspn(oc_status_string(st), ":"),
           oc_status_string(st), (unsigned long long)t_err,
           (unsigned long long)k, (int)strcspn(oc_status_string(st2), ":"),
           oc_status_string(st2), (double)t0 / 1e3);
    fflush(stdout);
    ok = st == OC_ERR_COLL_PEER_FAILED && st2 == OC_ERR_COLL_PEER_FAILED;
    alarm(limit);
    while (release != NULL && access(release, F_OK) != 0)
        usleep(10000);
    alarm(0);
    oc_finalize(ctx);
    free(in);
    free(out);
    return ok ? 0 : 1;
}
