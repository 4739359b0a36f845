/*
 * test_jobenv.c — the Slurm plugin's decisions (contrib/slurm/jobenv.c),
 * without Slurm: plugstack.conf arguments, the job id of a step, and the
 * variables of each placement against a fake agent that answers, one
 * that accepts but never answers, and none.  The job key must be the one
 * offcore job-key derives; the cluster key must appear nowhere.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <pthread.h>
#include <unistd.h>

#include <cmocka.h>

#include "ctl/ctl.h"
#include "ctl/derive.h"
#include "jobenv.h"

static char dir[] = "/tmp/oc-jobenv-XXXXXX";
static char keyfile[96], sock[96];
static const char cluster_hex[] =
    "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";

static void test_args(void **state)
{
    oc_slurm_conf_t c;
    char why[256];
    char *def[] = {NULL};
    char *good[] = {"key=/k/file", "agent=tcp:node1:7000", "timeout_ms=5"};
    char *bad[][1] = {{"key=relative"}, {"bogus"}, {"timeout_ms=0"},
                      {"timeout_ms=9x"}, {"agent="}, {"timeout_ms=60001"}};

    (void)state;
    assert_int_equal(oc__slurm_args(0, def, &c, why, sizeof(why)), 0);
    assert_string_equal(c.key, "/etc/offcore/cluster.key");
    assert_string_equal(c.agent, "unix:/run/offcore/offcored.sock");
    assert_int_equal(c.timeout_ms, OC_SLURM_TIMEOUT_MS);
    assert_int_equal(oc__slurm_args(3, good, &c, why, sizeof(why)), 0);
    assert_string_equal(c.key, "/k/file");
    assert_string_equal(c.agent, "tcp:node1:7000");
    assert_int_equal(c.timeout_ms, 5);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        why[0] = '\0';
        assert_int_equal(oc__slurm_args(1, bad[i], &c, why, sizeof(why)), -1);
        assert_non_null(strstr(why, bad[i][0])); /* names the culprit */
    }
}

static void test_mode(void **state)
{
    (void)state;
    assert_int_equal(oc__slurm_mode("inline"), OC_SLURM_INLINE);
    assert_int_equal(oc__slurm_mode("agent"), OC_SLURM_AGENT);
    assert_int_equal(oc__slurm_mode("auto"), OC_SLURM_AUTO);
    assert_int_equal(oc__slurm_mode("Agent"), -1);
    assert_int_equal(oc__slurm_mode(""), -1);
    assert_int_equal(oc__slurm_mode(NULL), -1);
}

static void test_job(void **state)
{
    static uint8_t seen[(200u << 6) / 8 + 1];
    uint32_t j;

    (void)state;
    assert_int_equal(oc__slurm_job(1, 0, &j), 0);
    assert_int_equal(j, 64);
    assert_int_equal(oc__slurm_job(2, 3, &j), 0);
    assert_int_equal(j, 131);
    assert_int_equal(oc__slurm_job(5, 64, &j), 0); /* steps wrap at 64 */
    assert_int_equal(j, 320);
    assert_int_equal(oc__slurm_job((1u << 26) - 1, 63, &j), 0);
    assert_int_equal(j, UINT32_MAX);
    assert_int_equal(oc__slurm_job(1u << 26, 0, &j), -1); /* federated */
    assert_int_equal(oc__slurm_job(0, 0, &j), -1);
    /* distinct steps of distinct jobs never share an id (nor a key) */
    for (uint32_t job = 1; job < 200; job++)
        for (uint32_t step = 0; step < 64; step++) {
            assert_int_equal(oc__slurm_job(job, step, &j), 0);
            assert_true(j >= 64);
            assert_false(seen[j / 8] & (1u << (j % 8)));
            seen[j / 8] |= (uint8_t)(1u << (j % 8));
        }
}

/* A fake agent: answers one HELLO with a CHALLENGE (answer != 0), or
 * accepts and says nothing. */
struct fake {
    int lfd, answer;
    pthread_t th;
};

static void *fake_run(void *arg)
{
    struct fake *f = arg;
    uint8_t buf[8192];
    oc_ctl_msg_t m;
    size_t len;
    int c = accept(f->lfd, NULL, NULL);

    if (c < 0)
        return NULL;
    if (read(c, buf, sizeof(buf)) > 0 && f->answer) {
        memset(&m, 0, sizeof(m));
        m.type = OC_CTL_CHALLENGE;
        if (oc__ctl_encode(&m, buf, sizeof(buf), &len) == OC_OK)
            (void)!write(c, buf, len);
    }
    while (read(c, buf, sizeof(buf)) > 0) /* until the probe closes */
        ;
    close(c);
    return NULL;
}

static void fake_start(struct fake *f, int answer)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};

    unlink(sock);
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock);
    f->answer = answer;
    f->lfd = socket(AF_UNIX, SOCK_STREAM, 0);
    assert_true(f->lfd >= 0);
    assert_int_equal(bind(f->lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    assert_int_equal(listen(f->lfd, 4), 0);
    assert_int_equal(pthread_create(&f->th, NULL, fake_run, f), 0);
}

static void fake_stop(struct fake *f)
{
    shutdown(f->lfd, SHUT_RDWR);
    pthread_join(f->th, NULL);
    close(f->lfd);
    unlink(sock);
}

static void conf_for_test(oc_slurm_conf_t *c)
{
    char why[256], a1[160], a2[160];
    char *args[] = {a1, a2, "timeout_ms=300"};

    snprintf(a1, sizeof(a1), "key=%s", keyfile);
    snprintf(a2, sizeof(a2), "agent=unix:%s", sock);
    assert_int_equal(oc__slurm_args(3, args, c, why, sizeof(why)), 0);
}

static void test_env_inline(void **state)
{
    oc_slurm_conf_t c;
    oc_slurm_env_t e;
    char why[512];

    (void)state;
    conf_for_test(&c);
    snprintf(c.key, sizeof(c.key), "/nonexistent"); /* inline needs none */
    assert_int_equal(oc__slurm_env(OC_SLURM_INLINE, &c, 7, 1, &e, why,
                                   sizeof(why)), 0);
    assert_string_equal(e.placement, "inline");
    assert_string_equal(e.job, "449");
    assert_string_equal(e.job_key, "");
    assert_string_equal(e.agent, "");
    assert_string_equal(why, "");
    assert_int_equal(oc__slurm_env(OC_SLURM_INLINE, &c, 1u << 26, 0, &e, why,
                                   sizeof(why)), -1);
    assert_non_null(strstr(why, "federated"));
}

static void test_env_no_agent(void **state)
{
    oc_slurm_conf_t c;
    oc_slurm_env_t e;
    char why[512];

    (void)state;
    conf_for_test(&c);
    unlink(sock);
    assert_int_equal(oc__slurm_env(OC_SLURM_AGENT, &c, 7, 0, &e, why,
                                   sizeof(why)), -1);
    assert_non_null(strstr(why, "no agent answers at unix:"));
    assert_non_null(strstr(why, "start offcored"));
    assert_int_equal(oc__slurm_env(OC_SLURM_AUTO, &c, 7, 0, &e, why,
                                   sizeof(why)), 0);
    assert_string_equal(e.placement, "inline");
    assert_string_equal(e.job_key, "");
    assert_non_null(strstr(why, "placement inline"));
}

static void test_env_silent_agent(void **state)
{
    struct fake f;
    oc_slurm_conf_t c;
    oc_slurm_env_t e;
    char why[512];

    (void)state;
    conf_for_test(&c);
    fake_start(&f, 0);
    assert_int_equal(oc__slurm_env(OC_SLURM_AGENT, &c, 7, 0, &e, why,
                                   sizeof(why)), -1);
    fake_stop(&f);
    assert_non_null(strstr(why, "does not answer within 300 ms"));
}

static void test_env_agent(void **state)
{
    struct fake f;
    oc_slurm_conf_t c;
    oc_slurm_env_t e;
    oc_ctl_key_t ck, jk;
    char why[512], want[2 * OC_CTL_KEY_MAX + 1], cmp[sizeof(cluster_hex)];

    (void)state;
    conf_for_test(&c);
    fake_start(&f, 1);
    assert_int_equal(oc__slurm_env(OC_SLURM_AUTO, &c, 9, 2, &e, why,
                                   sizeof(why)), 0);
    fake_stop(&f);
    assert_non_null(strstr(why, "placement agent"));
    assert_string_equal(e.placement, "agent");
    assert_string_equal(e.job, "578");
    assert_string_equal(e.agent + 5, sock);
    assert_int_equal(oc__ctl_key_from_hex(cluster_hex, &ck), OC_OK);
    oc__ctl_job_key(&ck, 578, &jk);
    assert_int_equal(oc__ctl_key_hex(&jk, want, sizeof(want)), OC_OK);
    assert_string_equal(e.job_key, want); /* what offcore job-key prints */
    memcpy(cmp, cluster_hex, sizeof(cmp));
    assert_null(strstr((const char *)&e, cmp));
    assert_null(strstr(e.job_key, cmp));

    /* a key file others may read is refused, with the way to find out */
    chmod(keyfile, 0644);
    fake_start(&f, 1);
    assert_int_equal(oc__slurm_env(OC_SLURM_AGENT, &c, 9, 2, &e, why,
                                   sizeof(why)), -1);
    fake_stop(&f);
    chmod(keyfile, 0600);
    assert_non_null(strstr(why, "no usable cluster key"));
    assert_string_equal(e.job_key, "");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_args),
        cmocka_unit_test(test_mode),
        cmocka_unit_test(test_job),
        cmocka_unit_test(test_env_inline),
        cmocka_unit_test(test_env_no_agent),
        cmocka_unit_test(test_env_silent_agent),
        cmocka_unit_test(test_env_agent),
    };
    FILE *f;
    int rc;

    if (mkdtemp(dir) == NULL)
        return 1;
    snprintf(keyfile, sizeof(keyfile), "%s/cluster.key", dir);
    snprintf(sock, sizeof(sock), "%s/agent.sock", dir);
    f = fopen(keyfile, "w");
    if (f == NULL)
        return 1;
    fprintf(f, "%s\n", cluster_hex);
    fclose(f);
    chmod(keyfile, 0600);
    rc = cmocka_run_group_tests(tests, NULL, NULL);
    unlink(keyfile);
    unlink(sock);
    rmdir(dir);
    return rc;
}
