/*
 * fuzz_acl6_main.c — the IPv6 classifier target's part of the replay
 * driver (replay_main.c): its seeds (acl6_seeds.c), and random inputs of
 * rule lines made of the syntax's own words and prefixes around a few
 * shared bases, followed by random operations.  Single-threaded test
 * program.
 */
#include <stdio.h>
#include <string.h>

#include "fuzz_acl6.h"
#include "replay.h"


static size_t random_input(uint8_t *m)
{
    static const char *base[] = {"2001:db8::", "2001:db8:a:5::", "::",
                                 "fe80::1", "2001:db8:0:1::ff", "8000::",
                                 "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"};
    static const char *opt[] = {" proto=tcp", " proto=udp", " proto=6/0xf0",
                                " sport=1024-65535", " dport=53",
                                " dport=0-1023", " prio=3", " prio=0", ""};
    size_t size = 1, lines = 1 + fuzz_replay_rnd() % 12, nops;
    m[0] = (uint8_t)fuzz_replay_rnd();
    for (size_t i = 0; i < lines; i++) {
        char l[256];
        int n = snprintf(
            l, sizeof(l), "id=%u action=allow src=%s/%u dst=%s/%u%s%s\n",
            (unsigned)(fuzz_replay_rnd() % 16),
            base[fuzz_replay_rnd() % (sizeof(base) / sizeof(base[0]))],
            (unsigned)(fuzz_replay_rnd() % 130),
            base[fuzz_replay_rnd() % (sizeof(base) / sizeof(base[0]))],
            (unsigned)(fuzz_replay_rnd() % 129),
            opt[fuzz_replay_rnd() % (sizeof(opt) / sizeof(opt[0]))],
            opt[fuzz_replay_rnd() % (sizeof(opt) / sizeof(opt[0]))]);
        memcpy(m + size, l, (size_t)n);
        size += (size_t)n;
    }
    m[size++] = '\0';
    nops = fuzz_replay_rnd() % 12;
    for (size_t i = 0; i < nops * FUZZ_ACL6_OP_SIZE; i++)
        m[size++] = (uint8_t)fuzz_replay_rnd();
    return size;
}

const fuzz_replay_target_t fuzz_replay_target = {
    .name = "fuzz_acl6_replay",
    .seeds = fuzz_acl6_seeds,
    .accepted = &fuzz_acl6_accepted,
    .last_valid = &fuzz_acl6_last_valid,
    .unit = "rules",
    .random_input = random_input,
    /* every input creates a classifier and, after a change, waits out its
     * rebuild thread's 2 ms coalescing sleep when destroying it (acl.c):
     * a few ms a run (10-20 under ASan); about 640 runs take 2-4 s here,
     * about 300 take 4-5 s under ASan */
#if defined(FUZZ_REPLAY_ASAN)
    .stride = 150,
    .max_iterations = 50,
#else
    .stride = 71,
    .max_iterations = 100,
#endif
};
