/*
 * doctor.c — `offcore doctor`: runs the checks of doctor.h in order,
 * prints them for people (default) or as JSON (--json), and judges the
 * fast paths named by --require.
 *
 * The JSON keys are stable (tests/doctor checks them): {"version",
 * "root", "checks": [{"id", "title", "verdict", "summary", "evidence":
 * [...], "fix"}], "requirements": [{"name", "met", "reason"}], "ok"}.
 * Single-threaded.
 */
#include "doctor.h"
#include "util/defaults.h"
#include "util/esc.h"

#include <offcore/offcore.h>

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const struct {
    const char *id, *title;
    void (*run)(oc_dr_t *d);
} checks[] = {
    {"rdma_devices", "RDMA devices", oc__dr_rdma_devices},
    {"rdma_ports", "RDMA ports", oc__dr_rdma_ports},
    {"roce_gid", "RoCE v2 GID", oc__dr_roce_gid},
    {"dev_infiniband", "/dev/infiniband access", oc__dr_dev_infiniband},
    {"memlock", "locked-memory limit", oc__dr_memlock},
    {"ucx_transports", "UCX transports in use", oc__dr_ucx},
    {"nvidia_driver", "NVIDIA driver", oc__dr_nvidia_driver},
    {"gpus", "GPUs", oc__dr_gpus},
    {"gpudirect", "GPUDirect RDMA (nvidia_peermem or dma-buf)",
     oc__dr_gpudirect},
    {"pcie_topology", "PCIe: GPU to nearest NIC", oc__dr_pcie},
    {"nccl", "NCCL network", oc__dr_nccl},
    {"gpu_memory", "GPU memory in offcore", oc__dr_gpu_memory},
    {"dp_ready", "offcore-dp readiness (AF_XDP, DPDK)", oc__dr_dp},
    {"offcored", "local offcored", oc__dr_offcored},
    {"offcore_dp", "local offcore-dp", oc__dr_offcore_dp},
};
#define NCHECKS (sizeof(checks) / sizeof(checks[0]))

static const char *const verdict_names[] = {"ok", "warn", "fail", "n/a"};

const char *oc__dr_path(const oc_dr_t *d, char *buf, const char *fmt, ...)
{
    va_list ap;
    int n = snprintf(buf, PATH_MAX, "%s", d->root);
    va_start(ap, fmt);
    vsnprintf(buf + n, PATH_MAX - (size_t)n, fmt, ap);
    va_end(ap);
    return buf;
}

static int read_path(const char *path, char *buf, size_t len)
{
    FILE *f = fopen(path, "r");
    size_t n;
    if (f == NULL) {
        if (len)
            buf[0] = '\0';
        return -1;
    }
    n = fread(buf, 1, len - 1, f);
    fclose(f);
    buf[n] = '\0';
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' ' ||
                     buf[n - 1] == '\t'))
        buf[--n] = '\0';
    return (int)n;
}

int oc__dr_read(const oc_dr_t *d, char *buf, size_t len, const char *fmt, ...)
{
    char rel[PATH_MAX], path[PATH_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(rel, sizeof(rel), fmt, ap);
    va_end(ap);
    return read_path(oc__dr_path(d, path, "%s", rel), buf, len);
}

void oc__dr_ev(oc_dr_t *d, const char *fmt, ...)
{
    oc_dr_check_t *c = d->cur;
    size_t used = strlen(c->evidence);
    va_list ap;
    if (used + 2 >= sizeof(c->evidence))
        return;
    va_start(ap, fmt);
    vsnprintf(c->evidence + used, sizeof(c->evidence) - used - 1, fmt, ap);
    va_end(ap);
    used = strlen(c->evidence);
    c->evidence[used] = '\n';
    c->evidence[used + 1] = '\0';
}

void oc__dr_set(oc_dr_t *d, oc_dr_verdict_t v, const char *fix,
                const char *fmt, ...)
{
    oc_dr_check_t *c = d->cur;
    va_list ap;
    c->verdict = v;
    va_start(ap, fmt);
    vsnprintf(c->summary, sizeof(c->summary), fmt, ap);
    va_end(ap);
    snprintf(c->fix, sizeof(c->fix), "%s", fix ? fix : "");
}

/* ---- requirements ---- */

typedef struct {
    const char *name, *what;
    /* NULL when met, else why not */
    const char *(*judge)(const oc_dr_t *d, const oc_dr_check_t *c);
} req_t;

static const oc_dr_check_t *find(const oc_dr_check_t *c, const char *id)
{
    for (size_t i = 0; i < NCHECKS; i++)
        if (!strcmp(c[i].id, id))
            return &c[i];
    return NULL;
}

static char reason[1024];

static const char *because(const oc_dr_check_t *c, const char *id)
{
    const oc_dr_check_t *k = find(c, id);
    snprintf(reason, sizeof(reason), "%s: %s", k->title, k->summary);
    return reason;
}

static const char *judge_rdma(const oc_dr_t *d, const oc_dr_check_t *c)
{
    if (d->nrdma == 0)
        return because(c, "rdma_devices");
    if (d->active_ports == 0)
        return because(c, "rdma_ports");
    if (find(c, "roce_gid")->verdict == OC_DR_FAIL)
        return because(c, "roce_gid");
    if (!d->uverbs_ok)
        return because(c, "dev_infiniband");
    if (!d->memlock_ok)
        return because(c, "memlock");
    if (d->ucx_ran && !(d->ucx_net_cls & (1u << 4))) /* OC_TR_CLASS_RDMA */
        return because(c, "ucx_transports");
    return NULL;
}

static const char *judge_gpu(const oc_dr_t *d, const oc_dr_check_t *c)
{
    if (!d->driver)
        return because(c, "nvidia_driver");
    if (d->ngpu == 0)
        return because(c, "gpus");
    return NULL;
}

static const char *judge_gpudirect(const oc_dr_t *d, const oc_dr_check_t *c)
{
    const char *r = judge_gpu(d, c);
    if (r == NULL)
        r = judge_rdma(d, c);
    if (r == NULL && !d->peermem && !d->dmabuf)
        r = because(c, "gpudirect");
    if (r == NULL && find(c, "pcie_topology")->verdict == OC_DR_FAIL)
        r = because(c, "pcie_topology");
    if (r == NULL && find(c, "nccl")->verdict == OC_DR_FAIL)
        r = because(c, "nccl");
    return r;
}

static const char *judge_nccl(const oc_dr_t *d, const oc_dr_check_t *c)
{
    return d->nccl_net == 1 ? NULL : because(c, "nccl");
}

static const char *judge_dp(const oc_dr_t *d, const oc_dr_check_t *c)
{
    return d->dp_ok ? NULL : because(c, "dp_ready");
}

static const char *judge_agent(const oc_dr_t *d, const oc_dr_check_t *c)
{
    return d->agent_ok ? NULL : because(c, "offcored");
}

static const req_t reqs[] = {
    {"rdma", "an active RDMA port this process can use, and UCX picks it "
             "toward other hosts", judge_rdma},
    {"gpu", "the NVIDIA driver and at least one GPU", judge_gpu},
    {"gpudirect", "rdma + gpu + nvidia_peermem or dma-buf (and NCCL on "
                  "NET/IB when NCCL is present)", judge_gpudirect},
    {"nccl", "NCCL picks NET/IB", judge_nccl},
    {"dp", "offcore-dp can run (capabilities, bpffs or hugepages)", judge_dp},
    {"agent", "a local offcored answers and reports metrics", judge_agent},
};
#define NREQS (sizeof(reqs) / sizeof(reqs[0]))

/* ---- output ---- */

static void json_str(FILE *out, const char *s)
{
    fputc('"', out);
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            fprintf(out, "\\%c", ch);
        else if (ch == '\n')
            fputs("\\n", out);
        else if (ch < 0x20)
            fprintf(out, "\\u%04x", ch);
        else
            fputc(ch, out);
    }
    fputc('"', out);
}

static void print_json(FILE *out, const oc_dr_t *d, const oc_dr_check_t *c,
                       const int *want, const char *const *why, int ok)
{
    fprintf(out, "{\"version\":\"%d.%d\",\"root\":", OC_VERSION_MAJOR,
            OC_VERSION_MINOR);
    json_str(out, d->root[0] ? d->root : "/");
    fputs(",\"checks\":[", out);
    for (size_t i = 0; i < NCHECKS; i++) {
        fprintf(out, "%s\n{\"id\":\"%s\",\"title\":", i ? "," : "", c[i].id);
        json_str(out, c[i].title);
        fprintf(out, ",\"verdict\":\"%s\",\"summary\":",
                verdict_names[c[i].verdict]);
        json_str(out, c[i].summary);
        fputs(",\"evidence\":[", out);
        const char *p = c[i].evidence;
        int first = 1;
        while (*p) {
            size_t n = strcspn(p, "\n");
            char line[1024];
            snprintf(line, sizeof(line), "%.*s", (int)n, p);
            fputs(first ? "" : ",", out);
            json_str(out, line);
            first = 0;
            p += n + (p[n] == '\n');
        }
        fputs("],\"fix\":", out);
        json_str(out, c[i].fix);
        fputc('}', out);
    }
    fputs("],\n\"requirements\":[", out);
    int first = 1;
    for (size_t r = 0; r < NREQS; r++) {
        if (!want[r])
            continue;
        fprintf(out, "%s{\"name\":\"%s\",\"met\":%s,\"reason\":", first ? "" : ",",
                reqs[r].name, why[r] ? "false" : "true");
        json_str(out, why[r] ? why[r] : "");
        fputc('}', out);
        first = 0;
    }
    fprintf(out, "],\"ok\":%s}\n", ok ? "true" : "false");
}

static void print_human(FILE *out, const oc_dr_t *d, const oc_dr_check_t *c,
                        const int *want, const char *const *why)
{
    if (d->root[0])
        fprintf(out, "offcore doctor (system tree under %s)\n\n", d->root);
    for (size_t i = 0; i < NCHECKS; i++) {
        fprintf(out, "[%-4s] %s: %s\n", verdict_names[c[i].verdict],
                c[i].title, c[i].summary);
        const char *p = c[i].evidence;
        while (*p) {
            size_t n = strcspn(p, "\n");
            fprintf(out, "         %.*s\n", (int)n, p);
            p += n + (p[n] == '\n');
        }
        if (c[i].fix[0] && c[i].verdict != OC_DR_OK &&
            c[i].verdict != OC_DR_NA)
            fprintf(out, "         fix: %s\n", c[i].fix);
    }
    int any = 0;
    for (size_t r = 0; r < NREQS; r++) {
        if (!want[r])
            continue;
        if (!any)
            fputc('\n', out);
        any = 1;
        if (why[r])
            fprintf(out, "requirement %s: NOT MET: %s\n", reqs[r].name, why[r]);
        else
            fprintf(out, "requirement %s: met\n", reqs[r].name);
    }
}

static void usage(FILE *out)
{
    fprintf(out,
        "usage: offcore doctor [--json] [--require LIST] [--root DIR] [--live]\n"
        "                      [--agent ADDR] [--dp-socket PATH] [--nccl LIB]\n"
        "                      [--nccl-timeout S]\n"
        "\n"
        "Checks, in order, whether the fast paths are really in use: RDMA\n"
        "devices and ports (state, link layer, speed, MTU, RoCE v2 GID),\n"
        "/dev/infiniband access, the locked-memory limit, the transports UCX\n"
        "picks toward a peer on this host and on another, the NVIDIA driver,\n"
        "GPUs, GPUDirect RDMA (nvidia_peermem or dma-buf), the PCIe path from\n"
        "each GPU to its nearest NIC, NCCL's network, offcore-dp readiness\n"
        "and the local daemons.  Each check says ok / warn / fail / n/a, the\n"
        "evidence it read, and the fix.\n"
        "\n"
        "  --json          one JSON object (stable keys: checks[].id, verdict,\n"
        "                  summary, evidence, fix; requirements[]; ok)\n"
        "  --require LIST  comma-separated fast paths that must be in use;\n"
        "                  exits 1 naming the first unmet one's reason:\n");
    for (size_t r = 0; r < NREQS; r++)
        fprintf(out, "                    %-10s %s\n", reqs[r].name, reqs[r].what);
    fprintf(out,
        "  --root DIR      read /sys, /proc and /dev under DIR (a recorded\n"
        "                  system tree); the live probes (UCX, NCCL,\n"
        "                  daemons) then report n/a unless --live\n"
        "  --live          run the live probes with --root too\n"
        "  --agent ADDR    offcored metrics address (default $%s or %s);\n"
        "                  its control socket: $OC_AGENT (unix:PATH) or\n"
        "                  " OC_DEFAULT_AGENT_SOCK "\n"
        "  --dp-control P  offcore-dp's control socket, PATH or unix:PATH, as\n"
        "                  its --control (--dp-socket is the same)\n"
        "                  (default " OC_DEFAULT_DP_SOCK ")\n"
        "  --nccl LIB      the NCCL library to probe (default libnccl.so.2)\n"
        "  --nccl-timeout S  seconds the NCCL init may take (default 20)\n"
        "\n"
        "exit status: 0 no check failed and every requirement is met;\n"
        "1 a check failed or a requirement is not met; 2 usage error.\n",
        "OC_AGENT_METRICS", OC_DEFAULT_METRICS_ADDR);
}

int oc__doctor_main(int argc, char **argv, FILE *out, FILE *err)
{
    oc_dr_t *d;
    oc_dr_check_t *c;
    int json = 0, want[NREQS] = {0}, rc = 0, live_set = 0;
    const char *why[NREQS] = {0};
    const char *require = NULL;

    d = calloc(1, sizeof(*d));
    c = calloc(NCHECKS, sizeof(*c));
    if (d == NULL || c == NULL) {
        fprintf(err, "offcore doctor: out of memory\n");
        free(d);
        free(c);
        return 2;
    }
    d->live = 1;
    d->agent = getenv("OC_AGENT_METRICS");
    d->nccl_lib = "libnccl.so.2";
    d->nccl_timeout_s = 20;
    d->agent_ctl = OC_DEFAULT_AGENT_SOCK;
    d->dp_sock = OC_DEFAULT_DP_SOCK;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--json")) {
            json = 1;
        } else if (!strcmp(a, "--live")) {
            live_set = 1;
        } else if ((!strcmp(a, "--require") || !strcmp(a, "--root") ||
                    !strcmp(a, "--agent") || !strcmp(a, "--nccl") ||
                    !strcmp(a, "--nccl-timeout") ||
                    !strcmp(a, "--dp-socket") ||
                    !strcmp(a, "--dp-control")) && !v) {
            fprintf(err, "offcore doctor: %s needs a value\n", a);
            rc = 2;
            goto out;
        } else if (!strcmp(a, "--require")) {
            require = argv[++i];
        } else if (!strcmp(a, "--root")) {
            size_t n = strlen(v);
            while (n > 1 && v[n - 1] == '/')
                n--;
            if (n >= sizeof(d->root) - 256) {
                fprintf(err, "offcore doctor: --root path too long\n");
                rc = 2;
                goto out;
            }
            snprintf(d->root, sizeof(d->root), "%.*s", (int)n, v);
            if (!strcmp(d->root, "/"))
                d->root[0] = '\0';
            i++;
        } else if (!strcmp(a, "--agent")) {
            d->agent = argv[++i];
        } else if (!strcmp(a, "--nccl")) {
            d->nccl_lib = argv[++i];
        } else if (!strcmp(a, "--dp-socket") || !strcmp(a, "--dp-control")) {
            /* --dp-control: offcore dp's and offcore-dp's --control */
            d->dp_sock = argv[++i];
            if (!strncmp(d->dp_sock, "unix:", 5))
                d->dp_sock += 5;
        } else if (!strcmp(a, "--nccl-timeout")) {
            char *end;
            d->nccl_timeout_s = strtod(argv[++i], &end);
            if (*end != '\0' || !(d->nccl_timeout_s > 0)) {
                fprintf(err, "offcore doctor: --nccl-timeout wants seconds "
                             "> 0\n");
                rc = 2;
                goto out;
            }
        } else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(out);
            goto out;
        } else {
            char e[256];
            fprintf(err, "offcore doctor: unknown option '%s'\n\n",
                    oc__esc_str(a, e, sizeof(e)));
            usage(err);
            rc = 2;
            goto out;
        }
    }
    if (d->root[0] && !live_set)
        d->live = 0;
    for (const char *p = require; p && *p;) {
        size_t n = strcspn(p, ",");
        size_t r;
        for (r = 0; r < NREQS; r++)
            if (strlen(reqs[r].name) == n && !strncmp(reqs[r].name, p, n))
                break;
        if (n > 0 && r == NREQS) {
            fprintf(err, "offcore doctor: unknown requirement '%.*s' "
                         "(known:", (int)n, p);
            for (r = 0; r < NREQS; r++)
                fprintf(err, " %s", reqs[r].name);
            fprintf(err, ")\n");
            rc = 2;
            goto out;
        }
        if (n > 0)
            want[r] = 1;
        p += n;
        p += *p == ',';
    }

    /* UCX and NCCL log to stdout: keep it for our output (--json must
     * stay parseable) by sending theirs to stderr while the checks run */
    int saved = -1;
    if (out == stdout) {
        fflush(stdout);
        saved = dup(1);
        if (saved >= 0)
            dup2(2, 1);
    }
    for (size_t i = 0; i < NCHECKS; i++) {
        c[i].id = checks[i].id;
        c[i].title = checks[i].title;
        c[i].verdict = OC_DR_NA;
        d->cur = &c[i];
        checks[i].run(d);
        if (c[i].verdict == OC_DR_FAIL)
            rc = 1;
    }
    if (saved >= 0) {
        fflush(stdout);
        dup2(saved, 1);
        close(saved);
    }
    for (size_t r = 0; r < NREQS; r++)
        if (want[r] && (why[r] = reqs[r].judge(d, c)) != NULL) {
            static char whys[NREQS][1024];
            snprintf(whys[r], sizeof(whys[r]), "%s", why[r]);
            why[r] = whys[r];
            rc = 1;
        }
    if (json)
        print_json(out, d, c, want, why, rc == 0);
    else
        print_human(out, d, c, want, why);
    for (size_t r = 0; r < NREQS; r++)
        if (want[r] && why[r])
            fprintf(err, "offcore doctor: requirement '%s' not met: %s\n",
                    reqs[r].name, why[r]);
out:
    free(c);
    free(d);
    return rc;
}
