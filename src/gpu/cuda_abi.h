/*
 * cuda_abi.h — the few types, values and entry points of the CUDA driver
 * API that src/gpu calls, declared from NVIDIA's public documentation so
 * that nothing needs the CUDA toolkit to build.  The functions are looked
 * up with dlsym() in libcuda.so.1 at run time (gpu.c); the names with
 * _v2 are the symbols the driver exports for the current ABI of those
 * calls.  Private to src/gpu (and the libcuda double in tests/gpu).
 */
#ifndef OC_GPU_CUDA_ABI_H
#define OC_GPU_CUDA_ABI_H

#include <stddef.h>

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st *CUcontext;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;

enum {
    CUDA_SUCCESS = 0,
    CUDA_ERROR_INVALID_VALUE = 1,
    CUDA_ERROR_OUT_OF_MEMORY = 2,
    CUDA_ERROR_NOT_INITIALIZED = 3,
    CUDA_ERROR_NO_DEVICE = 100,
    CUDA_ERROR_INVALID_DEVICE = 101,
    CUDA_ERROR_INVALID_CONTEXT = 201,
    CUDA_ERROR_INVALID_HANDLE = 400,
    CUDA_ERROR_NOT_READY = 600,
    CUDA_ERROR_ILLEGAL_ADDRESS = 700,
};

/* CUpointer_attribute */
enum {
    CU_POINTER_ATTRIBUTE_CONTEXT = 1,
    CU_POINTER_ATTRIBUTE_MEMORY_TYPE = 2,
    CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL = 9,
};

/* CUmemorytype */
enum {
    CU_MEMORYTYPE_HOST = 1,
    CU_MEMORYTYPE_DEVICE = 2,
    CU_MEMORYTYPE_ARRAY = 3,
    CU_MEMORYTYPE_UNIFIED = 4,
};

#define CU_MEMHOSTALLOC_PORTABLE 0x01
#define CU_STREAM_DEFAULT        0x00
#define CU_STREAM_NON_BLOCKING   0x01
#define CU_EVENT_DISABLE_TIMING  0x02

/* The entry points, as X(return-less name, symbol, parameter list):
 * one list for the declarations here, the loader in gpu.c and the
 * double in tests/gpu. */
#define OC__CUDA_CALLS(X)                                                      \
    X(cuInit, "cuInit", (unsigned int flags))                                  \
    X(cuDriverGetVersion, "cuDriverGetVersion", (int *version))                \
    X(cuDeviceGetCount, "cuDeviceGetCount", (int *count))                      \
    X(cuDeviceGet, "cuDeviceGet", (CUdevice *dev, int ordinal))                \
    X(cuGetErrorString, "cuGetErrorString", (CUresult err, const char **s))    \
    X(cuPointerGetAttribute, "cuPointerGetAttribute",                          \
      (void *data, int attribute, CUdeviceptr ptr))                            \
    X(cuCtxPushCurrent, "cuCtxPushCurrent_v2", (CUcontext ctx))                \
    X(cuCtxPopCurrent, "cuCtxPopCurrent_v2", (CUcontext *ctx))                 \
    X(cuCtxGetDevice, "cuCtxGetDevice", (CUdevice *dev))                       \
    X(cuStreamCreate, "cuStreamCreate", (CUstream *s, unsigned int flags))     \
    X(cuStreamDestroy, "cuStreamDestroy_v2", (CUstream s))                     \
    X(cuStreamQuery, "cuStreamQuery", (CUstream s))                            \
    X(cuStreamSynchronize, "cuStreamSynchronize", (CUstream s))                \
    X(cuEventCreate, "cuEventCreate", (CUevent *e, unsigned int flags))        \
    X(cuEventDestroy, "cuEventDestroy_v2", (CUevent e))                        \
    X(cuEventRecord, "cuEventRecord", (CUevent e, CUstream s))                 \
    X(cuEventQuery, "cuEventQuery", (CUevent e))                               \
    X(cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2",                               \
      (void *dst, CUdeviceptr src, size_t n, CUstream s))                      \
    X(cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2",                               \
      (CUdeviceptr dst, const void *src, size_t n, CUstream s))                \
    X(cuMemHostAlloc, "cuMemHostAlloc",                                        \
      (void **p, size_t n, unsigned int flags))                                \
    X(cuMemFreeHost, "cuMemFreeHost", (void *p))

#endif
