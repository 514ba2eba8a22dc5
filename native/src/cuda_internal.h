/* The driver layer's interface (cuda.c): the CUDA driver, contexts, modules,
 * launches, scratch memory, and the settings it runs with.
 *
 * Dependencies go one way: gpu_arrays.c (the array adapters, gpu_internal.h)
 * and runtime_module.c use cuda.c; cuda.c uses nothing of theirs and includes
 * only this header. Include Python.h first. */
#ifndef CUVIL_AOT_CUDA_INTERNAL_H
#define CUVIL_AOT_CUDA_INTERNAL_H

#include "cuvil_aot/cuda_driver.h"

/* Set by cuvil_aot.runtime.native.configure (from the knobs, cuvil_aot/knobs.py); read at
 * each use, under the GIL. Defaults: one-kernel launches and the pool on, not strict,
 * CUDA graphs for calls of CV_GRAPH_MIN_DEFAULT launches or more. */
#define CV_GRAPH_MIN_DEFAULT 4 /* knobs.Knobs.cuda_graph says the same */
typedef struct {
    int one_kernel; /* CUVIL_AOT_CUDA_ONE=0 clears it: kernels launched one by one */
    int pool;       /* CUVIL_AOT_CUDA_POOL=0 clears it: intermediates from the framework */
    int strict;     /* CUVIL_AOT_MODE=strict: a PTX JIT at module load is an error */
    int graph_min;  /* CUVIL_AOT_CUDA_GRAPH: launches a call needs for a graph; 0: none */
    int wgmma;      /* CUVIL_AOT_CUDA_WGMMA=0 clears it: no GEMM on the wgmma main loop */
    int wgmma_copy; /* CUVIL_AOT_CUDA_WGMMA_TRANSPOSE=0 clears it: none over K-major copies */
    int wg_tail;    /* CUVIL_AOT_CUDA_WG_TAIL=1 sets it: wgmma may split its tail's k only */
    int wg_nmajor;  /* CUVIL_AOT_CUDA_WG_NMAJOR=1 sets it: 3xTF32 wgmma reads N-major B */
    int tc_cluster; /* CUVIL_AOT_CUDA_TC_CLUSTER (default 1): split-K in clusters (sm_90) */
    int attention;  /* CUVIL_AOT_CUDA_ATTENTION=0 clears it: attentions as three kernels */
    int attention_split; /* CUVIL_AOT_CUDA_ATTENTION_SPLIT (default 1): the _s entries */
    int attention_grouped; /* CUVIL_AOT_CUDA_ATTENTION_GROUPED (default 1): grouped-query */
} cv_cuda_settings;
extern cv_cuda_settings cv_cuda_config;

/* Loads the driver and makes the device's primary context current. */
int cv_cuda_enter(int device);
/* The device that holds a device pointer. */
int cv_cuda_device_of(uintptr_t ptr, int *device);
/* The device of the current context, or 0 when there is none. */
int cv_cuda_current_device(int *device);
/* Makes `consumer` wait for the work queued so far on `producer`. */
int cv_cuda_order(int device, uintptr_t producer, uintptr_t consumer);
int cv_cuda_sm_count(int device);
int cv_cuda_launch(cv_cuda_module *m, int device, int kernel, uint32_t grid_x, uint32_t grid_y,
                   uint32_t block, uint32_t smem, uintptr_t stream, void *args);
int cv_cuda_launch_one(cv_cuda_module *m, int device, int kernel, uint32_t grid, uint32_t block,
                       uintptr_t stream, void *args, int cooperative);
int cv_cuda_save_context(void **out);
void cv_cuda_restore_context(void *ctx);
/* Device memory ordered on `stream` from the runtime's pool: 0 and *out set,
 * 1 when the pool is off or the driver or device has no memory pools, -1 on error. */
int cv_cuda_scratch(int device, size_t bytes, uintptr_t stream, void **out);
/* Returns scratch memory to the pool once `stream` reaches this point. */
void cv_cuda_scratch_free(int device, void *p, size_t bytes, uintptr_t stream);
/* Zeroes `bytes` of device memory at p, ordered on `stream`; 0, or -1 on error. */
int cv_cuda_zero(int device, void *p, size_t bytes, uintptr_t stream);
/* Copies `bytes` of device memory at src to dst once `stream` reaches this point, and
 * waits for it (and so for all work queued on `stream` before); 0, or -1 on error. */
int cv_cuda_read(int device, void *dst, const void *src, size_t bytes, uintptr_t stream);
/* Raises cuvil_aot.CudaError with a formatted message; returns -1. */
int cv_cuda_raise(const char *fmt, ...);

/* For gpu_graph.c, the driver's other entry points: a symbol of libcuda once it is loaded
 * (NULL before, or where the driver lacks it); a driver result checked as every call's (0,
 * or -1 with CudaError raised, the context marked lost where the error is sticky); whether
 * an error is sticky; kernel `kernel` of m on `device` (its CUfunction, the module loaded
 * there on first use, the device's context made current, its dynamic shared memory limit
 * raised to `smem` where that is over 48 KB), NULL with an error raised. */
void *cv_cuda_symbol(const char *name);
int cv_cuda_check(int r, const char *call, const char *kernel);
int cv_cuda_sticky(int r);
void *cv_cuda_function(cv_cuda_module *m, int device, int kernel, uint32_t smem);
/* The Hopper GEMM's needs (cv_gpu_api.wgmma, .tensor_map; see cuda_driver.h). */
int cv_cuda_wgmma(const cv_cuda_module *m, int device);
/* What a device the runtime used has loaded (cuvil_aot.info()): image[i] is the SASS (cc * 10)
 * or, negative, the PTX (JIT-compiled) that modules[i] modules loaded there. */
#define CV_IMAGE_KINDS 4
typedef struct {
    int cc, sm_count, nimages;
    int image[CV_IMAGE_KINDS], modules[CV_IMAGE_KINDS];
} cv_cuda_device_info;
/* 1 and *out filled for a device the runtime has opened, else 0 (no driver call). */
int cv_cuda_device_seen(int device, cv_cuda_device_info *out);
int cv_cuda_attention(void);
int cv_cuda_tensor_map(void *map, int dtype, int rank, const void *base, const uint64_t *dims,
                       const uint64_t *strides, const uint32_t *box, int swizzle);

/* A call's launches in order, as a replayed CUDA graph where that pays (gpu_graph.c,
 * cv_gpu_api.launch_list); and the graph path's counters: calls that replayed a graph,
 * graphs instantiated, kernel nodes whose arguments were updated, calls launched one by
 * one (too few launches, the knob off, a structure seen once, a failed build), and calls
 * on a stream being captured (launched one by one, into the caller's capture). */
int cv_gpu_launch_list(const cv_gpu_launch *q, int n, int device, uintptr_t stream,
                       void **graphs);
enum { CV_GRAPH_REPLAYS, CV_GRAPH_BUILDS, CV_GRAPH_UPDATES, CV_GRAPH_PLAIN, CV_GRAPH_CAPTURING,
       CV_GRAPH_NSTATS };
void cv_gpu_graph_stats(unsigned long long out[CV_GRAPH_NSTATS]);

#endif
