/* Declarations shared by the runtime's GPU translation units (include Python.h
 * first): the array adapters (gpu_arrays.c) on top of the driver layer (cuda.c,
 * cuda_internal.h). gpu_arrays.c depends on cuda.c, never the reverse. */
#ifndef CUVIL_AOT_GPU_INTERNAL_H
#define CUVIL_AOT_GPU_INTERNAL_H

#include "cuda_internal.h"

/* The table behind cv_runtime_api.gpu (gpu_arrays.c). */
extern const cv_gpu_api cv_gpu_api_table;

#endif
