// The int8 GEMV streamed by the copy engine (sm_90: cp.async.bulk into shared memory,
// completion counted on an mbarrier), for q8_probe.cu. A persistent grid, each block a run
// of consecutive groups of R rows (the grid sized so every block has the same count): one
// thread keeps S stages of R x KC bytes in flight, the whole block sums each landed stage
// (a thread a 16-byte chunk of every row, x read once for the R rows), then a block
// reduction ends each group. Few instructions per byte and many bytes in flight from the
// first cycle: what the register-load kernels lack (their fixed ~3 us a launch).
#pragma once
#include <cstdint>

namespace bulk {

__device__ __forceinline__ uint32_t smem(const void *p) { return (uint32_t)__cvta_generic_to_shared(p); }

__device__ __forceinline__ void init(uint64_t *b) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(smem(b)));
}

__device__ __forceinline__ void expect(uint64_t *b, uint32_t bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem(b)), "r"(bytes)
                 : "memory");
}

__device__ __forceinline__ void wait(uint64_t *b, uint32_t parity) {
    uint32_t done;
    do {
        asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
                     "selp.u32 %0, 1, 0, p;\n}" : "=r"(done) : "r"(smem(b)), "r"(parity) : "memory");
    } while (!done);
}

// bytes (a multiple of 16) from global src to shared dst (both 16-byte aligned), on b.
__device__ __forceinline__ void copy(void *dst, const void *src, uint32_t bytes, uint64_t *b) {
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                 ::"r"(smem(dst)), "l"(src), "r"(bytes), "r"(smem(b)) : "memory");
}

__device__ __forceinline__ void bytes4(int word, float q[4]) {
    const unsigned u = (unsigned)word ^ 0x80808080u;
#pragma unroll
    for (int e = 0; e < 4; e++) q[e] = __int_as_float((int)__byte_perm(u, 0x4B000000u, 0x7540u | e)) - 8388736.f;
}

// y[o] = s[o] * sum_p q[o, p] x[p] for the groups [per * blockIdx.x, + per) of R rows;
// k % 16 == 0, rows 16-byte aligned. Dynamic shared memory: S * R * KC bytes.
template <int BT, int R, int S, int KC>
__global__ void __launch_bounds__(BT) gemv(const float *x, const int8_t *q, const float *s, float *y,
                                           int n, int k, int per) {
    extern __shared__ __align__(128) unsigned char stage[];
    __shared__ uint64_t full[S];
    __shared__ float red[BT / 32][R];
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int groups = (n + R - 1) / R, g0 = blockIdx.x * per;
    const int g1 = min(g0 + per, groups), nkc = (k + KC - 1) / KC;
    const int items = (g1 - g0) * nkc;
    if (tid == 0) {
#pragma unroll
        for (int i = 0; i < S; i++) init(&full[i]);
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    auto issue = [&](int i) { /* thread 0: item i (group g0 + i / nkc, k chunk i % nkc) */
        const int g = g0 + i / nkc, kc = i % nkc, st = i % S;
        const int bytes = min(KC, k - kc * KC);
        expect(&full[st], (uint32_t)(bytes * R));
#pragma unroll
        for (int r = 0; r < R; r++) {
            const int row = min(g * R + r, n - 1);
            copy(stage + (st * R + r) * KC, q + (size_t)row * k + kc * KC, bytes, &full[st]);
        }
    };
    if (tid == 0)
        for (int i = 0; i < S && i < items; i++) issue(i);
    float acc[R];
#pragma unroll
    for (int r = 0; r < R; r++) acc[r] = 0.f;
    for (int i = 0; i < items; i++) {
        const int st = i % S, kc = i % nkc, g = g0 + i / nkc;
        const int chunks = min(KC, k - kc * KC) >> 4;
        wait(&full[st], (uint32_t)(i / S) & 1u);
        for (int c = tid; c < chunks; c += BT) {
            const float4 *xp = reinterpret_cast<const float4 *>(x + kc * KC + 16 * c);
            float4 xv[4];
#pragma unroll
            for (int e4 = 0; e4 < 4; e4++) xv[e4] = __ldg(xp + e4);
#pragma unroll
            for (int r = 0; r < R; r++) {
                const int4 raw = *reinterpret_cast<const int4 *>(stage + (st * R + r) * KC + 16 * c);
                const int words[4] = {raw.x, raw.y, raw.z, raw.w};
                float part = 0.f;
#pragma unroll
                for (int e4 = 0; e4 < 4; e4++) {
                    float qv[4];
                    bytes4(words[e4], qv);
                    part = fmaf(xv[e4].x, qv[0], part);
                    part = fmaf(xv[e4].y, qv[1], part);
                    part = fmaf(xv[e4].z, qv[2], part);
                    part = fmaf(xv[e4].w, qv[3], part);
                }
                acc[r] += part;
            }
        }
        __syncthreads(); /* stage st read by every thread: refill it */
        if (tid == 0 && i + S < items) issue(i + S);
        if (kc == nkc - 1) {
#pragma unroll
            for (int r = 0; r < R; r++) {
                float v = acc[r];
#pragma unroll
                for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
                if (lane == 0) red[warp][r] = v;
                acc[r] = 0.f;
            }
            __syncthreads();
            if (tid < R && g * R + tid < n) {
                float v = 0.f;
#pragma unroll
                for (int w = 0; w < BT / 32; w++) v += red[w][tid];
                y[g * R + tid] = v * __ldg(s + g * R + tid);
            }
            /* red is written again only after the next item's __syncthreads */
        }
    }
}

}  // namespace bulk
