/*
 * test_doctor_unit.c — the pure parts behind `offcore doctor` and the
 * runtime's transport watch: UCX's endpoint and context descriptions
 * (recorded on this machine, and an RDMA endpoint in the same format),
 * transport classes, NCCL_DEBUG=INFO logs, the PCIe relation; and the
 * book of endpoints' transports that offcored reads (live, two workers).
 */
#include "tools/doctor.h"
#include "transport/transport.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

/* ucp_ep_print_info, UCX 1.13.1 here: two workers of one context */
static const char ep_sm[] =
    "#\n# UCP endpoint \n#\n"
    "#               peer: <no debug data>\n"
    "#                 lane[0]:  3:sysv/memory.0 md[2]           -> "
    "md[2]/sysv/sysdev[255] am am_bw#0\n"
    "#                 lane[1]:  5:cma/memory.0 md[4]            -> "
    "md[4]/cma/sysdev[255] rma_bw#0\n"
    "#\n#                 am_send: 0..<egr/short>..93..<egr/bcopy>..8256.."
    "<rndv>..(inf)\n#\n";
/* ... toward a context without shared memory */
static const char ep_tcp[] =
    "#                 lane[0]:  1:tcp/lo.0 md[1]                -> "
    "md[0]/tcp/sysdev[255] rma_bw#0 am am_bw#0\n"
    "#                 lane[1]:  2:tcp/eth0.0 md[1]              -> "
    "md[0]/tcp/sysdev[255] rma_bw#1 wireup\n";
/* the same format with verbs lanes (as UCX prints them on ConnectX) */
static const char ep_rdma[] =
    "#                 lane[0]:  8:rc_mlx5/mlx5_0:1.0 md[5]      -> "
    "md[5]/ib/sysdev[0] rma_bw#0 am am_bw#0\n"
    "#                 lane[1]: 12:ud_mlx5/mlx5_0:1.0 md[5]      -> "
    "md[5]/ib/sysdev[0] wireup\n";

static void test_ep_info(void **state)
{
    char out[128];
    (void)state;
    assert_int_equal(oc__tr_parse_ep_info(ep_sm, out, sizeof(out)),
                     OC_TR_CLASS_SM);
    assert_string_equal(out, "sysv/memory"); /* cma carries no AM */
    assert_int_equal(oc__tr_parse_ep_info(ep_tcp, out, sizeof(out)),
                     OC_TR_CLASS_TCP);
    assert_string_equal(out, "tcp/lo");
    assert_int_equal(oc__tr_parse_ep_info(ep_rdma, out, sizeof(out)),
                     OC_TR_CLASS_RDMA);
    assert_string_equal(out, "rc_mlx5/mlx5_0:1");
    assert_int_equal(oc__tr_parse_ep_info("# lane[0]: garbage\n", out,
                                         sizeof(out)), 0);
    assert_string_equal(out, "");
    assert_int_equal(oc__tr_parse_ep_info("lane[", out, sizeof(out)), 0);
    /* too small a buffer: whole items only, class still known */
    assert_int_equal(oc__tr_parse_ep_info(ep_sm, out, 5), OC_TR_CLASS_SM);
    assert_string_equal(out, "");
}

static const char ctx_info[] =
    "#\n# UCP context\n#\n#     component 0  :  self\n"
    "#            md 0  :  component 0  self \n"
    "#      resource 0  :  md 0  dev 0  flags -- self/memory0\n"
    "#      resource 1  :  md 1  dev 1  flags -- tcp/lo\n"
    "#      resource 2  :  md 1  dev 2  flags -- tcp/eth0\n"
    "#      resource 3  :  md 2  dev 3  flags -- sysv/memory\n"
    "#      resource 4  :  md 3  dev 3  flags -- posix/memory\n"
    "#      resource 5  :  md 4  dev 3  flags -- cma/memory\n#\n";

static void test_ctx_info(void **state)
{
    char out[256];
    (void)state;
    assert_int_equal(oc__tr_parse_ctx_info(ctx_info, out, sizeof(out)),
                     OC_TR_CLASS_SELF | OC_TR_CLASS_TCP | OC_TR_CLASS_SM);
    assert_string_equal(out, "self/memory0 tcp/lo tcp/eth0 sysv/memory "
                             "posix/memory cma/memory");
}

static unsigned cls(const char *s)
{
    return oc__tr_class_of(s, strlen(s));
}

static void test_classes(void **state)
{
    (void)state;
    assert_int_equal(cls("rc_mlx5"), OC_TR_CLASS_RDMA);
    assert_int_equal(cls("dc_mlx5"), OC_TR_CLASS_RDMA);
    assert_int_equal(cls("ud_verbs"), OC_TR_CLASS_RDMA);
    assert_int_equal(cls("rc"), OC_TR_CLASS_RDMA);
    assert_int_equal(cls("rdmacm"), OC_TR_CLASS_OTHER);
    assert_int_equal(cls("tcp"), OC_TR_CLASS_TCP);
    assert_int_equal(cls("posix"), OC_TR_CLASS_SM);
    assert_int_equal(cls("cma"), OC_TR_CLASS_SM);
    assert_int_equal(cls("self"), OC_TR_CLASS_SELF);
    assert_int_equal(cls("cuda_ipc"), OC_TR_CLASS_GPU);
    assert_int_equal(cls("udp"), OC_TR_CLASS_OTHER);
    assert_string_equal(oc__tr_class_name(OC_TR_CLASS_RDMA), "rdma");
    assert_int_equal(oc__tr_class_parse("sm", 2), OC_TR_CLASS_SM);
    assert_int_equal(oc__tr_class_parse("rdmax", 5), 0);
    assert_null(oc__tr_class_name(3));
    /* one word for logs and metrics: the fastest class present */
    assert_string_equal(oc__tr_class_main(OC_TR_CLASS_RDMA | OC_TR_CLASS_TCP),
                        "rdma");
    assert_string_equal(oc__tr_class_main(OC_TR_CLASS_TCP | OC_TR_CLASS_SM),
                        "tcp");
    assert_string_equal(oc__tr_class_main(OC_TR_CLASS_SELF), "sm");
    assert_string_equal(oc__tr_class_main(OC_TR_CLASS_OTHER), "other");
    assert_string_equal(oc__tr_class_main(0), "unknown");
}

/* The book (tlbook.c), live: two workers of one context; what the
 * endpoint from one to the other uses is found by the other's address,
 * from this thread, until the endpoint is destroyed. */
static void test_book(void **state)
{
    oc_tr_context_t *ctx;
    oc_tr_worker_t *w1, *w2;
    oc_tr_ep_t *ep;
    const void *a1, *a2;
    size_t l1, l2;
    unsigned c = 0;
    char tls[128], direct[128];

    (void)state;
    assert_int_equal(oc__tr_context_create(&ctx), OC_OK);
    assert_int_equal(oc__tr_worker_create(ctx, &w1), OC_OK);
    assert_int_equal(oc__tr_worker_create(ctx, &w2), OC_OK);
    assert_int_equal(oc__tr_worker_address(w1, &a1, &l1), OC_OK);
    assert_int_equal(oc__tr_worker_address(w2, &a2, &l2), OC_OK);
    /* off: nothing is written */
    assert_int_equal(oc__tr_ep_create(w1, a2, 1, &ep), OC_OK);
    assert_int_equal(oc__tr_book_lookup(a2, &c, tls, sizeof(tls)), 0);
    assert_string_equal(tls, "");
    oc__tr_ep_destroy(w1, ep);

    oc__tr_book_enable();
    assert_int_equal(oc__tr_ep_create(w1, a2, 1, &ep), OC_OK);
    assert_int_equal(oc__tr_book_lookup(a2, &c, tls, sizeof(tls)), 1);
    /* what the endpoint itself says */
    assert_int_equal(c, oc__tr_ep_transports(ep, direct, sizeof(direct)));
    assert_string_equal(tls, direct);
    assert_int_not_equal(c, 0);
    assert_int_not_equal(tls[0], '\0');
    /* no endpoint toward w1 */
    assert_int_equal(oc__tr_book_lookup(a1, &c, tls, sizeof(tls)), 0);
    oc__tr_ep_destroy(w1, ep);
    assert_int_equal(oc__tr_book_lookup(a2, &c, tls, sizeof(tls)), 0);
    oc__tr_worker_destroy(w2);
    oc__tr_worker_destroy(w1);
    oc__tr_context_destroy(ctx);
}

/* NCCL_DEBUG=INFO lines in the formats NCCL 2.1x prints */
static void test_nccl(void **state)
{
    int gdr;
    (void)state;
    assert_int_equal(oc__dr_nccl_parse(
        "host:1:1 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE [1]mlx5_1:1/IB"
        " ; OOB eth0:10.0.0.11<0>\n"
        "host:1:1 [0] NCCL INFO Using network IB\n", &gdr), 1);
    assert_int_equal(gdr, 0);
    assert_int_equal(oc__dr_nccl_parse(
        "NCCL INFO NET/IB : Using [0]mlx5_0:1/IB\n"
        "NCCL INFO Channel 00/0 : 0[0] -> 1[1] [send] via NET/IB/0/GDRDMA\n",
        &gdr), 1);
    assert_int_equal(gdr, 1);
    /* the fall-back: IB found nothing, sockets came up */
    assert_int_equal(oc__dr_nccl_parse(
        "NCCL INFO NET/IB : No device found.\n"
        "NCCL INFO NET/Socket : Using [0]eth0:10.0.0.11<0>\n", &gdr), 2);
    assert_int_equal(oc__dr_nccl_parse("NCCL INFO NET/IB : No device found.\n",
                                       &gdr), 0);
    assert_int_equal(oc__dr_nccl_parse(
        "NCCL INFO NET/Socket : Using [0]eth0:10.0.0.11<0>\n"
        "NCCL INFO Using network Socket\n", &gdr), 2);
    assert_int_equal(oc__dr_nccl_parse("nothing\n", &gdr), 0);
}

static void test_pcie(void **state)
{
    const char *g = "/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0/"
                    "0000:02:00.0/0000:03:00.0";
    (void)state;
    assert_string_equal(oc__dr_pcie_relation(g,
        "/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:01.0/"
        "0000:04:00.0"), "PIX");
    assert_string_equal(oc__dr_pcie_relation(g,
        "/sys/devices/pci0000:00/0000:00:01.0/0000:05:00.0"), "PXB");
    assert_string_equal(oc__dr_pcie_relation(g,
        "/sys/devices/pci0000:00/0000:00:02.0/0000:06:00.0"), "PHB");
    assert_string_equal(oc__dr_pcie_relation(g,
        "/sys/devices/pci0000:80/0000:80:01.0/0000:81:00.0"), "SYS");
    assert_string_equal(oc__dr_pcie_relation(g, ""), "SYS");
}

/* The parsers read UCX's and NCCL's text, local and trusted, but must
 * still never read past it: every prefix of the recorded texts and random
 * byte strings (run under ASan in CI). */
static void parse_all(const char *t)
{
    char out[64];
    int gdr;
    oc__tr_parse_ep_info(t, out, sizeof(out));
    assert_true(strlen(out) < sizeof(out));
    oc__tr_parse_ctx_info(t, out, sizeof(out));
    assert_true(strlen(out) < sizeof(out));
    oc__dr_nccl_parse(t, &gdr);
    oc__dr_pcie_relation(t, t);
}

static void test_robust(void **state)
{
    static const char tok[] = "lane[]: 0123/.->am_bwresource-- \n#tcprc_x";
    const char *texts[] = {ep_sm, ep_tcp, ep_rdma, ctx_info};
    char buf[1024];
    unsigned seed = 12345;
    (void)state;
    for (size_t k = 0; k < sizeof(texts) / sizeof(texts[0]); k++)
        for (size_t n = 0; n <= strlen(texts[k]); n++) {
            memcpy(buf, texts[k], n);
            buf[n] = '\0';
            parse_all(buf);
        }
    for (int i = 0; i < 20000; i++) {
        size_t n = (size_t)(rand_r(&seed) % (sizeof(buf) - 1));
        for (size_t j = 0; j < n; j++) /* bias toward the parsers' tokens */
            buf[j] = tok[rand_r(&seed) % (sizeof(tok) - 1)];
        buf[n] = '\0';
        parse_all(buf);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ep_info), cmocka_unit_test(test_ctx_info),
        cmocka_unit_test(test_classes), cmocka_unit_test(test_book),
        cmocka_unit_test(test_nccl),
        cmocka_unit_test(test_pcie), cmocka_unit_test(test_robust),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
