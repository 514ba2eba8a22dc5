/* The bfloat16 GEMM's micro-kernel contract, shared by its driver (gemm_bf16.c) and its
 * kernels (gemm_bf16_amx.c, gemm_bf16_avx512.c).
 *
 * Panels hold k in pairs, each pair one 32-bit word (the even k in the low half), as
 * vdpbf16ps and tdpbf16ps read them. A kernel names its A panel's geometry: mr rows, k
 * in groups of ku pairs, word (q, i) at (q / ku * mr + i) * ku + q % ku (ku = 1: q-major,
 * one word per row for a broadcast; ku = 16: each row's 32 bfloat16 of a group
 * contiguous, an AMX tile row). Word (q, j) of a B panel sits at q * CV_BF16_NR + j, for
 * every kernel. Rows, columns and pairs past the matrix are zero, the last pair's odd
 * half too, and the panels' pairs are padded with zeros to a multiple of ku.
 *
 * kern: c[i * ldc + j] (+)= sum over q < kq, s < 2 of a(q, i)[s] * b(q, j)[s] for
 * i < mr, j < CV_BF16_NR, in float32 (products of bfloat16 are exact there); kq is a
 * multiple of ku; accumulate = 0 stores the sums, 1 adds them to c. */
#ifndef CUVIL_AOT_GEMM_BF16_H
#define CUVIL_AOT_GEMM_BF16_H

#include <stdint.h>

#define CV_BF16_NR 32 /* columns of a B panel: two 16-float vectors, two AMX tiles */

typedef void (*cv_bf16_kern)(int64_t kq, const uint32_t *a, const uint32_t *b, float *c,
                             int64_t ldc, int accumulate);

/* Packers in the kernel's ISA for the common case, where it has them (else NULL).
 * pack_a: pairs [0, kq) of mr rows of A, each a contiguous run of 2 * kq bfloat16 at
 * a + i * rs, into the first words of a panel; returns how many pairs it packed (a
 * prefix; the caller packs the rest). pack_b: pairs [0, kq) of a B panel from CV_BF16_NR
 * contiguous columns, rows 2q and 2q + 1 at b + 2q * rs and b + (2q + 1) * rs. */
typedef int64_t (*cv_bf16_pack_a)(const uint16_t *a, int64_t rs, int64_t kq, uint32_t *panel);
typedef void (*cv_bf16_pack_b)(const uint16_t *b, int64_t rs, int64_t kq, uint32_t *panel);

/* A micro-kernel and what the driver must know of it. */
typedef struct {
    const char *name;
    cv_bf16_kern kern;
    int mr, ku;          /* the A panel's geometry (above) */
    int (*usable)(void); /* the CPU and the OS let it run (checked once); level 4 aside */
    void (*begin)(void); /* per thread, around a run of kernel calls; NULL: nothing */
    void (*end)(void);
    cv_bf16_pack_a pack_a;
    cv_bf16_pack_b pack_b;
} cv_bf16_kernel;

/* AMX-BF16 (gemm_bf16_amx.c) and AVX-512 BF16 (gemm_bf16_avx512.c). */
extern const cv_bf16_kernel cv_bf16_amx, cv_bf16_avx512;

/* The AVX-512 B packer (gemm_bf16_avx512.c), which the AMX kernel shares; defined on
 * x86-64 with GCC or Clang only, where both kernels are. */
void cv_bf16_pack_b_avx512(const uint16_t *b, int64_t rs, int64_t kq, uint32_t *panel);

#endif
