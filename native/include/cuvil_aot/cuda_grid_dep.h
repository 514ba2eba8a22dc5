/* Programmatic dependent launch (sm_90 and later). In a call's CUDA graph a kernel may be
 * linked to the kernels it depends on by programmatic edges (gpu_graph.c, CUVIL_AOT_CUDA_PDL):
 * it is then launched as soon as every block of each of them has started, and its blocks
 * wait in cv_grid_wait, the first thing every kernel does, until those kernels have
 * completed and their writes are visible. The launch's latency hides behind their tails.
 * Launched any other way (plainly, in a capture, on an older GPU) both calls return at once. */
#pragma once
#ifdef __CUDACC__

static __device__ __forceinline__ void cv_grid_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
    asm volatile("griddepcontrol.launch_dependents;");
#endif
}

#endif
