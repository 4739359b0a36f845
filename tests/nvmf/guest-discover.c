/*
 * guest-discover.c — runs inside the test guest (tests/nvmf/guest_test.py
 * builds it static): reads the discovery log page through the kernel's
 * NVMe admin passthrough on a discovery controller, /dev/nvmeN, and prints
 * one line per entry.  The guest has no nvme-cli; this is the few lines of
 * it the test needs.
 */
#include <fcntl.h>
#include <linux/nvme_ioctl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

static int get_log(int fd, void *buf, uint32_t len)
{
    struct nvme_admin_cmd c;
    memset(&c, 0, sizeof(c));
    c.opcode = 0x02;
    c.addr = (uint64_t)(uintptr_t)buf;
    c.data_len = len;
    c.cdw10 = 0x70 | (((len / 4) - 1) << 16);
    return ioctl(fd, NVME_IOCTL_ADMIN_CMD, &c);
}

static void field(const uint8_t *p, size_t n, char *out)
{
    memcpy(out, p, n);
    out[n] = 0;
    for (size_t i = n; i > 0 && (out[i - 1] == ' ' || out[i - 1] == 0); i--)
        out[i - 1] = 0;
}

int main(int argc, char **argv)
{
    static uint8_t buf[1024 * 64];
    uint64_t n;
    int fd, rc;

    if (argc != 2) {
        fprintf(stderr, "usage: guest-discover /dev/nvmeN\n");
        return 2;
    }
    fd = open(argv[1], O_RDWR);
    if (fd < 0) {
        perror(argv[1]);
        return 1;
    }
    rc = get_log(fd, buf, 1024);
    if (rc) {
        fprintf(stderr, "discovery log header: status %d\n", rc);
        return 1;
    }
    memcpy(&n, buf + 8, 8);
    if (n > 63)
        n = 63;
    rc = get_log(fd, buf, (uint32_t)(1024 * (n + 1)));
    if (rc) {
        fprintf(stderr, "discovery log: status %d\n", rc);
        return 1;
    }
    printf("discovery: %llu record(s)\n", (unsigned long long)n);
    for (uint64_t i = 0; i < n; i++) {
        const uint8_t *e = buf + 1024 * (i + 1);
        char svc[33], nqn[257], addr[257];
        field(e + 32, 32, svc);
        field(e + 256, 256, nqn);
        field(e + 512, 256, addr);
        printf("entry %llu: trtype=%u subtype=%u traddr=%s trsvcid=%s "
               "subnqn=%s\n", (unsigned long long)i, e[0], e[2], addr, svc,
               nqn);
    }
    close(fd);
    return 0;
}
