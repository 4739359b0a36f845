/*
 * mcproxy_mpi.c — the same Monte-Carlo transport proxy over plain MPI
 * (binary `mcproxy-mpi`), written the way such codes are written without a
 * messaging library: track every local particle; those crossing into
 * another rank's slab are packed per destination; exchange them in rounds
 * (MPI_Alltoall of counts, MPI_Alltoallv of 72-byte particles) until no
 * rank has any left.  The physics and the verification are the offcore
 * version's (mc_common.c), so the histories, tallies and checks are
 * identical.
 */
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "app_mpi.h"
#include "mc_common.h"

int main(int argc, char **argv)
{
    static const char prog[] = "mcproxy-mpi";
    mc_opts_t o;
    mc_parse(&o, argc, argv, prog, false);

    oc_app_mpi_t m;
    oc_app_mpi_init(&m, prog, &argc, &argv);
    const uint32_t P = (uint32_t)m.size, me = (uint32_t)m.rank;
    mc_t s;
    int rc = mc_setup(&m, &o, prog, &s);
    if (rc != 0)
        return rc;

    /* outgoing particles, packed per destination in one array */
    size_t capo = 1024, nout = 0, capr = 0;
    mc_particle_t *out = malloc(capo * sizeof *out), *sendbuf = NULL,
                  *recvbuf = NULL;
    uint32_t *dest = malloc(capo * sizeof *dest);
    int *scount = calloc(P, sizeof(int)), *sdispl = calloc(P, sizeof(int));
    int *rcount = calloc(P, sizeof(int)), *rdispl = calloc(P, sizeof(int));
    size_t caps = capo;
    sendbuf = malloc(caps * sizeof *sendbuf);
    if (out == NULL || dest == NULL || scount == NULL || sdispl == NULL ||
        rcount == NULL || rdispl == NULL || sendbuf == NULL)
        oc_app_mpi_die(&m, "cannot allocate the exchange buffers");
    MPI_Datatype pt;
    MPI_Type_contiguous((int)sizeof(mc_particle_t), MPI_BYTE, &pt);
    MPI_Type_commit(&pt);

    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = oc_app_now();
    uint64_t rounds = 0;
    for (uint64_t cy = 0; cy < o.cycles; cy++) {
        for (uint64_t i = 0; i < o.particles; i++) {
            mc_particle_t p;
            mc_source(&o, (cy * P + me) * o.particles + i, s.x0, s.x1, &p);
            if (mc_push(&s, &p, 1) != 0)
                oc_app_mpi_die(&m, "cannot queue the source particles");
        }
        for (;;) {
            /* track everything local; keep the ones that cross */
            nout = 0;
            while (s.nq > 0) {
                mc_particle_t p = s.q[--s.nq];
                if (mc_track(&o, s.xs, s.x0, s.x1, &p, &s.t) != MC_CROSSED)
                    continue;
                s.t.crossings++;
                if (nout == capo) {
                    capo *= 2;
                    out = realloc(out, capo * sizeof *out);
                    dest = realloc(dest, capo * sizeof *dest);
                    if (out == NULL || dest == NULL)
                        oc_app_mpi_die(&m, "cannot grow the outgoing particles");
                }
                dest[nout] = s.owner_of_x[p.cell[0]];
                out[nout++] = p;
            }
            /* bucket by destination, exchange */
            if (nout > INT_MAX)
                oc_app_mpi_die(&m, "%zu particles to send exceed MPI's int counts", nout);
            memset(scount, 0, P * sizeof(int));
            for (size_t k = 0; k < nout; k++)
                scount[dest[k]]++;
            int pos = 0;
            for (uint32_t d = 0; d < P; d++) {
                sdispl[d] = pos;
                pos += scount[d];
            }
            if (nout > caps) {
                caps = capo;
                sendbuf = realloc(sendbuf, caps * sizeof *sendbuf);
                if (sendbuf == NULL)
                    oc_app_mpi_die(&m, "cannot grow the send buffer");
            }
            for (size_t k = 0; k < nout; k++)
                sendbuf[sdispl[dest[k]]++] = out[k];
            for (uint32_t d = 0; d < P; d++)
                sdispl[d] -= scount[d];
            MPI_Alltoall(scount, 1, MPI_INT, rcount, 1, MPI_INT, MPI_COMM_WORLD);
            size_t total = 0;
            for (uint32_t d = 0; d < P; d++) {
                if (total > INT_MAX)
                    oc_app_mpi_die(&m, "more than %d particles to receive", INT_MAX);
                rdispl[d] = (int)total;
                total += (size_t)rcount[d];
            }
            if (total > capr) {
                capr = total;
                recvbuf = realloc(recvbuf, capr * sizeof *recvbuf);
                if (recvbuf == NULL)
                    oc_app_mpi_die(&m, "cannot grow the receive buffer");
            }
            MPI_Alltoallv(sendbuf, scount, sdispl, pt, recvbuf, rcount, rdispl,
                          pt, MPI_COMM_WORLD);
            rounds++;
            if (total > 0 && mc_push(&s, recvbuf, total) != 0)
                oc_app_mpi_die(&m, "cannot queue the received particles");
            s.handled += total;
            if (oc_app_mpi_sum(total) == 0)
                break;
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    double seconds = oc_app_now() - t0;
    uint64_t segs = oc_app_mpi_sum(s.t.segments);
    uint64_t cross = oc_app_mpi_sum(s.t.crossings);

    oc_app_json_t j;
    if (m.rank == 0) {
        oc_app_json_begin(&j);
        oc_app_json_str(&j, "app", "mcproxy");
        oc_app_json_str(&j, "placement", "mpi");
        oc_app_json_u64(&j, "ranks", P);
        oc_app_json_u64(&j, "nx", o.nx);
        oc_app_json_u64(&j, "ny", o.ny);
        oc_app_json_u64(&j, "nz", o.nz);
        oc_app_json_u64(&j, "groups", o.groups);
        oc_app_json_u64(&j, "particles_per_rank_cycle", o.particles);
        oc_app_json_u64(&j, "cycles", o.cycles);
        oc_app_json_u64(&j, "segments", segs);
        oc_app_json_u64(&j, "crossings", cross);
        oc_app_json_u64(&j, "rounds", rounds);
        oc_app_json_dbl(&j, "seconds", seconds);
        oc_app_json_dbl(&j, "rate", seconds > 0 ? (double)segs / seconds : 0);
        oc_app_json_str(&j, "rate_unit", "segments/s");
    }
    const char *how;
    bool verified = mc_verify(&m, &o, &s, &how);
    if (m.rank == 0) {
        oc_app_json_str(&j, "verify", how);
        oc_app_json_bool(&j, "verified", verified);
        oc_app_json_print(&j);
    }
    MPI_Type_free(&pt);
    free(out);
    free(dest);
    free(sendbuf);
    free(recvbuf);
    free(scount);
    free(sdispl);
    free(rcount);
    free(rdispl);
    mc_free(&s);
    return oc_app_mpi_finish(verified);
}
