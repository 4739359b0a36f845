/*
 * doctor_rdma.c — the checks that read the RDMA devices, their ports and
 * GID tables, /dev/infiniband, the memlock limit and what offcore-dp needs
 * (capabilities, bpffs, hugepages), all from sysfs/procfs/dev under the
 * root prefix.  Layouts: the kernel's Documentation/ABI/stable/
 * sysfs-class-infiniband and Documentation/admin-guide/mm/hugetlbpage.rst.
 * Nothing here calls ibverbs (docs/design.md: UCX is our only verbs user).
 */
#include "doctor.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Entries of a directory under the root, in version order (uverbs2 before
 * uverbs10).  @return the count, -1 when it cannot be read. */
static int list(const oc_dr_t *d, const char *rel, char names[][64], int max)
{
    char path[PATH_MAX];
    struct dirent **ents;
    int n, k = 0;

    n = scandir(oc__dr_path(d, path, "%s", rel), &ents, NULL, versionsort);
    if (n < 0)
        return -1;
    for (int i = 0; i < n; i++) {
        if (ents[i]->d_name[0] != '.' && k < max)
            snprintf(names[k++], 64, "%.63s", ents[i]->d_name);
        free(ents[i]);
    }
    free(ents);
    return k;
}

/* The device's real sysfs path, without the root prefix. */
static void device_path(const oc_dr_t *d, const char *link, char *out)
{
    char path[PATH_MAX], real[PATH_MAX];
    size_t rl = strlen(d->root);
    out[0] = '\0';
    if (realpath(oc__dr_path(d, path, "%s", link), real) == NULL)
        return;
    if (rl && !strncmp(real, d->root, rl))
        memmove(real, real + rl, strlen(real + rl) + 1);
    snprintf(out, PATH_MAX, "%s", real);
}

static const char *model_of(const char *hca)
{
    static const struct { const char *id, *name; } m[] = {
        {"MT4119", "ConnectX-5"},   {"MT4121", "ConnectX-5 Ex"},
        {"MT4123", "ConnectX-6"},   {"MT4125", "ConnectX-6 Dx"},
        {"MT4127", "ConnectX-6 Lx"}, {"MT4129", "ConnectX-7"},
        {"MT4131", "ConnectX-8"},   {"MT41682", "BlueField"},
        {"MT41686", "BlueField-2"}, {"MT41692", "BlueField-3"},
    };
    for (size_t i = 0; i < sizeof(m) / sizeof(m[0]); i++)
        if (!strcmp(hca, m[i].id))
            return m[i].name;
    return NULL;
}

void oc__dr_rdma_devices(oc_dr_t *d)
{
    char names[OC_DR_MAX_DEV][64];
    int n = list(d, "/sys/class/infiniband", names, OC_DR_MAX_DEV);

    if (n <= 0) {
        oc__dr_ev(d, "%s/sys/class/infiniband: %s", d->root,
                  n < 0 ? "absent" : "empty");
        oc__dr_set(d, OC_DR_WARN,
                   "on a host with a ConnectX or BlueField NIC: install "
                   "rdma-core and load mlx5_ib (modprobe mlx5_ib); in a VM, "
                   "pass the NIC or an SR-IOV function through",
                   "no RDMA device: UCX will use TCP between hosts and "
                   "shared memory within one");
        return;
    }
    for (int i = 0; i < n; i++) {
        oc_dr_rdma_t *r = &d->rdma[d->nrdma++];
        char hca[64], fw[64], board[64], nets[4][64], link[PATH_MAX];
        const char *model;
        snprintf(r->name, sizeof(r->name), "%.63s", names[i]);
        oc__dr_read(d, hca, sizeof(hca), "/sys/class/infiniband/%s/hca_type",
                    r->name);
        oc__dr_read(d, fw, sizeof(fw), "/sys/class/infiniband/%s/fw_ver",
                    r->name);
        oc__dr_read(d, board, sizeof(board),
                    "/sys/class/infiniband/%s/board_id", r->name);
        snprintf(link, sizeof(link), "/sys/class/infiniband/%s/device",
                 r->name);
        device_path(d, link, r->pci);
        snprintf(link, sizeof(link), "/sys/class/infiniband/%s/device/net",
                 r->name);
        int nn = list(d, link, nets, 4);
        model = model_of(hca);
        const char *pci = strrchr(r->pci, '/');
        oc__dr_ev(d, "%s: %s%s%s%s, firmware %s, board %s, PCI %s%s%s",
                  r->name, hca[0] ? hca : "?", model ? " (" : "",
                  model ? model : "", model ? ")" : "", fw[0] ? fw : "?",
                  board[0] ? board : "?", pci ? pci + 1 : "?",
                  nn > 0 ? ", netdev " : "", nn > 0 ? nets[0] : "");
    }
    oc__dr_set(d, OC_DR_OK, NULL, "%d RDMA device%s", n, n == 1 ? "" : "s");
}

/* The RoCE MTU the kernel derives from the netdev's (iboe_get_mtu: the
 * netdev MTU less GRH, UDP, BTH and extension headers, 96 bytes, rounded
 * down to an IB MTU). */
static int roce_mtu(int netdev_mtu)
{
    int m = netdev_mtu - 96;
    for (int ib = 4096; ib >= 256; ib /= 2)
        if (m >= ib)
            return ib;
    return 0;
}

/* The netdev of a port: its GID table's, else the device's first. */
static void port_netdev(const oc_dr_t *d, const char *dev, const char *port,
                        char *out, size_t len)
{
    char names[4][64], rel[PATH_MAX];
    if (oc__dr_read(d, out, len, "/sys/class/infiniband/%s/ports/%s/gid_attrs"
                    "/ndevs/0", dev, port) > 0)
        return;
    snprintf(rel, sizeof(rel), "/sys/class/infiniband/%s/device/net", dev);
    if (list(d, rel, names, 4) > 0)
        snprintf(out, len, "%s", names[0]);
    else
        out[0] = '\0';
}

void oc__dr_rdma_ports(oc_dr_t *d)
{
    int down = 0, init = 0, total = 0;
    char downs[1024] = "";

    if (d->nrdma == 0) {
        oc__dr_set(d, OC_DR_NA, NULL, "no RDMA device");
        return;
    }
    for (int i = 0; i < d->nrdma; i++) {
        oc_dr_rdma_t *r = &d->rdma[i];
        char ports[8][64], rel[PATH_MAX];
        snprintf(rel, sizeof(rel), "/sys/class/infiniband/%s/ports", r->name);
        int np = list(d, rel, ports, 8);
        for (int p = 0; p < np; p++) {
            char st[64], phys[64], ll[64], rate[64], nd[64], mtu[32] = "";
            char mtus[96];
            const char *base = "/sys/class/infiniband/%s/ports/%s/%s";
            oc__dr_read(d, st, sizeof(st), base, r->name, ports[p], "state");
            oc__dr_read(d, phys, sizeof(phys), base, r->name, ports[p],
                        "phys_state");
            oc__dr_read(d, ll, sizeof(ll), base, r->name, ports[p],
                        "link_layer");
            oc__dr_read(d, rate, sizeof(rate), base, r->name, ports[p], "rate");
            r->ports++;
            total++;
            int active = strstr(st, "ACTIVE") != NULL;
            if (!strcmp(ll, "Ethernet")) {
                r->roce_ports++;
                port_netdev(d, r->name, ports[p], nd, sizeof(nd));
                if (nd[0])
                    oc__dr_read(d, mtu, sizeof(mtu), "/sys/class/net/%s/mtu",
                                nd);
                if (mtu[0])
                    snprintf(mtus, sizeof(mtus), "RoCE MTU %d (netdev %s, "
                             "MTU %s)", roce_mtu(atoi(mtu)), nd, mtu);
                else
                    snprintf(mtus, sizeof(mtus), "RoCE MTU unknown (no "
                             "netdev MTU in sysfs)");
            } else {
                snprintf(mtus, sizeof(mtus), "active MTU not in sysfs "
                         "(ibv_devinfo -v shows it)");
            }
            oc__dr_ev(d, "%s port %s: state %s, physical %s, link layer %s, "
                      "%s, %s", r->name, ports[p], st[0] ? st : "?",
                      phys[0] ? phys : "?", ll[0] ? ll : "?",
                      rate[0] ? rate : "rate ?", mtus);
            if (active) {
                r->active_ports++;
                d->active_ports++;
            } else {
                down++;
                init += strstr(st, "INIT") != NULL;
                size_t u = strlen(downs);
                snprintf(downs + u, sizeof(downs) - u, "%s%.20s/%.8s (%.20s)",
                         u ? ", " : "", r->name, ports[p], st);
            }
        }
    }
    if (d->active_ports == 0) {
        oc__dr_set(d, OC_DR_FAIL,
                   init ? "INIT means the link is up but no subnet manager "
                          "configured it: run opensm (or enable the switch's "
                          "SM); check with ibstat"
                        : "check the cable, transceiver and switch port "
                          "(ibstat; mlxlink -d DEV); for RoCE, bring the "
                          "netdev up (ip link set DEV up)",
                   "no active port of %d: %s", total, downs);
    } else if (down) {
        oc__dr_set(d, OC_DR_WARN,
                   "fine if those ports are unused; else check cable and "
                   "switch (ibstat, mlxlink)",
                   "%d of %d ports active; not active: %s", d->active_ports,
                   total, downs);
    } else {
        oc__dr_set(d, OC_DR_OK, NULL, "%d of %d ports active",
                   d->active_ports, total);
    }
}

static int gid_zero(const char *g)
{
    for (; *g; g++)
        if (*g != '0' && *g != ':')
            return 0;
    return 1;
}

void oc__dr_roce_gid(oc_dr_t *d)
{
    int roce = 0, missing = 0;
    char first_idx[1024] = "";

    for (int i = 0; i < d->nrdma; i++)
        roce += d->rdma[i].roce_ports;
    if (roce == 0) {
        oc__dr_set(d, OC_DR_NA, NULL, d->nrdma ? "no RoCE port (InfiniBand "
                   "link layer: no GID index to choose)" : "no RDMA device");
        return;
    }
    for (int i = 0; i < d->nrdma; i++) {
        oc_dr_rdma_t *r = &d->rdma[i];
        char ports[8][64], rel[PATH_MAX];
        snprintf(rel, sizeof(rel), "/sys/class/infiniband/%s/ports", r->name);
        int np = list(d, rel, ports, 8);
        for (int p = 0; p < np; p++) {
            char ll[64], st[64], gids[32][64];
            int v2 = -1, v2ipv4 = -1, nv1 = 0, ng;
            oc__dr_read(d, ll, sizeof(ll), "/sys/class/infiniband/%s/ports/"
                        "%s/link_layer", r->name, ports[p]);
            if (strcmp(ll, "Ethernet"))
                continue;
            oc__dr_read(d, st, sizeof(st), "/sys/class/infiniband/%s/ports/"
                        "%s/state", r->name, ports[p]);
            snprintf(rel, sizeof(rel), "/sys/class/infiniband/%s/ports/%s/"
                     "gid_attrs/types", r->name, ports[p]);
            ng = list(d, rel, gids, 32);
            for (int g = 0; g < ng; g++) {
                char type[32], gid[64], nd[64];
                const char *b = "/sys/class/infiniband/%s/ports/%s/%s/%s";
                /* empty entries read as EINVAL on a real kernel */
                if (oc__dr_read(d, type, sizeof(type), b, r->name, ports[p],
                                "gid_attrs/types", gids[g]) <= 0 ||
                    oc__dr_read(d, gid, sizeof(gid), b, r->name, ports[p],
                                "gids", gids[g]) <= 0 || gid_zero(gid))
                    continue;
                oc__dr_read(d, nd, sizeof(nd), b, r->name, ports[p],
                            "gid_attrs/ndevs", gids[g]);
                oc__dr_ev(d, "%s port %s GID %s: %s %s%s%s", r->name,
                          ports[p], gids[g], type, gid, nd[0] ? " on " : "",
                          nd);
                if (!strcmp(type, "RoCE v2")) {
                    if (v2 < 0)
                        v2 = atoi(gids[g]);
                    if (v2ipv4 < 0 && !strncmp(gid, "0000:0000:0000:0000:"
                                               "0000:ffff:", 30))
                        v2ipv4 = atoi(gids[g]);
                } else {
                    nv1++;
                }
            }
            if (v2 < 0) {
                r->roce_v2_ports += 0;
                if (strstr(st, "ACTIVE"))
                    missing++;
                oc__dr_ev(d, "%s port %s: no RoCE v2 GID (%d RoCE v1 only)",
                          r->name, ports[p], nv1);
            } else {
                int idx = v2ipv4 >= 0 ? v2ipv4 : v2;
                r->roce_v2_ports++;
                size_t u = strlen(first_idx);
                snprintf(first_idx + u, sizeof(first_idx) - u, "%s%.20s/%.8s: %d%s",
                         u ? ", " : "", r->name, ports[p], idx,
                         v2ipv4 >= 0 ? " (IPv4)" : "");
            }
        }
    }
    if (missing)
        oc__dr_set(d, OC_DR_FAIL,
                   "RoCE GIDs come from the netdev's IP addresses: give it "
                   "one (ip addr add ... dev DEV); make sure RoCE v2 is "
                   "enabled (cma_roce_mode -d DEV -p PORT -m 2); then set "
                   "UCX_IB_GID_INDEX / NCCL_IB_GID_INDEX to the v2 index",
                   "%d active RoCE port%s without a RoCE v2 GID: traffic "
                   "cannot be routed across subnets (v1 is L2 only)", missing,
                   missing == 1 ? "" : "s");
    else if (first_idx[0])
        oc__dr_set(d, OC_DR_OK, NULL, "RoCE v2 GID index %s (UCX_IB_GID_INDEX"
                   ", NCCL_IB_GID_INDEX)", first_idx);
    else
        oc__dr_set(d, OC_DR_WARN, "bring the RoCE ports up (rdma_ports)",
                   "no RoCE v2 GID on any port, and no RoCE port is active");
}

void oc__dr_dev_infiniband(oc_dr_t *d)
{
    char names[32][64], path[PATH_MAX];
    int n, uverbs = 0, opened = 0, cm = 0, denied = 0;

    if (d->nrdma == 0) {
        oc__dr_set(d, OC_DR_NA, NULL, "no RDMA device");
        return;
    }
    n = list(d, "/dev/infiniband", names, 32);
    if (n < 0) {
        oc__dr_ev(d, "%s/dev/infiniband: %s", d->root, strerror(ENOENT));
        oc__dr_set(d, OC_DR_FAIL,
                   "this namespace or container has no /dev/infiniband: "
                   "pass the devices in (docker run --device=/dev/infiniband"
                   " --cap-add=IPC_LOCK; Kubernetes: the RDMA shared device "
                   "plugin), or load ib_uverbs on the host",
                   "sysfs shows %d RDMA device%s but %s/dev/infiniband is "
                   "missing: verbs cannot be opened, UCX and NCCL fall back "
                   "to TCP", d->nrdma, d->nrdma == 1 ? "" : "s", d->root);
        return;
    }
    for (int i = 0; i < n; i++) {
        if (!strcmp(names[i], "rdma_cm"))
            cm = 1;
        if (strncmp(names[i], "uverbs", 6))
            continue;
        uverbs++;
        struct stat sb;
        oc__dr_path(d, path, "/dev/infiniband/%s", names[i]);
        if (stat(path, &sb) == 0 && S_ISREG(sb.st_mode)) {
            /* a recorded tree's stand-in for the device: present is all
             * it can say (its files may be read-only) */
            opened++;
            oc__dr_ev(d, "/dev/infiniband/%s: present (a recorded tree: "
                      "not a device, not opened)", names[i]);
            continue;
        }
        int fd = open(path, O_RDWR | O_CLOEXEC);
        if (fd >= 0) {
            opened++;
            close(fd);
            oc__dr_ev(d, "/dev/infiniband/%s: opened read/write", names[i]);
        } else {
            denied |= errno == EACCES || errno == EPERM;
            oc__dr_ev(d, "/dev/infiniband/%s: %s", names[i], strerror(errno));
        }
    }
    oc__dr_ev(d, "/dev/infiniband/rdma_cm: %s", cm ? "present" : "absent");
    if (uverbs == 0 || opened == 0) {
        oc__dr_set(d, OC_DR_FAIL,
                   !uverbs ? "load ib_uverbs (modprobe ib_uverbs) or pass "
                             "/dev/infiniband/uverbs* into the container"
                   : denied ? "give this user access (the rdma group, or a "
                              "udev rule for /dev/infiniband/uverbs*)"
                            : "the devices behind these nodes are gone: "
                              "reload ib_uverbs, or pass the host's current "
                              "/dev/infiniband into the container",
                   uverbs ? "no uverbs device can be opened read/write"
                          : "no uverbs device node");
        return;
    }
    d->uverbs_ok = 1;
    if (opened < d->nrdma || opened < uverbs)
        oc__dr_set(d, OC_DR_WARN, "pass every uverbs node in, or ignore if "
                   "the missing devices are unused",
                   "%d uverbs node%s usable for %d RDMA devices", opened,
                   opened == 1 ? "" : "s", d->nrdma);
    else
        oc__dr_set(d, OC_DR_OK, NULL, "%d uverbs node%s usable", opened,
                   opened == 1 ? "" : "s");
}

void oc__dr_memlock(oc_dr_t *d)
{
    char lim[4096], *l;
    unsigned long long soft = 0;
    int unlimited = 0;

    if (oc__dr_read(d, lim, sizeof(lim), "/proc/self/limits") < 0 ||
        (l = strstr(lim, "Max locked memory")) == NULL) {
        oc__dr_set(d, OC_DR_WARN, NULL, "cannot read %s/proc/self/limits",
                   d->root);
        return;
    }
    l += strlen("Max locked memory");
    l += strspn(l, " ");
    if (!strncmp(l, "unlimited", 9))
        unlimited = 1;
    else
        soft = strtoull(l, NULL, 10);
    if (unlimited)
        oc__dr_ev(d, "RLIMIT_MEMLOCK: unlimited");
    else
        oc__dr_ev(d, "RLIMIT_MEMLOCK: %llu KiB", soft >> 10);
    const char *fix = "raise it: LimitMEMLOCK=infinity in the systemd unit, "
                      "'* - memlock unlimited' in /etc/security/limits.conf,"
                      " or docker run --ulimit memlock=-1 "
                      "(--cap-add=IPC_LOCK)";
    if (unlimited || soft >= (1ull << 30)) {
        d->memlock_ok = 1;
        if (unlimited)
            oc__dr_set(d, OC_DR_OK, NULL, "unlimited");
        else
            oc__dr_set(d, OC_DR_WARN, fix, "%llu MiB: large registrations "
                       "(GPU memory, big buffers) may fail", soft >> 20);
    } else if (d->nrdma > 0) {
        oc__dr_set(d, OC_DR_FAIL, fix, "%llu KiB: too small for RDMA memory "
                   "registration (UCX and NCCL pin their buffers)",
                   soft >> 10);
    } else {
        d->memlock_ok = 1;
        oc__dr_set(d, OC_DR_OK, fix, "%llu KiB; only RDMA registration needs"
                   " more, and there is no RDMA device", soft >> 10);
    }
}

static int cap(const char *status, int bit)
{
    const char *e = strstr(status, "CapEff:");
    if (e == NULL)
        return -1;
    unsigned long long v = strtoull(e + 7, NULL, 16);
    return (int)((v >> bit) & 1);
}

void oc__dr_dp(oc_dr_t *d)
{
    char status[8192], mounts[16384], mem[8192], rel[64];
    int net_admin, bpf, sys_admin, bpffs = 0, problems = 0;
    long huge = 0, hfree = 0, hsize = 0;

    if (oc__dr_read(d, status, sizeof(status), "/proc/self/status") < 0) {
        oc__dr_set(d, OC_DR_WARN, NULL, "cannot read %s/proc/self/status",
                   d->root);
        return;
    }
    net_admin = cap(status, 12);
    sys_admin = cap(status, 21);
    bpf = cap(status, 39);
    oc__dr_ev(d, "capabilities: CAP_NET_ADMIN %s, CAP_BPF %s, CAP_SYS_ADMIN %s",
              net_admin == 1 ? "yes" : "no", bpf == 1 ? "yes" : "no",
              sys_admin == 1 ? "yes" : "no");
    if (net_admin != 1 || (bpf != 1 && sys_admin != 1))
        problems |= 1;
    if (oc__dr_read(d, mounts, sizeof(mounts), "/proc/mounts") >= 0)
        for (const char *p = mounts; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : p) {
            char dev[64], dir[256], type[32];
            if (sscanf(p, "%63s %255s %31s", dev, dir, type) == 3 &&
                !strcmp(type, "bpf")) {
                bpffs = 1;
                oc__dr_ev(d, "bpffs mounted at %s", dir);
                break;
            }
        }
    if (!bpffs) {
        oc__dr_ev(d, "bpffs: not mounted (libxdp then loads one XDP program"
                  " per interface instead of its dispatcher)");
        problems |= 2;
    }
    if (oc__dr_read(d, mem, sizeof(mem), "/proc/meminfo") >= 0) {
        const char *h;
        if ((h = strstr(mem, "HugePages_Total:")) != NULL)
            huge = strtol(h + 16, NULL, 10);
        if ((h = strstr(mem, "HugePages_Free:")) != NULL)
            hfree = strtol(h + 15, NULL, 10);
        if ((h = strstr(mem, "Hugepagesize:")) != NULL)
            hsize = strtol(h + 13, NULL, 10);
    }
    oc__dr_ev(d, "hugepages: %ld of %ld free, %ld KiB each (DPDK wants them;"
              " AF_XDP and DPDK --no-huge do not)", hfree, huge, hsize);
    snprintf(rel, sizeof(rel), "/proc/sys/kernel/osrelease");
    char rel_s[64];
    if (oc__dr_read(d, rel_s, sizeof(rel_s), "%s", rel) > 0) {
        int maj = 0, min = 0;
        sscanf(rel_s, "%d.%d", &maj, &min);
        oc__dr_ev(d, "kernel %s: AF_XDP %s", rel_s,
                  maj > 4 || (maj == 4 && min >= 18) ? "available (4.18+)"
                                                     : "missing (needs 4.18+)");
        if (!(maj > 4 || (maj == 4 && min >= 18)))
            problems |= 4;
    }
    d->dp_ok = !(problems & 5);
    if (problems & 1)
        oc__dr_set(d, OC_DR_WARN, "run offcore-dp as root or with "
                   "CAP_NET_ADMIN and CAP_BPF (AmbientCapabilities= in its "
                   "unit)", "offcore-dp cannot attach XDP programs: missing "
                   "capabilities");
    else if (problems & 4)
        oc__dr_set(d, OC_DR_WARN, "use a 4.18+ kernel or the DPDK backend",
                   "kernel too old for AF_XDP");
    else if (problems & 2)
        oc__dr_set(d, OC_DR_WARN, "mount -t bpf bpf /sys/fs/bpf",
                   "AF_XDP ready without bpffs (one XDP program per "
                   "interface); DPDK %s", huge ? "has hugepages" :
                   "needs --no-huge (no hugepages)");
    else
        oc__dr_set(d, OC_DR_OK, NULL, "AF_XDP ready; DPDK %s",
                   huge ? "has hugepages" : "needs --no-huge (no hugepages)");
}
