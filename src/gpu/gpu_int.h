/*
 * gpu_int.h — src/gpu's private state: the driver's entry points, looked
 * up once by gpu.c, called by stage.c.
 */
#ifndef OC_GPU_INT_H
#define OC_GPU_INT_H

#include "cuda_abi.h"
#include "gpu/gpu.h"

#define OC__CUDA_PTR(name, sym, args) CUresult (*name) args;
typedef struct {
    OC__CUDA_CALLS(OC__CUDA_PTR)
} oc__cuda_t;
#undef OC__CUDA_PTR

/** The entry points; NULL when oc__gpu_available() is 0. */
const oc__cuda_t *oc__cuda(void);

/** The driver's name for @p err ("CUDA_ERROR_ILLEGAL_ADDRESS: ..."). */
const char *oc__cuda_err(CUresult err);

#endif
