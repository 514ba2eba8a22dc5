/* CUDA C++, for nvcc only. Sorts of one row by a block, for the GPU SCAN kernels of
 * np.sort / np.argsort (compiler/codegen/cuda_scan.py).
 *
 * Keys are ordered as NumPy orders them (NaNs last) and ties broken by position, so the
 * order is a strict total one and any sorting network gives np.argsort(kind="stable")'s
 * permutation. Rows of up to CV_SORT_SHARED keys sort in shared memory (a bitonic network
 * of any length: its missing tail counts as larger than every key, so no pair reaching it
 * swaps); a longer row ranks each key by counting the keys before it. */
#ifndef CUVIL_AOT_CUDA_ROWSORT_H
#define CUVIL_AOT_CUDA_ROWSORT_H

#include "cuvil_aot/cuda_kernel.h"

#define CV_SORT_SHARED 2048 /* keys of a row sorted in shared memory */
#define CV_SORT_BLOCK 256   /* threads of a block per row */

/* (a at position i) before (b at position j): a NaN is after every number */
template <class K, class I>
CV_DEV bool cv_sort_before(K a, I i, K b, I j) {
    const bool an = !(a == a), bn = !(b == b);
    if (an || bn) return an == bn ? i < j : bn;
    return a < b || (a == b && i < j);
}

template <class K>
CV_DEV void cv_sort_pair(K *key, int32_t *pos, int i, int j, int n) {
    if (j < n && cv_sort_before(key[j], pos[j], key[i], pos[i])) {
        const K k = key[i];
        const int32_t p = pos[i];
        key[i] = key[j];
        pos[i] = pos[j];
        key[j] = k;
        pos[j] = p;
    }
}

/* key[0..n) and their positions pos[0..n), in shared memory, sorted by the whole block
 * (every thread calls it; n <= CV_SORT_SHARED). Ends with a barrier. */
template <class K>
CV_DEV void cv_block_sort(K *key, int32_t *pos, int n) {
    int p2 = 1;
    while (p2 < n) p2 <<= 1;
    __syncthreads();
    for (int size = 2; size <= p2; size <<= 1) {
        const int half = size >> 1;
        for (int t = threadIdx.x; t < p2 / 2; t += blockDim.x) {  /* merge: flip */
            const int base = t / half * size, off = t % half;
            cv_sort_pair(key, pos, base + off, base + size - 1 - off, n);
        }
        __syncthreads();
        for (int d = half >> 1; d > 0; d >>= 1) {  /* then half-cleaners */
            for (int t = threadIdx.x; t < p2 / 2; t += blockDim.x) {
                const int i = t / d * 2 * d + t % d;
                cv_sort_pair(key, pos, i, i + d, n);
            }
            __syncthreads();
        }
    }
}

#endif
