/*
 * doctor.h — `offcore doctor`: is the fast path really in use?
 *
 * A fixed list of checks runs in order (doctor.c); each gives a verdict
 * (ok / warn / fail / n/a), the evidence it read and the fix.  The checks
 * read sysfs, procfs and /dev under a root prefix (--root, so recorded
 * system trees in tests/doctor/fixtures stand in for real hosts), and
 * some probe live: UCX (doctor_live.c), NCCL, the local daemons.  Facts
 * one check learns (devices, ports, GPUs) are kept in oc_dr_t for the
 * checks and requirements after it.  Single-threaded; the NCCL probe runs
 * in a child process.
 */
#ifndef OC_TOOLS_DOCTOR_H
#define OC_TOOLS_DOCTOR_H

#include <limits.h>
#include <stddef.h>
#include <stdio.h>

/** Run `offcore doctor`; argv[0] is "doctor".
 *  @return 0 no check failed and every --require is met; 1 a check failed
 *  or a requirement is not met; 2 usage error. */
int oc__doctor_main(int argc, char **argv, FILE *out, FILE *err);

typedef enum { OC_DR_OK, OC_DR_WARN, OC_DR_FAIL, OC_DR_NA } oc_dr_verdict_t;

#define OC_DR_EVIDENCE 4096

typedef struct {
    const char     *id;       /* stable key, e.g. "rdma_ports" */
    const char     *title;
    oc_dr_verdict_t verdict;
    char            summary[256];
    char            evidence[OC_DR_EVIDENCE]; /* lines */
    char            fix[768];
} oc_dr_check_t;

#define OC_DR_MAX_DEV 16

typedef struct {
    char name[64];
    char pci[PATH_MAX];  /* the device's sysfs path without the root */
    int  active_ports, ports;
    int  roce_ports;     /* ports with link layer Ethernet */
    int  roce_v2_ports;  /* of which with a RoCE v2 GID */
} oc_dr_rdma_t;

typedef struct {
    char addr[32];       /* PCI address 0000:3b:00.0 */
    char pci[PATH_MAX];
    char model[128];
} oc_dr_gpu_t;

typedef struct {
    char root[PATH_MAX]; /* "" for the real system */
    int  live;           /* run the live probes (UCX, NCCL, daemons) */
    const char *agent;   /* offcored metrics address */
    const char *agent_ctl; /* offcored control socket path */
    const char *dp_sock;   /* offcore-dp control socket path */
    const char *nccl_lib;
    double nccl_timeout_s;
    /* facts, filled in as the checks run */
    oc_dr_rdma_t rdma[OC_DR_MAX_DEV];
    int  nrdma, active_ports, uverbs_ok, memlock_ok;
    unsigned ucx_net_cls;  /* classes UCX picks toward another host */
    int  ucx_ran;
    oc_dr_gpu_t gpu[OC_DR_MAX_DEV];
    int  ngpu, driver, peermem, dmabuf, topo_ok;
    int  nccl_net;       /* 0 unknown/absent, 1 IB, 2 Socket */
    int  gdr_nccl;       /* NCCL said GPUDirect RDMA is enabled */
    int  dp_ok, agent_ok;
    oc_dr_check_t *cur;
} oc_dr_t;

/* Helpers (doctor.c). */
/** @p path under the root prefix into @p buf (PATH_MAX). */
const char *oc__dr_path(const oc_dr_t *d, char *buf, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/** Read a small file under the root, trimmed of trailing white space.
 *  @return its length, -1 when it cannot be read. */
int oc__dr_read(const oc_dr_t *d, char *buf, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/** Append one line of evidence to the current check. */
void oc__dr_ev(oc_dr_t *d, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/** Set the current check's verdict, summary and fix (fix may be NULL). */
void oc__dr_set(oc_dr_t *d, oc_dr_verdict_t v, const char *fix,
                const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* The checks, in the order they run. */
void oc__dr_rdma_devices(oc_dr_t *d);  /* doctor_rdma.c */
void oc__dr_rdma_ports(oc_dr_t *d);
void oc__dr_roce_gid(oc_dr_t *d);
void oc__dr_dev_infiniband(oc_dr_t *d);
void oc__dr_memlock(oc_dr_t *d);
void oc__dr_ucx(oc_dr_t *d);           /* doctor_live.c */
void oc__dr_nvidia_driver(oc_dr_t *d); /* doctor_gpu.c */
void oc__dr_gpus(oc_dr_t *d);
void oc__dr_gpudirect(oc_dr_t *d);
void oc__dr_pcie(oc_dr_t *d);
void oc__dr_nccl(oc_dr_t *d);          /* doctor_live.c */
void oc__dr_gpu_memory(oc_dr_t *d);    /* doctor_gpu.c */
void oc__dr_dp(oc_dr_t *d);            /* doctor_rdma.c */
void oc__dr_offcored(oc_dr_t *d);      /* doctor_live.c */
void oc__dr_offcore_dp(oc_dr_t *d);

/** Parse NCCL_DEBUG=INFO output: 1 NET/IB, 2 NET/Socket, 0 neither;
 *  *gdr set to 1 when it reports GPUDirect RDMA in use (GDRDMA or "GPU
 *  Direct RDMA Enabled").  Pure (tests feed recorded logs). */
int oc__dr_nccl_parse(const char *log, int *gdr);

/** PCIe relation of two sysfs device paths, as nvidia-smi topo names it:
 *  "PIX" (one bridge), "PXB" (several bridges), "PHB" (the host bridge),
 *  "SYS" (across root complexes / sockets).  Pure. */
const char *oc__dr_pcie_relation(const char *a, const char *b);

#endif
