/*
 * fuzz_dp_ctl_main.c — the offcore-dp control reader target's part of the
 * replay driver (replay_main.c): request lines the daemon must take (each
 * command, a CRLF ending, bytes after the newline) and ones it must refuse
 * (a NUL alone — it crashed the daemon —, a NUL or an escape mid-line, no
 * newline, a line of 4096 bytes), arriving in various chunk sizes; random
 * inputs are seeds with a few bytes changed.  Single-threaded.
 */
#include <string.h>

#include "fuzz_dp_ctl.h"
#include "replay.h"

static void seed(fuzz_replay_seed_fn fn, void *arg, unsigned *n, uint8_t how,
                 const char *s, size_t len, int valid)
{
    static uint8_t b[8192];
    b[0] = how;
    memcpy(b + 1, s, len);
    fn(arg, b, len + 1, valid);
    ++*n;
}

#define S(how, lit, valid) seed(fn, arg, &n, how, lit, sizeof(lit) - 1, valid)

static unsigned dp_ctl_seeds(fuzz_replay_seed_fn fn, void *arg)
{
    static char big[4097];
    unsigned n = 0;

    S(0, "ping\n", 1);
    S(1, "ping\r\n", 1);
    S(3, "rules add id=7 prio=1 action=deny proto=tcp dport=80\n", 1);
    S(0, "rules add id=7 action=deny colour=red\n", 1);
    S(5, "rules load /etc/offcore/r.rules action=count id_base=100\n", 1);
    S(0, "rules load /x id_base=nope\n", 1);
    S(2, "rules del 7\n", 1);
    S(0, "rules list\nand more after the newline", 1);
    S(7, "sa del in 0x100\n", 1);
    S(0, "flows 5\n", 1);
    S(2, "log dp:debug,pkt:info\n", 1);
    S(0, "log nosuch:loud,warn\n", 1);
    S(4, "conntrack list\ttenantA\n", 1);
    S(0, "\n", 1);
    S(0, "\0\n", 0);
    S(1, "ping\0\n", 0);
    S(0, "\x1b[2Jping\n", 0);
    S(0, "rules add id=1 action=deny\x07\n", 0);
    S(0, "ping\xff\n", 0);
    S(0, "ping", 0);
    memset(big, 'a', sizeof(big));
    seed(fn, arg, &n, 0, big, sizeof(big) - 1, 0); /* 4096 bytes, no newline */
    big[4094] = '\n';
    seed(fn, arg, &n, 9, big, 4095, 1); /* 4094 bytes and the newline */
    return n;
}

static size_t random_input(uint8_t *m)
{
    size_t n;
    const uint8_t *s =
        fuzz_replay_seed((unsigned)(fuzz_replay_rnd() % fuzz_replay_nseeds()),
                         &n);
    memcpy(m, s, n);
    for (int f = (int)(fuzz_replay_rnd() % 4); f > 0; f--)
        m[fuzz_replay_rnd() % n] = (uint8_t)fuzz_replay_rnd();
    if (fuzz_replay_rnd() % 4 == 0)
        n = 1 + fuzz_replay_rnd() % n;
    return n;
}

const fuzz_replay_target_t fuzz_replay_target = {
    .name = "fuzz_dp_ctl_replay",
    .seeds = dp_ctl_seeds,
    .accepted = &fuzz_dp_ctl_accepted,
    .last_valid = &fuzz_dp_ctl_last_valid,
    .unit = "request lines",
    .random_input = random_input,
};
