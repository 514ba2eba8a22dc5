/* Declarations shared by the runtime's GPU translation units (include Python.h
 * first): the driver layer (cuda.c) and the array adapters (gpu_arrays.c). */
#ifndef CUVIL_AOT_GPU_INTERNAL_H
#define CUVIL_AOT_GPU_INTERNAL_H

#include "cuvil_aot/cuda_driver.h"

/* The table behind cv_runtime_api.gpu. */
extern const cv_gpu_api cv_gpu_api_table;

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
 * 1 when the driver or device has no memory pools, -1 on error. */
int cv_cuda_scratch(int device, size_t bytes, uintptr_t stream, void **out);
/* Returns scratch memory to the pool once `stream` reaches this point. */
void cv_cuda_scratch_free(int device, void *p, size_t bytes, uintptr_t stream);
/* Raises cuvil_aot.CudaError with a formatted message; returns -1. */
int cv_cuda_raise(const char *fmt, ...);
/* A function of cuvil_aot.runtime.gpu_adapters (new reference), imported once. */
PyObject *cv_gpu_adapter(const char *name);

#endif
