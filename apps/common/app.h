/*
 * app.h — helpers shared by the evaluation applications and benchmarks:
 * a counter-based random stream, division-free range reduction, flag
 * parsing with size suffixes, a monotonic timer, a JSON-line writer and
 * memory checks.  Nothing here depends on MPI or liboffcore (see app_mpi.h).
 *
 * The random stream is counter-based on purpose: update i of rank r is
 * oc_app_hash(seed, r, i), so any rank can regenerate any rank's stream to
 * verify a result without communicating it.
 */
#ifndef OC_APP_H
#define OC_APP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

__extension__ typedef unsigned __int128 oc_app_u128;

/* Exit codes shared by every app: 0 verified, 1 failed or wrong, 2 bad usage. */
enum { OC_APP_EXIT_OK = 0, OC_APP_EXIT_FAIL = 1, OC_APP_EXIT_USAGE = 2 };

#define OC_APP_GOLDEN 0x9e3779b97f4a7c15ull

/** splitmix64's output function (Steele, Lea, Flood 2014): a bijection of
 *  64-bit words with good avalanche. */
static inline uint64_t oc_app_mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/** Key of the stream of (seed, rank): hoist it out of hot loops. */
static inline uint64_t oc_app_stream_key(uint64_t seed, uint64_t rank)
{
    return oc_app_mix64(seed ^ oc_app_mix64(rank + OC_APP_GOLDEN));
}

/** Element @p i of the stream with key @p key: splitmix64 of state
 *  key + i * golden, i.e. exactly splitmix64's sequence started at key. */
static inline uint64_t oc_app_hash_k(uint64_t key, uint64_t i)
{
    return oc_app_mix64(key + i * OC_APP_GOLDEN);
}

/** Element @p i of rank @p rank's stream for @p seed. */
static inline uint64_t oc_app_hash(uint64_t seed, uint64_t rank, uint64_t i)
{
    return oc_app_hash_k(oc_app_stream_key(seed, rank), i);
}

/** Lemire's multiply-shift: maps a uniform 64-bit @p h to [0, n) with no
 *  division. */
static inline uint64_t oc_app_range(uint64_t h, uint64_t n)
{
    return (uint64_t)(((oc_app_u128)h * n) >> 64);
}

/**
 * Split @p h into a global slot of a table distributed as @p nranks blocks
 * of @p per_rank entries: *owner = g / per_rank and *idx = g % per_rank for
 * g = oc_app_range(h, nranks * per_rank), computed with two multiplies and
 * no division (the low word of h * nranks is the fraction left over).
 */
static inline void oc_app_slot(uint64_t h, uint32_t nranks, uint64_t per_rank,
                               uint32_t *owner, uint64_t *idx)
{
    oc_app_u128 m = (oc_app_u128)h * nranks;
    *owner = (uint32_t)(m >> 64);
    *idx = oc_app_range((uint64_t)m, per_rank);
}

/* ---- flags ---------------------------------------------------------- */

typedef enum {
    OC_APP_FLAG_SIZE,   /**< uint64, accepts K/M/G/T suffixes (powers of 1000
                             for counts: see oc_app_parse_size) */
    OC_APP_FLAG_U64,    /**< uint64 (suffixes too, as --help says) */
    OC_APP_FLAG_STRING, /**< const char * */
} oc_app_flag_type_t;

typedef struct {
    const char        *name;   /**< without the leading "--" */
    oc_app_flag_type_t type;
    void              *dst;    /**< uint64_t * or const char ** */
    uint64_t           min, max; /**< inclusive bounds for numbers */
    const char        *help;
} oc_app_flag_t;

/**
 * Parse a count with an optional suffix: K, M, G, T multiply by 10^3, 10^6,
 * 10^9, 10^12; Ki, Mi, Gi, Ti by 2^10 .. 2^40.  Decimal or 0x hex digits.
 * @return true and *out set; false on syntax error or overflow.
 */
bool oc_app_parse_size(const char *s, uint64_t *out);

/**
 * Parse argv against @p flags ("--name value" or "--name=value").  "--help"
 * prints usage (the @p synopsis line, then each flag with its help and its
 * current value as the default) to stdout and exits 0.  Anything else it
 * does not accept — unknown flag, missing value, bad number, out of bounds —
 * prints one line naming the problem and a hint to stderr and exits 2.
 * Call it before MPI_Init so that --help and bad flags need no launcher.
 */
void oc_app_parse_flags(int argc, char **argv, const char *prog,
                        const char *synopsis, const oc_app_flag_t *flags,
                        size_t nflags);

/** True when this process is rank 0 of a launcher, or not launched by one:
 *  read from the launcher's environment, usable before MPI_Init. */
bool oc_app_env_rank0(void);

/* ---- time, memory --------------------------------------------------- */

/** Seconds from CLOCK_MONOTONIC. */
double oc_app_now(void);

/** Bytes the kernel says can still be allocated without swapping
 *  (MemAvailable), or UINT64_MAX when it cannot tell. */
uint64_t oc_app_mem_available(void);

/**
 * Allocate @p n uint64_t's, backed by transparent huge pages where the
 * kernel allows (random access to big tables is otherwise TLB-bound), and
 * touched (set to zero) so that page faults happen here, not in a timed
 * region.  @return NULL when it cannot (n * 8 overflows, or no memory).
 * Free with oc_app_free_table(p, n).
 */
uint64_t *oc_app_alloc_table(uint64_t n);
void oc_app_free_table(uint64_t *p, uint64_t n);

/**
 * Grow @p p, an array of *cap elements of @p elem bytes, to hold at least
 * @p need (doubling, from 1024).  @return the array (*cap updated), or
 * NULL when memory is short — then @p p and *cap are unchanged.  For
 * arrays that grow by runs of messages: call it once per run, not per
 * element.
 */
void *oc_app_grow(void *p, size_t *cap, size_t need, size_t elem);

/* ---- output --------------------------------------------------------- */

/** A JSON object written into a fixed buffer and printed as one line. */
typedef struct {
    char   buf[4096];
    size_t len;
    int    depth;
    bool   need_comma;
} oc_app_json_t;

void oc_app_json_begin(oc_app_json_t *j);
void oc_app_json_str(oc_app_json_t *j, const char *key, const char *val);
void oc_app_json_u64(oc_app_json_t *j, const char *key, uint64_t val);
void oc_app_json_dbl(oc_app_json_t *j, const char *key, double val);
void oc_app_json_bool(oc_app_json_t *j, const char *key, bool val);
void oc_app_json_obj_begin(oc_app_json_t *j, const char *key);
void oc_app_json_obj_end(oc_app_json_t *j);
/** Close the object and write it, newline-terminated, to stdout; flushes. */
void oc_app_json_print(oc_app_json_t *j);

/** Human-readable byte count ("3.0 GiB") into @p buf; returns buf. */
const char *oc_app_fmt_bytes(uint64_t bytes, char *buf, size_t size);

#endif /* OC_APP_H */
