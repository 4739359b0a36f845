/*
 * offcore/mpi.h — bootstrap a liboffcore context from an MPI communicator.
 *
 * Header-only so that liboffcore itself does not link MPI: MPI is used only
 * for the address exchange in oc_init() and the synchronisation in
 * oc_finalize(), never on the data path.  The communicator must stay valid
 * until oc_finalize() returns (call oc_finalize before MPI_Finalize).
 */
#ifndef OFFCORE_MPI_H
#define OFFCORE_MPI_H

#include <mpi.h>
#include <offcore/offcore.h>

static inline oc_status_t oc__mpi_allgather(void *arg, const void *sendbuf,
                                            void *recvbuf, size_t len)
{
    MPI_Comm comm = *(MPI_Comm *)arg;
    if (len > (size_t)0x7fffffff)
        return OC_ERR_INVALID_PARAM;
    return MPI_Allgather(sendbuf, (int)len, MPI_BYTE, recvbuf, (int)len,
                         MPI_BYTE, comm) == MPI_SUCCESS ? OC_OK
                                                        : OC_ERR_BOOTSTRAP;
}

/**
 * Like oc_init(), with rank, size and the bootstrap all-gather taken from
 * @p comm (which must outlive the context; *comm_p is read at each use).
 * Fields of @p params other than those three are honoured as in oc_init().
 */
static inline oc_status_t oc_init_mpi(MPI_Comm *comm_p,
                                      const oc_context_params_t *params,
                                      oc_context_t **ctx_p)
{
    oc_context_params_t p = *params;
    int rank, size;
    if (MPI_Comm_rank(*comm_p, &rank) != MPI_SUCCESS ||
        MPI_Comm_size(*comm_p, &size) != MPI_SUCCESS)
        return OC_ERR_BOOTSTRAP;
    p.field_mask |= OC_PARAM_RANK | OC_PARAM_SIZE | OC_PARAM_ALLGATHER;
    p.rank = (uint32_t)rank;
    p.size = (uint32_t)size;
    p.allgather = oc__mpi_allgather;
    p.allgather_arg = comm_p;
    return oc_init(&p, ctx_p);
}

#endif /* OFFCORE_MPI_H */
