/* CUDA C++, for nvcc only. Hopper (sm_90a) building blocks of cuda_gemm_wgmma.h:
 * mbarriers, the tensor copy engine (TMA), wgmma shared-memory descriptors and the
 * warpgroup MMAs themselves. Everything here compiles to nothing unless the target
 * is sm_90a (__CUDA_ARCH_FEAT_SM90_ALL): for sm_80 or plain sm_90 the header is inert. */
#ifndef CUVIL_AOT_CUDA_WGMMA_OPS_H
#define CUVIL_AOT_CUDA_WGMMA_OPS_H

#include <stdint.h>
#include "cuvil_aot/cuda_kernel.h"

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define CV_WGMMA_OK 1

CV_DEV uint32_t cv_smem_u32(const void *p) { return (uint32_t)__cvta_generic_to_shared(p); }

/* mbarrier: init (one thread), arrive, arrive announcing `tx` bytes the copy engine
 * will deliver, and wait for the phase of parity `par` to complete. A fresh barrier
 * is in phase 0: waiting for parity 1 returns at once (the "previous" phase). */
CV_DEV void cv_mbar_init(uint64_t *b, uint32_t count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(cv_smem_u32(b)), "r"(count));
}
CV_DEV void cv_mbar_init_fence() { asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory"); }
CV_DEV void cv_mbar_arrive(uint64_t *b) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(cv_smem_u32(b)) : "memory");
}
CV_DEV void cv_mbar_arrive_tx(uint64_t *b, uint32_t tx) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(cv_smem_u32(b)),
                 "r"(tx)
                 : "memory");
}
/* With CV_WG_WAIT_TRAP_CYCLES defined (probes), a wait longer than that many clock
 * cycles traps (a launch error) instead of hanging: a lost TMA completion, say. */
CV_DEV void cv_mbar_wait(uint64_t *b, uint32_t par) {
    const uint32_t a = cv_smem_u32(b);
    uint32_t done;
#if defined(CV_WG_WAIT_TRAP_CYCLES)
    const long long t0 = clock64();
#endif
    do {
        asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
                     "selp.u32 %0, 1, 0, p;\n}\n"
                     : "=r"(done)
                     : "r"(a), "r"(par)
                     : "memory");
#if defined(CV_WG_WAIT_TRAP_CYCLES)
        if (!done && clock64() - t0 > (long long)(CV_WG_WAIT_TRAP_CYCLES)) __trap();
#endif
    } while (!done);
}

/* One 2-D box of a tensor map (x: the inner, contiguous coordinate, in elements;
 * y: the row) into shared memory at `dst`, completing `tx` bytes on barrier `b`.
 * Out-of-bounds elements are written as zeros and still counted. */
CV_DEV void cv_tma_2d(void *dst, const void *map, int x, int y, uint64_t *b) {
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
        " [%0], [%1, {%2, %3}], [%4];\n" ::"r"(cv_smem_u32(dst)),
        "l"(reinterpret_cast<uint64_t>(map)), "r"(x), "r"(y), "r"(cv_smem_u32(b))
        : "memory");
}
/* The same from a 3-D map (z: the batch). */
CV_DEV void cv_tma_3d(void *dst, const void *map, int x, int y, int z, uint64_t *b) {
    asm volatile(
        "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
        " [%0], [%1, {%2, %3, %4}], [%5];\n" ::"r"(cv_smem_u32(dst)),
        "l"(reinterpret_cast<uint64_t>(map)), "r"(x), "r"(y), "r"(z), "r"(cv_smem_u32(b))
        : "memory");
}
CV_DEV void cv_tma_prefetch_map(const void *map) {
    asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<uint64_t>(map)) : "memory");
}

/* Generic-proxy shared-memory writes made visible to the async proxy (wgmma, TMA). */
CV_DEV void cv_fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }
/* Named barrier `id` (1..15; 0 is __syncthreads) over `n` threads (a multiple of 32). */
CV_DEV void cv_bar_sync(int id, int n) { asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(n) : "memory"); }

template <int N>
CV_DEV void cv_setmaxnreg_inc() { asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(N)); }
template <int N>
CV_DEV void cv_setmaxnreg_dec() { asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(N)); }

/* wgmma shared-memory matrix descriptor (PTX ISA "Matrix Descriptor Format"; CUTLASS
 * cute::GmmaDescriptor), for a K-major operand in the 128-byte swizzle:
 *   bits  0-13  start address >> 4
 *   bits 16-29  leading-dimension byte offset >> 4: unused for swizzled K-major, 1
 *   bits 32-45  stride-dimension byte offset >> 4: 1024 B from one 8-row group to the
 *               next (8 rows x 128 B), so 64
 *   bits 49-51  base offset: 0, every tile starts 1024-aligned
 *   bits 62-63  layout: 1 = 128-byte swizzle
 * Row r of a tile is the 128 bytes at r * 128; its 16-byte chunk c sits at chunk
 * c ^ (r % 8) (TMA's CU_TENSOR_MAP_SWIZZLE_128B writes exactly that, cute's
 * Swizzle<3,4,3>). A k-step of 32 bytes (8 tf32 or 16 bf16) within the 128-byte row
 * is start address + 32: the hardware applies the XOR to the full address, which is
 * why the tile base must be 1024-aligned. */
CV_DEV uint64_t cv_wg_desc(uint32_t smem_addr) {
    return (uint64_t)((smem_addr & 0x3FFFF) >> 4) | ((uint64_t)1 << 16) | ((uint64_t)64 << 32) |
           ((uint64_t)1 << 62);
}

CV_DEV void cv_wg_arrive() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
CV_DEV void cv_wg_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N>
CV_DEV void cv_wg_wait() { asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory"); }
/* Pins accumulators in place around wgmma: the compiler must not read or move them
 * across the asynchronous window (cute's warpgroup_fence_operand). */
template <int R>
CV_DEV void cv_wg_fence_regs(float (&d)[R]) {
#pragma unroll
    for (int i = 0; i < R; i++) asm volatile("" : "+f"(d[i])::"memory");
}

/* The accumulators as PTX operands (%0, %1, ...) and as asm constraints, 32 at a time:
 * spelled out once for every MMA below, which lists 64, 96 or 128 of them. */
#define CV_WG_NAMES_0 \
    "%0, %1, %2, %3, %4, %5, %6, %7, " \
    "%8, %9, %10, %11, %12, %13, %14, %15, " \
    "%16, %17, %18, %19, %20, %21, %22, %23, " \
    "%24, %25, %26, %27, %28, %29, %30, %31"
#define CV_WG_OUTS_0 \
    "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), \
    "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), \
    "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), \
    "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
#define CV_WG_NAMES_1 \
    "%32, %33, %34, %35, %36, %37, %38, %39, " \
    "%40, %41, %42, %43, %44, %45, %46, %47, " \
    "%48, %49, %50, %51, %52, %53, %54, %55, " \
    "%56, %57, %58, %59, %60, %61, %62, %63"
#define CV_WG_OUTS_1 \
    "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), \
    "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), \
    "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), \
    "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
#define CV_WG_NAMES_2 \
    "%64, %65, %66, %67, %68, %69, %70, %71, " \
    "%72, %73, %74, %75, %76, %77, %78, %79, " \
    "%80, %81, %82, %83, %84, %85, %86, %87, " \
    "%88, %89, %90, %91, %92, %93, %94, %95"
#define CV_WG_OUTS_2 \
    "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), \
    "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), \
    "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), \
    "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95])
#define CV_WG_NAMES_3 \
    "%96, %97, %98, %99, %100, %101, %102, %103, " \
    "%104, %105, %106, %107, %108, %109, %110, %111, " \
    "%112, %113, %114, %115, %116, %117, %118, %119, " \
    "%120, %121, %122, %123, %124, %125, %126, %127"
#define CV_WG_OUTS_3 \
    "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]), \
    "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]), \
    "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), \
    "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
#define CV_WG_NAMES64 CV_WG_NAMES_0 ", " CV_WG_NAMES_1
#define CV_WG_NAMES96 CV_WG_NAMES64 ", " CV_WG_NAMES_2
#define CV_WG_NAMES128 CV_WG_NAMES96 ", " CV_WG_NAMES_3
#define CV_WG_OUTS64 CV_WG_OUTS_0, CV_WG_OUTS_1
#define CV_WG_OUTS96 CV_WG_OUTS64, CV_WG_OUTS_2
#define CV_WG_OUTS128 CV_WG_OUTS96, CV_WG_OUTS_3

/* D[64 x N] (+)= A[64 x K] B[N x K]^T, both from shared memory through descriptors;
 * scale_d = 0 overwrites D. The accumulator of warp w (of the warpgroup), lane 4g + t:
 * d[i] is row 16w + g + 8 * ((i >> 1) & 1), column 8 * (i >> 2) + 2t + (i & 1).
 * Shapes m64nNk8 for tf32 (K-major only), m64nNk16 for bf16 (no transpose: K-major).
 * CV_WG_MMA defines one of R accumulators: `shape` the instruction's suffix, `pred` and
 * `descs` the operands after the accumulators, `tail` bf16's two transpose flags. */
#define CV_WG_MMA(name, R, shape, pred, descs, tail)                                             \
    CV_DEV void name(float (&d)[R], uint64_t da, uint64_t db, int scale_d) {                    \
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, " pred ", 0;\n"                          \
                     "wgmma.mma_async.sync.aligned." shape " {" CV_WG_NAMES##R "}, " descs   \
                     ", p, 1, 1" tail ";\n}\n"                                                 \
                     : CV_WG_OUTS##R                                                           \
                     : "l"(da), "l"(db), "r"(scale_d));                                        \
    }

CV_WG_MMA(cv_wg_mma_tf32_n128, 64, "m64n128k8.f32.tf32.tf32", "%66", "%64, %65", "")
CV_WG_MMA(cv_wg_mma_tf32_n256, 128, "m64n256k8.f32.tf32.tf32", "%130", "%128, %129", "")
CV_WG_MMA(cv_wg_mma_bf16_n128, 64, "m64n128k16.f32.bf16.bf16", "%66", "%64, %65", ", 0, 0")
CV_WG_MMA(cv_wg_mma_bf16_n192, 96, "m64n192k16.f32.bf16.bf16", "%98", "%96, %97", ", 0, 0")
CV_WG_MMA(cv_wg_mma_bf16_n256, 128, "m64n256k16.f32.bf16.bf16", "%130", "%128, %129", ", 0, 0")

#endif /* __CUDA_ARCH_FEAT_SM90_ALL */
#endif
