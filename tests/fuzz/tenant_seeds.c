/*
 * tenant_seeds.c — seed inputs of the tenant fuzz target: record streams
 * (fuzz_tenant.c) of a TCP handshake whose replies come back in VXLAN, a
 * UDP exchange, ARP from the host, ARP requests from the fabric for the
 * tunnel end's address (answered) and another (not), malformed VXLAN, and
 * IPv6: a TCP handshake and an ICMPv6 echo pair, neighbor discovery from
 * the host (an NS, an NA for its own address and one for another's, a
 * router advertisement) and an ICMPv6 error about the TCP flow.
 */
#include "fuzz_tenant.h"

#include "pkt/tenant.h"

#include <string.h>
#include "../pkt/pkt_bytes.h"

static const uint8_t MAC[6] = {2, 0, 0, 0, 0, 1};


/* Ethernet + IPv4 + TCP (flags) or UDP (flags 0xff) */
static size_t frame(uint8_t *f, uint32_t s, uint32_t d, uint16_t sp,
                    uint16_t dp, uint8_t flags, uint32_t seq, uint32_t ack)
{
    int tcp = flags != 0xff;
    size_t l4 = tcp ? 20 : 8;
    memset(f, 0, 34 + l4);
    memset(f, 0xee, 6);
    memcpy(f + 6, MAC, 6);
    wr16(f + 12, 0x0800);
    f[14] = 0x45;
    wr16(f + 16, (uint16_t)(20 + l4));
    f[22] = 64;
    f[23] = tcp ? 6 : 17;
    wr32(f + 26, s);
    wr32(f + 30, d);
    wr16(f + 34, sp);
    wr16(f + 36, dp);
    if (tcp) {
        wr32(f + 38, seq);
        wr32(f + 42, ack);
        f[46] = 5 << 4;
        f[47] = flags;
        wr16(f + 48, 1000);
    } else {
        wr16(f + 38, 8);
    }
    return 34 + l4;
}

/* Ethernet + IPv6 (fd00::S -> fd00::D) + @p l4 (@p l4len bytes) of
 * protocol @p nh; the host's MAC as the source */
static size_t frame6(uint8_t *f, uint8_t s, uint8_t d, uint8_t nh,
                     const uint8_t *l4, size_t l4len)
{
    memset(f, 0, 54);
    memset(f, 0xee, 6);
    memcpy(f + 6, MAC, 6);
    wr16(f + 12, 0x86dd);
    f[14] = 0x60;
    wr16(f + 18, (uint16_t)l4len);
    f[20] = nh;
    f[21] = 255;
    f[22] = 0xfd;
    f[37] = s;
    f[38] = 0xfd;
    f[53] = d;
    memcpy(f + 54, l4, l4len);
    return 54 + l4len;
}

/* a TCP header with @p flags */
static size_t tcp6(uint8_t *t, uint16_t sp, uint16_t dp, uint8_t flags,
                   uint32_t seq, uint32_t ack)
{
    memset(t, 0, 20);
    wr16(t, sp);
    wr16(t + 2, dp);
    wr32(t + 4, seq);
    wr32(t + 8, ack);
    t[12] = 5 << 4;
    t[13] = flags;
    wr16(t + 14, 1000);
    return 20;
}

/* an ICMPv6 header of @p type, then @p body (@p n bytes) */
static size_t icmp6(uint8_t *c, uint8_t type, const uint8_t *body, size_t n)
{
    memset(c, 0, 8);
    c[0] = type;
    memcpy(c + 4, body, n);
    return 4 + n;
}

/* append a record; @p wire: encapsulate the frame first */
static size_t rec(uint8_t *out, uint8_t flags, const uint8_t *f, size_t n)
{
    uint8_t buf[256];
    if (flags & 1) {
        oc_vxlan_tun_t t = {.local_ip = 2, .remote_ip = 1};
        memcpy(buf + OC_VXLAN_OVERHEAD, f, n);
        oc__vxlan_encap(buf + OC_VXLAN_OVERHEAD, (uint32_t)n, &t, flags >> 4, 0);
        f = buf;
        n += OC_VXLAN_OVERHEAD;
    }
    out[0] = flags;
    wr16(out + 1, (uint16_t)n);
    memcpy(out + 3, f, n);
    return 3 + n;
}

unsigned fuzz_tenant_seeds(fuzz_tenant_seed_fn fn, void *arg)
{
    uint8_t in[2048], f[128];
    size_t n = 0, k;
    unsigned count = 0;
    const uint32_t A = 0x0a000001u, B = 0x0a000002u;

    /* TCP: SYN from the host, SYN+ACK over VXLAN, ACK, FIN both ways */
    k = frame(f, A, B, 40000, 80, 2, 100, 0);
    n += rec(in + n, 0x10, f, k);
    k = frame(f, B, A, 80, 40000, 0x12, 900, 101);
    n += rec(in + n, 0x11, f, k);
    k = frame(f, A, B, 40000, 80, 0x10, 101, 901);
    n += rec(in + n, 0x10, f, k);
    k = frame(f, A, B, 40000, 80, 0x11, 101, 901);
    n += rec(in + n, 0x10, f, k);
    k = frame(f, B, A, 80, 40000, 0x11, 901, 102);
    n += rec(in + n, 0x11, f, k);
    fn(arg, in, n, 1);
    count++;

    /* UDP out and back, in zone 3 */
    n = 0;
    k = frame(f, A, B, 5000, 53, 0xff, 0, 0);
    n += rec(in + n, 0x30, f, k);
    k = frame(f, B, A, 53, 5000, 0xff, 0, 0);
    n += rec(in + n, 0x31, f, k);
    fn(arg, in, n, 1);
    count++;

    /* an ARP reply from the host (nothing tracked) */
    n = 0;
    memset(f, 0, 42);
    memcpy(f + 6, MAC, 6);
    wr16(f + 12, 0x0806);
    wr16(f + 14, 1);
    wr16(f + 16, 0x0800);
    f[18] = 6;
    f[19] = 4;
    wr16(f + 20, 2);
    memcpy(f + 22, MAC, 6);
    wr32(f + 28, A);
    n += rec(in + n, 0, f, 42);
    fn(arg, in, n, 0);
    count++;

    /* from the fabric, raw: who has A (answered), who has 10.0.0.9 (not) */
    for (int other = 0; other < 2; other++) {
        static const uint8_t PEER[6] = {2, 0, 0, 0, 0, 2};
        memset(f, 0, 60);
        memset(f, 0xff, 6);
        memcpy(f + 6, PEER, 6);
        wr16(f + 12, 0x0806);
        wr16(f + 14, 1);
        wr16(f + 16, 0x0800);
        f[18] = 6;
        f[19] = 4;
        wr16(f + 20, 1);
        memcpy(f + 22, PEER, 6);
        wr32(f + 28, B);
        wr32(f + 38, other ? 0x0a000009u : A);
        in[0] = 0x01;
        wr16(in + 1, 60);
        memcpy(in + 3, f, 60);
        fn(arg, in, 63, !other);
        count++;
    }

    /* IPv6: a TCP handshake, an echo pair, then an ICMPv6 error about the
     * TCP flow from the fabric */
    {
        uint8_t l4[128], b[64], q[128];
        size_t ql;
        n = 0;
        k = frame6(f, 1, 2, 6, l4, tcp6(l4, 40000, 80, 2, 100, 0));
        n += rec(in + n, 0x20, f, k);
        k = frame6(f, 2, 1, 6, l4, tcp6(l4, 80, 40000, 0x12, 900, 101));
        n += rec(in + n, 0x21, f, k);
        k = frame6(f, 1, 2, 6, l4, tcp6(l4, 40000, 80, 0x10, 101, 901));
        n += rec(in + n, 0x20, f, k);
        memset(b, 0, 4);
        wr16(b, 7);
        k = frame6(f, 1, 2, 58, l4, icmp6(l4, 128, b, 4));
        n += rec(in + n, 0x20, f, k);
        k = frame6(f, 2, 1, 58, l4, icmp6(l4, 129, b, 4));
        n += rec(in + n, 0x21, f, k);
        ql = frame6(q, 1, 2, 6, l4, tcp6(l4, 40000, 80, 0x10, 101, 901)) - 14;
        memset(b, 0, 4);
        {
            uint8_t e[8 + 128];
            memset(e, 0, 8);
            e[0] = 1;
            memcpy(e + 8, q + 14, ql);
            k = frame6(f, 3, 1, 58, e, 8 + ql);
        }
        n += rec(in + n, 0x21, f, k);
        fn(arg, in, n, 1);
        count++;

        /* neighbor discovery from the host: NS for fd00::2 with its MAC,
         * NA for its own fd00::1, NA for fd00::2 (not its own), RA */
        n = 0;
        memset(b, 0, sizeof(b));
        b[15] = 2;
        b[0] = 0xfd;
        b[20] = 1;
        b[21] = 1;
        memcpy(b + 22, MAC, 6);
        k = frame6(f, 1, 2, 58, l4, icmp6(l4, 135, b, 28));
        n += rec(in + n, 0x20, f, k);
        b[15] = 1;
        b[20] = 2;
        k = frame6(f, 1, 2, 58, l4, icmp6(l4, 136, b, 28));
        n += rec(in + n, 0x20, f, k);
        b[15] = 2;
        k = frame6(f, 1, 2, 58, l4, icmp6(l4, 136, b, 28));
        n += rec(in + n, 0x20, f, k);
        memset(b, 0, 12);
        k = frame6(f, 1, 2, 58, l4, icmp6(l4, 134, b, 12));
        n += rec(in + n, 0x20, f, k);
        fn(arg, in, n, 1);
        count++;
    }

    /* VXLAN without the I flag */
    n = 0;
    k = frame(f, B, A, 53, 5000, 0xff, 0, 0);
    n += rec(in + n, 0x01, f, k);
    in[3 + 42] = 0;
    fn(arg, in, n, 0);
    count++;
    return count;
}
