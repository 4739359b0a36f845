/*
 * fuzz_nvmf_conf.c — libFuzzer target for offcore-nvmf's configuration
 * parser (src/nvmf/config.c: a config file crosses a trust boundary too).
 *
 * The input is the file's text, handed to oc__nvmf_conf_load() through a
 * memfd.  A file that loads must describe something the target can run:
 * at least one subsystem, each with a valid NQN (nqn., at most 223 bytes),
 * at least one namespace with distinct NSIDs in 1..1024, a block size of
 * 512 or 4096 dividing the size, and hosts either listed or all allowed;
 * and a rejected file must have printed at least one FILE:LINE: reason.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "nvmf/target.h"

#define CHECK(cond)                                                            \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "fuzz_nvmf_conf.c:%d: invariant broken: %s\n",     \
                    __LINE__, #cond);                                          \
            abort();                                                           \
        }                                                                      \
    } while (0)

unsigned long fuzz_nvmf_conf_accepted;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static oc_nvmf_conf_t c;
    char path[64], *err = NULL;
    size_t errlen = 0;
    FILE *ef;
    oc_status_t st;
    int fd = memfd_create("conf", 0);

    CHECK(fd >= 0);
    CHECK(write(fd, data, size) == (ssize_t)size);
    snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
    ef = open_memstream(&err, &errlen);
    CHECK(ef != NULL);
    st = oc__nvmf_conf_load(path, &c, ef);
    fclose(ef);
    close(fd);
    if (st == OC_OK) {
        fuzz_nvmf_conf_accepted++;
        CHECK(c.nsubsys >= 1 && c.nsubsys <= OC_NVMF_MAX_SUBSYS);
        for (int i = 0; i < c.nsubsys; i++) {
            oc_nvmf_subsys_conf_t *s = &c.subsys[i];
            CHECK(strncmp(s->nqn, "nqn.", 4) == 0);
            CHECK(strlen(s->nqn) <= OC_NVMF_NQN_MAX);
            CHECK(s->nns >= 1 && s->nns <= OC_NVMF_MAX_NS);
            CHECK(s->allow_any != (s->nhosts > 0));
            for (int j = 0; j < s->nns; j++) {
                oc_nvmf_ns_conf_t *n = &s->ns[j];
                CHECK(n->nsid >= 1 && n->nsid <= 1024);
                CHECK(n->block_size == 512 || n->block_size == 4096);
                CHECK(n->size % n->block_size == 0);
                CHECK(n->path[0] != 0);
                for (int k = 0; k < j; k++)
                    CHECK(s->ns[k].nsid != n->nsid);
            }
        }
    } else {
        CHECK(st == OC_ERR_CONFIG);
        CHECK(err != NULL && strstr(err, path) != NULL);
    }
    free(err);
    return 0;
}
