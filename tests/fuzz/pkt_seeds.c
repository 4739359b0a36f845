/*
 * pkt_seeds.c — frames of every shape the packet parser knows (valid and
 * near misses), and config/rule texts, as seeds of fuzz_pkt and as inputs
 * of tests/unit/test_pkt.c.  Builders write into a caller's buffer.
 */
#include "fuzz_pkt.h"

#include <string.h>

static size_t eth(uint8_t *f, uint16_t et, int vlans)
{
    size_t o = 12;
    memset(f, 0, 12);
    f[0] = 0x02;
    f[6] = 0x02;
    f[11] = 1;
    for (int i = 0; i < vlans; i++) {
        f[o] = i == 0 && vlans == 2 ? 0x88 : 0x81;
        f[o + 1] = i == 0 && vlans == 2 ? 0xa8 : 0x00;
        f[o + 2] = 0;
        f[o + 3] = (uint8_t)(10 + i);
        o += 4;
    }
    f[o] = (uint8_t)(et >> 8);
    f[o + 1] = (uint8_t)et;
    return o + 2;
}

size_t fuzz_pkt_ipv4(uint8_t *f, int vlans, uint8_t proto, uint16_t sport,
                     uint16_t dport, uint16_t frag, size_t payload)
{
    size_t o = eth(f, 0x0800, vlans), l4 = 0, tot;
    uint8_t *ip = f + o;
    switch (proto) {
    case 6: l4 = 20; break;
    case 17: l4 = 8; break;
    case 1: l4 = 8; break;
    default: l4 = 0; break;
    }
    tot = 20 + l4 + payload;
    memset(ip, 0, tot);
    ip[0] = 0x45;
    ip[2] = (uint8_t)(tot >> 8);
    ip[3] = (uint8_t)tot;
    ip[6] = (uint8_t)(frag >> 8);
    ip[7] = (uint8_t)frag;
    ip[8] = 64;
    ip[9] = proto;
    ip[12] = 10, ip[13] = 0, ip[14] = 0, ip[15] = 1;
    ip[16] = 10, ip[17] = 0, ip[18] = 0, ip[19] = 2;
    if (proto == 6 || proto == 17) {
        ip[20] = (uint8_t)(sport >> 8);
        ip[21] = (uint8_t)sport;
        ip[22] = (uint8_t)(dport >> 8);
        ip[23] = (uint8_t)dport;
        if (proto == 6)
            ip[32] = 5 << 4;
        else {
            ip[24] = (uint8_t)((8 + payload) >> 8);
            ip[25] = (uint8_t)(8 + payload);
        }
    } else if (proto == 1) {
        ip[20] = 8;
    }
    return o + tot;
}

size_t fuzz_pkt_ipv6(uint8_t *f, int ext, uint8_t proto, uint16_t dport)
{
    size_t o = eth(f, 0x86dd, 0), l = 40, plen;
    uint8_t *ip = f + o;
    memset(ip, 0, 40 + 8 * ext + 20);
    ip[0] = 0x60;
    ip[6] = ext ? 0 : proto; /* hop-by-hop first when ext */
    ip[7] = 64;
    ip[23] = 1;
    ip[39] = 2;
    for (int i = 0; i < ext; i++) {
        ip[l] = i + 1 < ext ? 60 : proto; /* then destination options */
        ip[l + 1] = 0;                    /* 8 bytes */
        l += 8;
    }
    if (proto == 6) {
        ip[l + 2] = (uint8_t)(dport >> 8);
        ip[l + 3] = (uint8_t)dport;
        ip[l + 12] = 5 << 4;
        l += 20;
    } else if (proto == 17) {
        ip[l + 2] = (uint8_t)(dport >> 8);
        ip[l + 3] = (uint8_t)dport;
        ip[l + 5] = 8;
        l += 8;
    }
    plen = l - 40;
    ip[4] = (uint8_t)(plen >> 8);
    ip[5] = (uint8_t)plen;
    return o + l;
}

size_t fuzz_pkt_arp(uint8_t *f)
{
    size_t o = eth(f, 0x0806, 0);
    memset(f + o, 0, 28);
    return o + 28;
}

static const char *const texts[] = {
    "id=1 action=deny proto=tcp dport=80",
    "id=2 prio=5 action=count src=10.0.0.0/8 dst=192.168.1.1/32 sport=1024-65535 "
    "dport=22 proto=6/0xff",
    "id=3 action=allow proto=any src=any dst=any sport=any dport=any",
    "id=4 action=deny proto=17/0x0f",
    "threads 2\nburst 32\nring 1024\nattach t0 host=a0 wire=b0 xdp=generic\n"
    "rule id=1 action=deny proto=tcp dport=80\npolicy ipv6 drop\ndefault deny\n",
    /* the tenant directives (src/dp/tenant/tenant_conf.c) */
    "threads 1\nattach a host=h0 wire=w0\ntenant A vni=100 attach=a "
    "mac=02:00:00:00:00:a1 ip=10.0.0.1 local=192.168.0.1 "
    "local_mac=02:00:00:00:01:01 remote=192.168.0.2 remote_mac=02:00:00:00:01:02 "
    "rate=100 burst=20000\ntenant_rule A ingress id=1 action=allow proto=tcp "
    "dport=80\nconntrack flows=1000 tcp_established=3600 udp=10\n",
    /* two tenants on one uplink (a shared wire port) with ESP and IPFIX */
    "attach a host=h0 wire=up\nattach b host=h1 wire=up\ntenant A vni=100 "
    "attach=a mac=02:00:00:00:00:a1 ip=10.0.0.1 local=192.168.0.1 "
    "local_mac=02:00:00:00:01:01 remote=192.168.0.2 remote_mac=02:00:00:00:01:02\n"
    "tenant B vni=200 attach=b mac=02:00:00:00:00:b1 ip=10.0.0.1 "
    "local=192.168.0.1 local_mac=02:00:00:00:01:01 remote=192.168.0.2 "
    "remote_mac=02:00:00:00:01:02\nesp on\nipfix 127.0.0.1:4739\n",
    /* a tenant with two attachments on one uplink (attach=/mac=/ip= lists) */
    "attach a host=h0 wire=up\nattach a2 host=h2 wire=up\ntenant A vni=100 "
    "attach=a,a2 mac=02:00:00:00:00:a1,02:00:00:00:00:a2 ip=10.0.0.1,10.0.0.2 "
    "local=192.168.0.1 local_mac=02:00:00:00:01:01 remote=192.168.0.2 "
    "remote_mac=02:00:00:00:01:02\n",
    /* IPv6 in a tenant: ip6= lists, rules with IPv6 prefixes, flows6= */
    "attach a host=h0 wire=up\nattach a2 host=h2 wire=up\ntenant A vni=100 "
    "attach=a,a2 mac=02:00:00:00:00:a1,02:00:00:00:00:a2 ip=10.0.0.1,10.0.0.2 "
    "ip6=fd00::1+2001:db8::1,- local=192.168.0.1 local_mac=02:00:00:00:01:01 "
    "remote=192.168.0.2 remote_mac=02:00:00:00:01:02\ntenant_rule A ingress "
    "id=1 action=allow proto=tcp src=fd00::/64 dport=22\ntenant_rule A egress "
    "id=2 action=deny dst=2001:db8::5\nconntrack flows=100 flows6=50\n",
    "attach x host=h wire=w\nattach y host=h wire=v\nrule id=1 action=deny\n"
    "rule id=1 action=allow\nbogus line\nthreads 0\n",
};

/* IPv6 rules (the IPv6 classifier): the edges of the prefix lengths, and
 * near misses */
static const struct {
    const char *text;
    int mode, valid;
} texts6[] = {
    {"id=5 action=deny proto=tcp src=2001:db8::/32 dst=::1/128 dport=443",
     FUZZ_PKT_RULE, 1},
    {"id=6 action=count src=::/0 dst=fd00::/1 sport=1-2", FUZZ_PKT_RULE, 1},
    {"id=7 action=allow src=ffff:ffff:ffff:ffff::/64 dst=fe80::1/127",
     FUZZ_PKT_RULE, 1},
    {"id=8 action=deny src=::ffff:10.0.0.1/127", FUZZ_PKT_RULE, 1},
    {"id=9 action=deny src=10.0.0.0/8 dst=fd00::/8", FUZZ_PKT_RULE, 0},
    {"id=10 action=deny src=fd00::/129", FUZZ_PKT_RULE, 0},
    {"id=11 action=deny dst=fd00::1/", FUZZ_PKT_RULE, 0},
    {"threads 1\nattach t0 host=a0 wire=b0\nrule id=1 action=deny proto=tcp "
     "src=2001:db8::/48 dport=80\nrule id=2 action=allow dst=::/0\n"
     "default deny\n", FUZZ_PKT_CONF, 1},
};

unsigned fuzz_pkt_seeds(fuzz_pkt_seed_fn fn, void *arg)
{
    uint8_t b[2048];
    unsigned n = 0;
    size_t len;
#define SEED(mode, l, valid)                                                   \
    do {                                                                       \
        memmove(b + 1, b, l);                                                  \
        b[0] = mode;                                                           \
        fn(arg, b, (l) + 1, valid);                                            \
        n++;                                                                   \
    } while (0)
    len = fuzz_pkt_ipv4(b, 0, 6, 1234, 80, 0, 10);
    SEED(FUZZ_PKT_FRAME, len, 1);
    len = fuzz_pkt_ipv4(b, 1, 17, 53, 5353, 0, 4);
    SEED(FUZZ_PKT_FRAME, len, 1);
    len = fuzz_pkt_ipv4(b, 2, 1, 0, 0, 0, 0);
    SEED(FUZZ_PKT_FRAME, len, 1);
    /* TCP with the timestamps option (NOP, NOP, TS), both directions */
    for (int dir = 0; dir < 2; dir++) {
        len = fuzz_pkt_ipv4(b, 0, 6, dir ? 80 : 1234, dir ? 1234 : 80, 0, 12);
        static const uint8_t opt[12] = {1, 1, 8, 10, 0, 0, 0x10, 0, 0, 0, 0x0f, 0xff};
        b[14 + 32] = 8 << 4;
        b[14 + 33] = 0x10; /* ACK */
        memcpy(b + 14 + 40, opt, sizeof(opt));
        if (dir) {
            b[14 + 15] = 2, b[14 + 19] = 1; /* 10.0.0.2 -> 10.0.0.1 */
            memcpy(b + 14 + 44, opt + 8, 4); /* echo the other's TSval */
            memcpy(b + 14 + 48, opt + 4, 4);
        }
        SEED(FUZZ_PKT_FRAME, len, 1);
    }
    len = fuzz_pkt_ipv4(b, 0, 6, 1, 2, 0x2000, 0); /* first fragment */
    SEED(FUZZ_PKT_FRAME, len, 1);
    len = fuzz_pkt_ipv4(b, 0, 17, 1, 2, 0x0010, 0); /* later fragment */
    SEED(FUZZ_PKT_FRAME, len, 1);
    len = fuzz_pkt_ipv4(b, 0, 47, 0, 0, 0, 8); /* GRE: no ports */
    SEED(FUZZ_PKT_FRAME, len, 1);
    len = fuzz_pkt_ipv6(b, 0, 6, 443);
    SEED(FUZZ_PKT_FRAME, len, 1);
    len = fuzz_pkt_ipv6(b, 3, 17, 53);
    SEED(FUZZ_PKT_FRAME, len, 1);
    len = fuzz_pkt_arp(b);
    SEED(FUZZ_PKT_FRAME, len, 1);
    for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
        len = strlen(texts[i]);
        memcpy(b, texts[i], len);
        SEED(i < 4 ? FUZZ_PKT_RULE : FUZZ_PKT_CONF, len, i < 9);
    }
    for (size_t i = 0; i < sizeof(texts6) / sizeof(texts6[0]); i++) {
        len = strlen(texts6[i].text);
        memcpy(b, texts6[i].text, len);
        SEED(texts6[i].mode, len, texts6[i].valid);
    }
#undef SEED
    return n;
}
