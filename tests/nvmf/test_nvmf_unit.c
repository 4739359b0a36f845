/*
 * test_nvmf_unit.c — unit tests of offcore-nvmf's pure parts: CRC32C
 * (known answers; SSE4.2 against the table), the PDU checker (every
 * verdict on hand-built PDUs), the SGL decoder, and the configuration
 * parser (good file, every error reported with its line).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "nvmf/pdu.h"
#include "nvmf/target.h"

static void test_crc32c_known(void **state)
{
    static const char *s = "123456789";
    uint8_t zeros[32] = {0}, ones[32];

    (void)state;
    memset(ones, 0xff, sizeof(ones));
    /* RFC 3720 B.4 test vectors and the classic check value */
    assert_int_equal(oc__crc32c(0, s, 9), 0xe3069283u);
    assert_int_equal(oc__crc32c(0, zeros, 32), 0x8a9136aau);
    assert_int_equal(oc__crc32c(0, ones, 32), 0x62a8ab43u);
    assert_int_equal(oc__crc32c_ref(0, s, 9), 0xe3069283u);
    /* continuation: crc(a||b) == crc(b, crc(a)) */
    assert_int_equal(oc__crc32c(oc__crc32c(0, s, 4), s + 4, 5), 0xe3069283u);
}

static void test_crc32c_fast_matches_table(void **state)
{
    static uint8_t buf[40000];
    (void)state;
    for (size_t i = 0; i < sizeof(buf); i++)
        buf[i] = (uint8_t)(i * 131 + 7);
    for (size_t off = 0; off < 9; off++)
        for (size_t len = 0; len < 200; len += 13)
            assert_int_equal(oc__crc32c(0, buf + off, len),
                             oc__crc32c_ref(0, buf + off, len));
    assert_int_equal(oc__crc32c(0, buf, sizeof(buf)),
                     oc__crc32c_ref(0, buf, sizeof(buf)));
    /* around the three- and four-stream chunks (3 and 4 x 1024 bytes),
     * misaligned starts, and a 4-stream round followed by a 3-stream one */
    for (size_t len = 3060; len < 3090; len++)
        assert_int_equal(oc__crc32c(0x1234, buf + 3, len),
                         oc__crc32c_ref(0x1234, buf + 3, len));
    for (size_t len = 4080; len < 4110; len++)
        assert_int_equal(oc__crc32c(0x1234, buf + 5, len),
                         oc__crc32c_ref(0x1234, buf + 5, len));
    for (size_t len = 7160; len < 7180; len++)
        assert_int_equal(oc__crc32c(7, buf + 1, len),
                         oc__crc32c_ref(7, buf + 1, len));
    for (size_t len = 4096; len <= 131072 && len <= sizeof(buf); len *= 2)
        assert_int_equal(oc__crc32c(0, buf, len), oc__crc32c_ref(0, buf, len));
}

static const oc_nvmf_pdu_limits_t lim0 = {.ic_done = 1, .max_incap = 8192,
                                          .max_h2c = 131072};

static void build_cmd(uint8_t *p, uint32_t dlen, int hd, int dd)
{
    uint32_t h = hd ? 4 : 0, d = dd && dlen ? 4 : 0;
    memset(p, 0, 72 + h + dlen + d);
    p[0] = OC_NVMF_PDU_CMD;
    p[1] = (uint8_t)((hd ? OC_NVMF_F_HDGST : 0) | (d ? OC_NVMF_F_DDGST : 0));
    p[2] = 72;
    p[3] = (uint8_t)(dlen ? 72 + h : 0);
    oc__store_le32(p + 4, 72 + h + dlen + d);
    if (hd)
        oc__store_le32(p + 72, oc__crc32c(0, p, 72));
}

static void test_pdu_check(void **state)
{
    static uint8_t p[20000];
    oc_nvmf_pdu_limits_t lim = lim0;
    oc_nvmf_pdu_info_t in;

    (void)state;
    /* too short for a verdict */
    assert_int_equal(oc__nvmf_pdu_check(p, 3, &lim, &in), OC_NVMF_PDU_NEED);
    assert_int_equal(in.need, 8);
    /* a capsule with 512 bytes of data: NEED until all of it is there */
    build_cmd(p, 512, 0, 0);
    assert_int_equal(oc__nvmf_pdu_check(p, 100, &lim, &in), OC_NVMF_PDU_NEED);
    assert_int_equal(in.need, 72 + 512);
    assert_int_equal(oc__nvmf_pdu_check(p, 72 + 512, &lim, &in), OC_NVMF_PDU_OK);
    assert_int_equal(in.data_off, 72);
    assert_int_equal(in.data_len, 512);
    /* header digest: good, then one bit off */
    lim.hdgst = 1;
    build_cmd(p, 0, 1, 0);
    assert_int_equal(oc__nvmf_pdu_check(p, 76, &lim, &in), OC_NVMF_PDU_OK);
    p[20] ^= 1;
    assert_int_equal(oc__nvmf_pdu_check(p, 76, &lim, &in), OC_NVMF_PDU_BAD);
    assert_int_equal(in.fes, OC_NVMF_FES_HDR_DIGEST);
    /* digest flag disagreeing with the negotiation */
    build_cmd(p, 0, 0, 0);
    assert_int_equal(oc__nvmf_pdu_check(p, 72, &lim, &in), OC_NVMF_PDU_BAD);
    assert_int_equal(in.fes, OC_NVMF_FES_HDR_FIELD);
    assert_int_equal(in.fei, 1);
    lim.hdgst = 0;
    /* in-capsule data above the limit: refused from the header alone */
    build_cmd(p, 9000, 0, 0);
    assert_int_equal(oc__nvmf_pdu_check(p, 8, &lim, &in), OC_NVMF_PDU_BAD);
    assert_int_equal(in.fes, OC_NVMF_FES_DATA_LIMIT);
    /* a type only the controller sends */
    p[0] = OC_NVMF_PDU_C2H_DATA;
    assert_int_equal(oc__nvmf_pdu_check(p, 8, &lim, &in), OC_NVMF_PDU_BAD);
    /* PDU before ICReq; second ICReq */
    build_cmd(p, 0, 0, 0);
    lim.ic_done = 0;
    assert_int_equal(oc__nvmf_pdu_check(p, 72, &lim, &in), OC_NVMF_PDU_BAD);
    assert_int_equal(in.fes, OC_NVMF_FES_PDU_SEQ);
    memset(p, 0, 128);
    p[2] = 128;
    oc__store_le32(p + 4, 128);
    assert_int_equal(oc__nvmf_pdu_check(p, 128, &lim, &in), OC_NVMF_PDU_OK);
    lim.ic_done = 1;
    assert_int_equal(oc__nvmf_pdu_check(p, 128, &lim, &in), OC_NVMF_PDU_BAD);
    /* H2CData: DATAL must account for the PDU length exactly */
    memset(p, 0, 24);
    p[0] = OC_NVMF_PDU_H2C_DATA;
    p[2] = 24;
    p[3] = 24;
    oc__store_le32(p + 4, 24 + 100);
    oc__store_le32(p + 16, 100);
    assert_int_equal(oc__nvmf_pdu_check(p, 124, &lim, &in), OC_NVMF_PDU_OK);
    oc__store_le32(p + 16, 99);
    assert_int_equal(oc__nvmf_pdu_check(p, 124, &lim, &in), OC_NVMF_PDU_BAD);
    assert_int_equal(in.fei, 4);
}

static void test_sgl(void **state)
{
    uint8_t s[64] = {0};
    oc_nvmf_xfer_t k;
    uint32_t len;

    (void)state;
    s[1] = 0x40;
    s[39] = OC_SGL_TRANSPORT;
    oc__store_le32(s + 32, 4096);
    assert_int_equal(oc__nvmf_sgl_decode(s, 0, 0, 131072, &k, &len), 0);
    assert_int_equal(k, OC_NVMF_XFER_C2H);
    assert_int_equal(oc__nvmf_sgl_decode(s, 1, 0, 131072, &k, &len), 0);
    assert_int_equal(k, OC_NVMF_XFER_R2T);
    oc__store_le32(s + 32, 262144); /* above MDTS */
    assert_int_equal(oc__nvmf_sgl_decode(s, 0, 0, 131072, &k, &len),
                     OC_NVME_SC_INVALID_FIELD);
    s[39] = OC_SGL_INCAPSULE;
    oc__store_le32(s + 32, 512);
    assert_int_equal(oc__nvmf_sgl_decode(s, 1, 512, 131072, &k, &len), 0);
    assert_int_equal(k, OC_NVMF_XFER_INCAPSULE);
    assert_int_equal(oc__nvmf_sgl_decode(s, 1, 1024, 131072, &k, &len),
                     OC_NVME_SC_SGL_LEN);
    s[1] = 0; /* PRPs: not on fabrics */
    assert_int_equal(oc__nvmf_sgl_decode(s, 1, 512, 131072, &k, &len),
                     OC_NVME_SC_INVALID_FIELD);
}

static char *write_tmp(const char *text)
{
    static char path[64];
    int fd;
    strcpy(path, "/tmp/oc-nvmf-unit.XXXXXX");
    fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    return path;
}

static void test_config(void **state)
{
    static oc_nvmf_conf_t c;
    char *errbuf = NULL;
    size_t errlen = 0;
    FILE *err;
    char *p;

    (void)state;
    p = write_tmp("# a target\nlisten 127.0.0.1:4420\nmetrics 127.0.0.1:9465\n"
                  "poll-us 50\ncpu 1\nmax-connections 64\nhandshake-ms 2000\n"
                  "accept-backoff-ms 50\n"
                  "subsystem nqn.2026-11.io.offcore:a\n"
                  "  allow-host nqn.2014-08.org.nvmexpress:uuid:1\n"
                  "  namespace 1 /dev/null size=1G block=512 integrity=on\n"
                  "  namespace 2 /x size=64M key=/k direct=off\n");
    err = open_memstream(&errbuf, &errlen);
    assert_int_equal(oc__nvmf_conf_load(p, &c, err), OC_OK);
    fclose(err);
    unlink(p);
    assert_int_equal(c.poll_us, 50);
    assert_int_equal(c.cpu, 1);
    assert_int_equal(c.max_conns, 64);
    assert_int_equal(c.handshake_ms, 2000);
    assert_int_equal(c.accept_backoff_ms, 50);
    assert_int_equal(c.nsubsys, 1);
    assert_int_equal(c.subsys[0].nns, 2);
    assert_int_equal(c.subsys[0].ns[0].size, 1ull << 30);
    assert_int_equal(c.subsys[0].ns[0].block_size, 512);
    assert_int_equal(c.subsys[0].ns[0].integrity, 1);
    assert_int_equal(c.subsys[0].ns[1].direct, 0);
    assert_string_equal(c.subsys[0].ns[1].key_path, "/k");
    free(errbuf);

    p = write_tmp("listen nowhere\n"
                  "subsystem nqn.2026-11.io.offcore:a\n"
                  "  allow-any-host\n"
                  "  namespace 1 /x size=1000\n"     /* not a block multiple */
                  "  namespace 1 /y size=4K\n"       /* duplicate nsid */
                  "  namespace 2 /z block=1024\n"    /* bad block size */
                  "frobnicate\n"
                  "poll-us 20000\n"
                  "cpu -1\n"
                  "max-connections 0\n"
                  "handshake-ms 10\n"
                  "accept-backoff-ms 1 2\n");
    errbuf = NULL;
    err = open_memstream(&errbuf, &errlen);
    assert_int_equal(oc__nvmf_conf_load(p, &c, err), OC_ERR_CONFIG);
    fclose(err);
    unlink(p);
    assert_non_null(strstr(errbuf, ":1: listen"));
    assert_non_null(strstr(errbuf, ":4: size 1000"));
    assert_non_null(strstr(errbuf, ":5: namespace 1 already defined on line 4"));
    assert_non_null(strstr(errbuf, ":6: block '1024'"));
    assert_non_null(strstr(errbuf, ":7: unknown keyword"));
    assert_non_null(strstr(errbuf, ":8: poll-us: want 0..10000"));
    assert_non_null(strstr(errbuf, ":9: cpu: want a CPU number"));
    assert_non_null(strstr(errbuf, ":10: max-connections: want 1.."));
    assert_non_null(strstr(errbuf, ":11: handshake-ms: want 100..600000"));
    assert_non_null(strstr(errbuf, ":12: accept-backoff-ms: want 1..60000"));
    assert_non_null(strstr(errbuf, "10 errors"));
    free(errbuf);

    /* the admission defaults (docs/nvmf.md) */
    p = write_tmp("subsystem nqn.2026-11.io.offcore:a\n  allow-any-host\n"
                  "  namespace 1 /x\n");
    errbuf = NULL;
    err = open_memstream(&errbuf, &errlen);
    assert_int_equal(oc__nvmf_conf_load(p, &c, err), OC_OK);
    fclose(err);
    unlink(p);
    assert_int_equal(c.max_conns, 1024);
    assert_int_equal(c.handshake_ms, 5000);
    assert_int_equal(c.accept_backoff_ms, 100);
    free(errbuf);
}

/* --cores / `cores`: lists in order, ranges expanded; every bad list
 * refused with a reason */
static void test_cores(void **state)
{
    static const char *const bad[] = {"", ",", "0,", ",0", "1-0", "0,0",
                                      "0-3,2", "a", "0-", "-1", "0 1",
                                      "0;1", "1024", "0-1024", "0x1",
                                      "99999999999999999999999", "0-64"};
    int cpus[OC_NVMF_MAX_WORKERS];
    char why[128];

    (void)state;
    assert_int_equal(oc__nvmf_parse_cores("0", cpus, 64, why, sizeof(why)),
                     1);
    assert_int_equal(cpus[0], 0);
    assert_int_equal(oc__nvmf_parse_cores("4-6,1,9", cpus, 64, why,
                                         sizeof(why)), 5);
    assert_int_equal(cpus[0], 4);
    assert_int_equal(cpus[2], 6);
    assert_int_equal(cpus[3], 1);
    assert_int_equal(cpus[4], 9);
    assert_int_equal(oc__nvmf_parse_cores("0-63", cpus, 64, why,
                                         sizeof(why)), 64);
    assert_int_equal(oc__nvmf_parse_cores("1023", cpus, 64, why,
                                         sizeof(why)), 1);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        why[0] = '\0';
        if (oc__nvmf_parse_cores(bad[i], cpus, 64, why, sizeof(why)) != -1)
            fail_msg("'%s' accepted", bad[i]);
        assert_true(why[0] != '\0');
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_crc32c_known),
        cmocka_unit_test(test_crc32c_fast_matches_table),
        cmocka_unit_test(test_pdu_check),
        cmocka_unit_test(test_sgl),
        cmocka_unit_test(test_config),
        cmocka_unit_test(test_cores),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
