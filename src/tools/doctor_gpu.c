/*
 * doctor_gpu.c — the NVIDIA driver, the GPUs, GPUDirect RDMA
 * (nvidia_peermem or dma-buf) and the PCIe path from each GPU to its
 * nearest RDMA NIC, from procfs (/proc/driver/nvidia, /proc/modules) and
 * sysfs (/sys/bus/pci/devices, /sys/module) under the root prefix.
 * The PCIe relation uses nvidia-smi topo's names so operators can compare.
 * And, live, what liboffcore itself will make of device buffers: whether
 * it loads libcuda (src/gpu), the driver's version and devices, and the
 * pinned staging it needs against RLIMIT_MEMLOCK.
 */
#include "doctor.h"

#include "gpu/gpu.h"

#include <sys/resource.h>

#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static void strip_root(const oc_dr_t *d, char *p)
{
    size_t rl = strlen(d->root);
    if (rl && !strncmp(p, d->root, rl))
        memmove(p, p + rl, strlen(p + rl) + 1);
}

/* NVIDIA display/3D controllers on the PCI bus. */
static void scan_gpus(oc_dr_t *d)
{
    char path[PATH_MAX];
    struct dirent **ents;
    int n = scandir(oc__dr_path(d, path, "/sys/bus/pci/devices"), &ents, NULL,
                    alphasort);
    for (int i = 0; i < n; i++) {
        char vendor[16], cls[16], link[PATH_MAX], real[PATH_MAX];
        const char *a = ents[i]->d_name;
        if (a[0] != '.' &&
            oc__dr_read(d, vendor, sizeof(vendor),
                        "/sys/bus/pci/devices/%s/vendor", a) > 0 &&
            !strcmp(vendor, "0x10de") &&
            oc__dr_read(d, cls, sizeof(cls), "/sys/bus/pci/devices/%s/class",
                        a) > 0 &&
            !strncmp(cls, "0x03", 4) && d->ngpu < OC_DR_MAX_DEV) {
            oc_dr_gpu_t *g = &d->gpu[d->ngpu++];
            snprintf(g->addr, sizeof(g->addr), "%.31s", a);
            oc__dr_path(d, link, "/sys/bus/pci/devices/%s", a);
            if (realpath(link, real) != NULL) {
                strip_root(d, real);
                snprintf(g->pci, sizeof(g->pci), "%s", real);
            }
            char info[2048], *m;
            if (oc__dr_read(d, info, sizeof(info),
                            "/proc/driver/nvidia/gpus/%s/information", a) > 0 &&
                (m = strstr(info, "Model:")) != NULL) {
                m += 6;
                m += strspn(m, " \t");
                snprintf(g->model, sizeof(g->model), "%.*s",
                         (int)strcspn(m, "\n"), m);
            }
        }
        free(ents[i]);
    }
    if (n >= 0)
        free(ents);
}

static char driver_version[256];

void oc__dr_nvidia_driver(oc_dr_t *d)
{
    char v[512];
    scan_gpus(d);
    driver_version[0] = '\0';
    if (oc__dr_read(d, v, sizeof(v), "/proc/driver/nvidia/version") > 0) {
        d->driver = 1;
        snprintf(driver_version, sizeof(driver_version), "%.*s",
                 (int)strcspn(v, "\n"), v);
        oc__dr_ev(d, "%s/proc/driver/nvidia/version: %s", d->root,
                  driver_version);
        oc__dr_set(d, OC_DR_OK, NULL, "%s", driver_version);
        return;
    }
    oc__dr_ev(d, "%s/proc/driver/nvidia/version: absent", d->root);
    if (d->ngpu)
        oc__dr_set(d, OC_DR_FAIL, "install the NVIDIA driver and load it "
                   "(modprobe nvidia; nvidia-smi)",
                   "%d NVIDIA GPU%s on the PCI bus but no driver loaded",
                   d->ngpu, d->ngpu == 1 ? "" : "s");
    else
        oc__dr_set(d, OC_DR_NA, NULL, "no NVIDIA driver and no NVIDIA GPU");
}

void oc__dr_gpus(oc_dr_t *d)
{
    if (d->ngpu == 0) {
        oc__dr_ev(d, "%s/sys/bus/pci/devices: no device of vendor 0x10de, "
                  "class 0x03xxxx", d->root);
        oc__dr_set(d, OC_DR_NA, NULL, "no GPU: GPUDirect is not applicable");
        return;
    }
    for (int i = 0; i < d->ngpu; i++)
        oc__dr_ev(d, "%s: %s", d->gpu[i].addr,
                  d->gpu[i].model[0] ? d->gpu[i].model
                                     : "NVIDIA GPU (model: driver not loaded)");
    oc__dr_set(d, OC_DR_OK, NULL, "%d NVIDIA GPU%s", d->ngpu,
               d->ngpu == 1 ? "" : "s");
}

static int module_loaded(oc_dr_t *d, const char *name)
{
    char mods[65536], path[PATH_MAX], pat[80];
    struct stat sb;
    snprintf(pat, sizeof(pat), "%s ", name);
    if (oc__dr_read(d, mods, sizeof(mods), "/proc/modules") > 0)
        for (const char *p = mods; p; p = strchr(p, '\n'), p = p ? p + 1 : p)
            if (!strncmp(p, pat, strlen(pat))) {
                oc__dr_ev(d, "/proc/modules: %.*s", (int)strcspn(p, "\n"), p);
                return 1;
            }
    if (stat(oc__dr_path(d, path, "/sys/module/%s", name), &sb) == 0) {
        oc__dr_ev(d, "/sys/module/%s: present", name);
        return 1;
    }
    return 0;
}

void oc__dr_gpudirect(oc_dr_t *d)
{
    char rel[64];
    if (d->ngpu == 0) {
        oc__dr_set(d, OC_DR_NA, NULL, "not applicable: no GPU");
        return;
    }
    if (d->nrdma == 0) {
        oc__dr_set(d, OC_DR_NA, NULL, "not applicable: no RDMA NIC");
        return;
    }
    if (module_loaded(d, "nvidia_peermem") || module_loaded(d, "nv_peer_mem")) {
        d->peermem = 1;
        oc__dr_set(d, OC_DR_OK, NULL, "nvidia_peermem loaded: NICs can read "
                   "and write GPU memory directly");
        return;
    }
    oc__dr_ev(d, "nvidia_peermem: not in /proc/modules nor /sys/module");
    int open_km = strstr(driver_version, "Open Kernel Module") != NULL;
    int maj = 0, min = 0;
    if (oc__dr_read(d, rel, sizeof(rel), "/proc/sys/kernel/osrelease") > 0)
        sscanf(rel, "%d.%d", &maj, &min);
    oc__dr_ev(d, "driver: %s kernel module; kernel %d.%d (dma-buf export of "
              "GPU memory needs the open module and 5.12+)",
              open_km ? "open" : "proprietary", maj, min);
    if (open_km && (maj > 5 || (maj == 5 && min >= 12))) {
        d->dmabuf = 1;
        oc__dr_set(d, OC_DR_WARN, "modprobe nvidia_peermem for software "
                   "that does not use dma-buf (UCX before 1.15)",
                   "no nvidia_peermem, but dma-buf can carry GPUDirect RDMA "
                   "(NCCL 2.19+ uses it; UCX needs 1.15+)");
        return;
    }
    oc__dr_set(d, OC_DR_FAIL,
               "modprobe nvidia_peermem (it ships with the driver but is "
               "not loaded at boot); to keep it: echo nvidia_peermem > "
               "/etc/modules-load.d/nvidia-peermem.conf",
               "no nvidia_peermem and no dma-buf path: NCCL and UCX stage "
               "GPU data through host memory");
}

/* Path components after /sys/devices/. */
static int comps(const char *p, char c[][64], int max)
{
    int n = 0;
    const char *s = strstr(p, "/devices/");
    if (s == NULL)
        return 0;
    s += 9;
    while (*s && n < max) {
        size_t l = strcspn(s, "/");
        snprintf(c[n++], 64, "%.*s", (int)l, s);
        s += l;
        s += *s == '/';
    }
    return n;
}

const char *oc__dr_pcie_relation(const char *a, const char *b)
{
    char ca[16][64], cb[16][64];
    int na = comps(a, ca, 16), nb = comps(b, cb, 16), k = 0;
    if (na == 0 || nb == 0 || strcmp(ca[0], cb[0]))
        return "SYS";
    while (k < na && k < nb && !strcmp(ca[k], cb[k]))
        k++;
    if (k == 1)
        return "PHB";
    return na - k <= 2 && nb - k <= 2 ? "PIX" : "PXB";
}

/* The deepest sysfs node both paths pass through ("0000:01:00.0", or the
 * root complex "pci0000:00"); "" when none. */
static void common_upstream(const char *a, const char *b, char *out,
                            size_t len)
{
    char ca[16][64], cb[16][64];
    int na = comps(a, ca, 16), nb = comps(b, cb, 16), k = 0;
    while (k < na - 1 && k < nb - 1 && !strcmp(ca[k], cb[k]))
        k++;
    snprintf(out, len, "%s", k > 0 ? ca[k - 1] : "");
}

static int rank_of(const char *rel)
{
    static const char *const order[] = {"PIX", "PXB", "PHB", "NODE", "SYS"};
    for (int i = 0; i < 5; i++)
        if (!strcmp(rel, order[i]))
            return i;
    return 5;
}

static int numa_of(oc_dr_t *d, const char *devpath)
{
    char v[16];
    if (oc__dr_read(d, v, sizeof(v), "%s/numa_node", devpath) > 0)
        return atoi(v);
    return -1;
}

void oc__dr_pcie(oc_dr_t *d)
{
    int worst = 0;
    if (d->ngpu == 0 || d->nrdma == 0) {
        oc__dr_set(d, OC_DR_NA, NULL, "not applicable: %s",
                   d->ngpu == 0 ? "no GPU" : "no RDMA NIC");
        return;
    }
    for (int i = 0; i < d->ngpu; i++) {
        const char *best = NULL, *nic = NULL, *nicpath = NULL;
        char up[64];
        for (int j = 0; j < d->nrdma; j++) {
            const char *rel = oc__dr_pcie_relation(d->gpu[i].pci,
                                                   d->rdma[j].pci);
            if (!strcmp(rel, "SYS")) {
                int na = numa_of(d, d->gpu[i].pci), nb = numa_of(d,
                                                         d->rdma[j].pci);
                if (na >= 0 && na == nb)
                    rel = "NODE";
            }
            if (best == NULL || rank_of(rel) < rank_of(best)) {
                best = rel;
                nic = d->rdma[j].name;
                nicpath = d->rdma[j].pci;
            }
        }
        common_upstream(d->gpu[i].pci, nicpath, up, sizeof(up));
        oc__dr_ev(d, "GPU %s -> %s: %s (%s; common upstream: %s)",
                  d->gpu[i].addr, nic, best,
                  !strcmp(best, "PIX") ? "one PCIe switch"
                  : !strcmp(best, "PXB") ? "several PCIe bridges, no CPU"
                  : !strcmp(best, "PHB") ? "through the CPU's host bridge"
                  : !strcmp(best, "NODE") ? "across host bridges of one "
                                            "NUMA node"
                                          : "across the CPU interconnect",
                  up[0] ? up : "none");
        if (rank_of(best) > worst)
            worst = rank_of(best);
    }
    if (worst <= 1)
        oc__dr_set(d, OC_DR_OK, NULL, "every GPU has a NIC behind the same "
                   "PCIe switch");
    else
        oc__dr_set(d, OC_DR_WARN,
                   "bind each rank to a GPU and the NIC nearest it "
                   "(NCCL_IB_HCA, UCX_NET_DEVICES); NCCL uses GPUDirect RDMA "
                   "only up to NCCL_NET_GDR_LEVEL (default PXB)",
                   "a GPU's nearest NIC is %s away: GPUDirect RDMA there "
                   "goes through the CPU", worst == 2 ? "PHB" :
                   worst == 3 ? "NODE" : "SYS");
}

/* What liboffcore will do with CUDA device buffers (docs/gpu.md): the
 * same loader the library uses (src/gpu), so the answer is the library's. */
void oc__dr_gpu_memory(oc_dr_t *d)
{
    oc__gpu_config_t cfg;
    struct rlimit rl;
    unsigned long long need;
    int ver;

    if (!d->live) {
        oc__dr_set(d, OC_DR_NA, NULL, "live probe: not run against --root");
        return;
    }
    if (!oc__gpu_load()) {
        const char *why = oc__gpu_why();
        oc__dr_ev(d, "%s: %s", oc__gpu_lib_name(), why);
        if (strncmp(why, "cuInit", 6) == 0 || strstr(why, " has no ") != NULL)
            oc__dr_set(d, OC_DR_WARN, "check the driver: nvidia-smi",
                       "%s loads but %s: device buffers will not be served",
                       oc__gpu_lib_name(), why);
        else
            oc__dr_set(d, OC_DR_NA, NULL, "no CUDA driver (%s): every buffer "
                       "is host memory", oc__gpu_lib_name());
        return;
    }
    ver = oc__gpu_driver_version();
    oc__dr_ev(d, "%s: CUDA driver API %d.%d, %d device(s)", oc__gpu_lib_name(),
              ver / 1000, ver % 1000 / 10, oc__gpu_device_count());
    if (oc__gpu_config(&cfg) != OC_OK) {
        oc__dr_set(d, OC_DR_FAIL, "fix OC_GPU_CHUNK / OC_GPU_SLOTS",
                   "OC_GPU_* settings are invalid: collectives on device "
                   "buffers will fail");
        return;
    }
    if (!cfg.on) {
        oc__dr_set(d, OC_DR_NA, NULL, "OC_GPU=n: liboffcore treats every "
                   "buffer as host memory");
        return;
    }
    need = cfg.slots * 2 * cfg.chunk;
    oc__dr_ev(d, "pinned staging per rank: %llu x 2 x %llu bytes = %llu MiB",
              (unsigned long long)cfg.slots, (unsigned long long)cfg.chunk,
              need >> 20);
    if (getrlimit(RLIMIT_MEMLOCK, &rl) == 0) {
        if (rl.rlim_cur == RLIM_INFINITY)
            oc__dr_ev(d, "pinned-memory limit (RLIMIT_MEMLOCK): unlimited");
        else
            oc__dr_ev(d, "pinned-memory limit (RLIMIT_MEMLOCK): %llu KiB",
                      (unsigned long long)rl.rlim_cur >> 10);
    }
    if (oc__gpu_device_count() == 0) {
        oc__dr_set(d, OC_DR_WARN, NULL, "the driver loads but sees no device");
        return;
    }
    if (getrlimit(RLIMIT_MEMLOCK, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
        rl.rlim_cur < need) {
        oc__dr_set(d, OC_DR_WARN, "raise RLIMIT_MEMLOCK (see memlock) or "
                   "lower OC_GPU_CHUNK", "device buffers served, but the "
                   "pinned-memory limit (%llu KiB) is below the staging a rank "
                   "needs (%llu MiB)", (unsigned long long)rl.rlim_cur >> 10,
                   need >> 20);
        return;
    }
    oc__dr_set(d, OC_DR_OK, NULL, "device buffers served (in processes that "
               "use CUDA): CUDA %d.%d, %d device(s), %llu MiB pinned per rank",
               ver / 1000, ver % 1000 / 10, oc__gpu_device_count(), need >> 20);
}
