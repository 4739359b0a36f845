/*
 * acl6_seeds.c — seeds of fuzz_acl6 (fuzz_acl6.h): IPv6 rule sets in
 * offcore-dp's syntax as an operator writes them (documentation and
 * link-local prefixes nested /10 to /128, a ClassBench-like set mapped
 * into 2001:db8:a::/(32+L), port ranges, rules naming no address, IPv4
 * rules beside them), loaded or added, with live updates after them, a
 * chain of nested prefixes deeper than the codes allow;
 * and near misses (a bad prefix length, mixed families, more rules than
 * the classifier holds).
 */
#include "fuzz_acl6.h"

#include <stdio.h>
#include <string.h>

#define OPS(...) (const uint8_t[]){__VA_ARGS__}, sizeof((uint8_t[]){__VA_ARGS__})

static void seed(fuzz_acl6_seed_fn fn, void *arg, uint8_t flags,
                 const char *text, const uint8_t *ops, size_t nops, int valid)
{
    uint8_t buf[2048];
    size_t n = strlen(text);
    buf[0] = flags;
    memcpy(buf + 1, text, n);
    buf[1 + n] = '\0';
    memcpy(buf + 2 + n, ops, nops);
    fn(arg, buf, 2 + n + nops, valid);
}

/* ops: [op, a, b, c] (fuzz_acl6.h) */
#define KEY FUZZ_ACL6_OP_KEY
#define DEL FUZZ_ACL6_OP_DEL
#define DEL_ID FUZZ_ACL6_OP_DEL_ID
#define READD FUZZ_ACL6_OP_READD
#define ADD FUZZ_ACL6_OP_ADD
#define DUP FUZZ_ACL6_OP_ADD_DUP
#define SYNC FUZZ_ACL6_OP_SYNC
#define RELOAD FUZZ_ACL6_OP_RELOAD

unsigned fuzz_acl6_seeds(fuzz_acl6_seed_fn fn, void *arg)
{
    /* a site's policy: nested documentation prefixes, ranges, ICMPv6 */
    static const char site[] =
        "id=1 prio=10 action=allow proto=tcp src=2001:db8:a::/48 "
        "dst=2001:db8:b:1::/64 sport=1024-65535 dport=443\n"
        "id=2 prio=20 action=deny src=2001:db8:a:5::/64 dport=22\n"
        "id=3 prio=5 action=count proto=udp src=2001:db8::/32 "
        "dst=2001:db8:b::/48 dport=53\n"
        "id=4 prio=100 action=deny proto=any\n"
        "id=5 action=allow proto=58 src=fe80::/10 dst=ff02::1/128\n"
        "id=6 prio=7 action=allow proto=tcp dst=2001:db8:b:1::80/128 "
        "dport=80-8080\n";
    /* ClassBench acl1-like lines with a/L mapped to 2001:db8:a::/(32+L) */
    static const char cb[] =
        "id=0 prio=0 action=allow proto=6 src=2001:db8:a:56e3:2b6d::/64 "
        "dst=2001:db8:a:1918:9406::/64 dport=1521\n"
        "id=1 prio=1 action=deny proto=17 src=2001:db8:a:1743:9a70::/60 "
        "dst=2001:db8:a:7d44:6d10::/60 sport=53 dport=25\n"
        "id=2 prio=2 action=allow src=::/0 dst=2001:db8:a:ef8:adf0::/60 "
        "dport=88\n"
        "id=3 prio=3 action=count proto=6/0xf0 src=2001:db8:a:cef:6450::/60 "
        "sport=1024-65535\n"
        "id=4 prio=4 action=deny proto=6 src=2001:db8:a:a00::/40 "
        "dst=2001:db8:a:a00::/40 sport=0 dport=65535\n";
    /* prefixes on the edges: /1 /31 /33 /63 /65 /127 /128, both ends of
     * the space, an IPv4 rule beside them */
    static const char edges[] =
        "id=10 action=allow src=8000::/1 dst=::/1\n"
        "id=11 action=deny src=2001:db8::/31 dst=2001:db8:8000::/33\n"
        "id=12 action=count src=2001:db8:0:1::/63 dst=2001:db8:0:1::/65 "
        "sport=0-1023\n"
        "id=13 prio=1 action=deny src=::/128 dst=ffff:ffff:ffff:ffff:ffff:"
        "ffff:ffff:ffff/128\n"
        "id=14 prio=2 action=allow src=2001:db8::fffe/127 dst=::1/128\n"
        "id=15 action=allow src=10.0.0.0/8 dst=10.1.0.0/16\n";
    /* deep nesting under one base: /32 to /44 */
    static const char deep[] =
        "id=20 action=allow src=2001:db8::/32\n"
        "id=21 action=allow src=2001:db8::/34\n"
        "id=22 action=allow src=2001:db8::/36\n"
        "id=23 action=allow src=2001:db8::/38\n"
        "id=24 action=allow src=2001:db8::/40\n"
        "id=25 action=allow src=2001:db8::/44\n";
    char both[sizeof(site) + sizeof(deep)];
    unsigned n = 0;

    memcpy(both, site, sizeof(site) - 1);
    memcpy(both + sizeof(site) - 1, deep, sizeof(deep));

    /* loaded and folded; keys, a delete, an add, a re-add */
    seed(fn, arg, FUZZ_ACL6_LOAD | FUZZ_ACL6_SYNC | 3 << 3, site,
         OPS(KEY, 0, 47, 63, KEY, 2, 31, 64, DEL, 1, 0, 0, ADD, 4, 56, 200,
             READD, 0, 0, 0, SYNC, 0, 0, 0),
         1), n++;
    /* added one by one; deletes by id, a duplicate id, a reload */
    seed(fn, arg, 1 << 3, site,
         OPS(ADD, 2, 128, 0, DEL_ID, 6, 0, 0, DUP, 3, 9, 9, RELOAD, 0, 0, 0,
             DEL, 0, 0, 0, DEL, 0, 0, 0),
         1), n++;
    seed(fn, arg, FUZZ_ACL6_LOAD | 5 << 3, cb,
         OPS(KEY, 3, 64, 70, ADD, 1, 48, 255, ADD, 4, 41, 39, SYNC, 0, 0, 0,
             DEL, 2, 0, 0, READD, 0, 0, 0),
         1), n++;
    seed(fn, arg, 2 << 3, edges,
         OPS(ADD, 0, 0, 128, ADD, 3, 127, 1, DEL, 1, 0, 0, SYNC, 0, 0, 0),
         1), n++;
    seed(fn, arg, FUZZ_ACL6_LOAD, deep,
         OPS(ADD, 0, 33, 129, ADD, 5, 48, 129, ADD, 2, 64, 129, RELOAD, 0, 0, 0),
         1), n++;
    /* past the nesting limit: /16../62 nested, then adds of /64../81 under
     * them (OC_ERR_UNSUPPORTED once the codes run out, nothing changed) */
    {
        char chain[24 * 48];
        uint8_t ops[18 * FUZZ_ACL6_OP_SIZE];
        size_t len = 0;
        for (unsigned i = 0; i < 24; i++)
            len += (size_t)snprintf(chain + len, sizeof(chain) - len,
                                    "id=%u prio=%u action=allow "
                                    "src=2001:db8::/%u\n",
                                    30 + i, 200 - i, 16 + 2 * i);
        for (unsigned i = 0; i < 18; i++) {
            ops[4 * i] = ADD;
            ops[4 * i + 1] = (uint8_t)(100 - i); /* prio: the deepest wins */
            ops[4 * i + 2] = (uint8_t)(64 + i);
            ops[4 * i + 3] = 129;
        }
        seed(fn, arg, FUZZ_ACL6_LOAD, chain, ops, sizeof(ops), 1), n++;
    }
    /* near misses: a /129, one IPv4 and one IPv6 prefix in a rule, more
     * rules than a classifier of 8 holds (then added: 8 go in); a
     * classifier of 8 filled by the updates */
    seed(fn, arg, FUZZ_ACL6_LOAD,
         "id=1 action=allow src=2001:db8::/129\n"
         "id=2 action=deny src=2001:db8::/32\n",
         OPS(DEL, 0, 0, 0), 0), n++;
    seed(fn, arg, 0, "id=1 action=allow src=10.0.0.0/8 dst=2001:db8::/32\n",
         OPS(KEY, 0, 0, 0), 0), n++;
    seed(fn, arg, FUZZ_ACL6_LOAD | FUZZ_ACL6_SMALL, both, OPS(ADD, 0, 0, 0), 0),
        n++;
    seed(fn, arg, FUZZ_ACL6_SMALL, site,
         OPS(ADD, 0, 1, 1, ADD, 1, 2, 2, ADD, 2, 3, 3), 1), n++;
    return n;
}
