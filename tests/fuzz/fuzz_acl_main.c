/*
 * fuzz_acl_main.c — the classifier target's part of the replay driver
 * (replay_main.c): its seeds, and random lines of the rule and trace
 * files' own tokens.  Single-threaded test program.
 */
#include <string.h>

#include "fuzz_acl.h"
#include "replay.h"

static size_t random_input(uint8_t *m)
{
    static const char *tok[] = {"@", "0", "1", "255", "256", "32", "33", ".",
                                "/", " : ", "\t", " ", "\n", "0x", "06", "FF",
                                "65535", "65536", "-1", "4294967295", "\r",
                                "10.0.0.0/8", "0.0.0.0/0", "0 : 65535"};
    size_t size = FUZZ_ACL_PREFIX, ntok = (size_t)(fuzz_replay_rnd() % 60);
    m[0] = (uint8_t)fuzz_replay_rnd();
    for (size_t i = 0; i < ntok; i++) {
        const char *t = tok[fuzz_replay_rnd() % (sizeof(tok) / sizeof(tok[0]))];
        size_t l = strlen(t);
        memcpy(m + size, t, l);
        size += l;
    }
    return size;
}

const fuzz_replay_target_t fuzz_replay_target = {
    .name = "fuzz_acl_replay",
    .seeds = fuzz_acl_seeds,
    .accepted = &fuzz_acl_accepted,
    .last_valid = &fuzz_acl_last_valid,
    .unit = "lines",
    .random_input = random_input,
};
