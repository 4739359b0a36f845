/*
 * fuzz_nvmf_conf_main.c — the configuration target's part of the replay
 * driver (replay_main.c): its seeds (two files that must load, two that
 * must not), and, as its random inputs, seeds with characters changed to
 * random bytes or the format's own, runs of text inserted and characters
 * deleted.  Single-threaded test program.
 */
#include <string.h>

#include "replay.h"

extern unsigned long fuzz_nvmf_conf_accepted;

static const struct {
    const char *text;
    int valid;
} conf_seeds[] = {
    {"listen 0.0.0.0:4420\nmetrics 127.0.0.1:9465\n"
     "subsystem nqn.2026-11.io.offcore:a\n  allow-any-host\n"
     "  namespace 1 /x size=1G\n",
     1},
    {"# two subsystems\nlisten 127.0.0.1:4420\nadvertise 10.0.0.1\n"
     "kato-grace-ms 100\nsend-timeout-ms 1000\npoll-us 50\ncpu 1\n"
     "subsystem nqn.2026-11.io.offcore:a\n"
     "  allow-host nqn.2014-08.org.nvmexpress:uuid:1\n"
     "  allow-host nqn.2014-08.org.nvmexpress:uuid:2\n"
     "  namespace 1 /a size=64M block=512 integrity=on\n"
     "  namespace 2 /b size=16M integrity=on integrity-file=/b.crc key=/k "
     "direct=off\n"
     "subsystem nqn.2026-11.io.offcore:b\n  allow-any-host\n"
     "  namespace 7 /dev/sdz\n",
     1},
    {"subsystem nqn.2026-11.io.offcore:a\n  namespace 1 /x size=1000\n", 0},
    {"listen nowhere\nbogus\nnamespace 1 /x\n", 0},
};
#define NSEEDS (sizeof(conf_seeds) / sizeof(conf_seeds[0]))

static unsigned nvmf_conf_seeds(fuzz_replay_seed_fn fn, void *arg)
{
    for (size_t i = 0; i < NSEEDS; i++)
        fn(arg, (const uint8_t *)conf_seeds[i].text,
           strlen(conf_seeds[i].text), conf_seeds[i].valid);
    return NSEEDS;
}

static size_t random_input(uint8_t *m)
{
    size_t n;
    const uint8_t *s =
        fuzz_replay_seed((unsigned)(fuzz_replay_rnd() % fuzz_replay_nseeds()),
                         &n);
    memcpy(m, s, n);
    for (int f = 1 + (int)(fuzz_replay_rnd() % 4); f--;) {
        size_t at = fuzz_replay_rnd() % n;
        switch (fuzz_replay_rnd() % 4) {
        case 0:
            m[at] = (uint8_t)fuzz_replay_rnd();
            break;
        case 1:
            m[at] = (uint8_t) " \n#=:.0123456789"[fuzz_replay_rnd() % 16];
            break;
        case 2:
            if (n + 16 < FUZZ_REPLAY_MAXLEN) {
                memmove(m + at + 8, m + at, n - at);
                memset(m + at, 'x', 8);
                n += 8;
            }
            break;
        default:
            if (n > 8) {
                memmove(m + at, m + at + 1, n - at - 1);
                n--;
            }
            break;
        }
    }
    return n;
}

const fuzz_replay_target_t fuzz_replay_target = {
    .name = "fuzz_nvmf_conf_replay",
    .seeds = nvmf_conf_seeds,
    .accepted = &fuzz_nvmf_conf_accepted,
    .random_input = random_input,
};
