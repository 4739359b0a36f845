/*
 * fake_nccl.c — a test double of the three NCCL entry points `offcore
 * doctor` calls (ncclGetVersion, ncclCommInitAll, ncclCommDestroy), for
 * testing its NCCL probe (child process, pipe, timeout, log parsing) on
 * machines without GPUs.  With NCCL_DEBUG=INFO it prints the lines real
 * NCCL 2.18 prints at init; FAKE_NCCL_NET picks which: "IB" (NET/IB with
 * GPUDirect RDMA), "Socket" (the fall-back), "hang" (never returns).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef FAKE_NCCL_BROKEN
/* in a library whose soname no file carries (tests/doctor/meson.build) */
int oc_fake_nccl_dep(void);
#endif

__attribute__((visibility("default"))) int ncclGetVersion(int *v)
{
    *v = 21805;
#ifdef FAKE_NCCL_BROKEN
    *v += oc_fake_nccl_dep();
#endif
    return 0;
}

__attribute__((visibility("default"))) int ncclCommInitAll(void **comm, int n,
                                                           const int *devs)
{
    const char *net = getenv("FAKE_NCCL_NET");
    const char *dbg = getenv("NCCL_DEBUG");
    (void)n;
    (void)devs;
    if (net == NULL)
        net = "IB";
    if (!strcmp(net, "hang"))
        for (;;)
            pause();
    if (dbg != NULL && !strcmp(dbg, "INFO")) {
        printf("host:1:1 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.11<0>\n");
        if (!strcmp(net, "IB")) {
            printf("host:1:1 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE "
                   "[1]mlx5_1:1/IB ; OOB eth0:10.0.0.11<0>\n");
            printf("host:1:1 [0] NCCL INFO GPU Direct RDMA Enabled for HCA "
                   "0 'mlx5_0'\n");
            printf("host:1:1 [0] NCCL INFO Using network IB\n");
        } else {
            printf("host:1:1 [0] NCCL INFO NET/IB : No device found.\n");
            printf("host:1:1 [0] NCCL INFO NET/Socket : Using "
                   "[0]eth0:10.0.0.11<0>\n");
            printf("host:1:1 [0] NCCL INFO Using network Socket\n");
        }
        fflush(stdout);
    }
    *comm = (void *)1;
    return 0;
}

__attribute__((visibility("default"))) int ncclCommDestroy(void *comm)
{
    (void)comm;
    return 0;
}
