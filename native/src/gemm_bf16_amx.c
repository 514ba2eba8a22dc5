/* The bfloat16 GEMM's micro-kernel on AMX-BF16 (gemm_bf16.h): tdpbf16ps multiplies a
 * 16 x 32 bfloat16 tile of A by a 32 x 16 one of B (in pairs: B's row q holds k = 2q,
 * 2q + 1 of 16 columns, the B panel's layout) into a 16 x 16 float32 tile, 8192
 * multiply-adds per instruction. On the 2-core Intel Xeon VM (AMX, AVX-512 BF16) it
 * ran at 3.2 TFLOP/s on one core from tiles in registers, 2.4 from L2 and 0.47 streaming
 * from L3, where vdpbf16ps ran at 108 GFLOP/s and the float32 vfmadd231ps at 215. In the
 * driver it does about 1 TFLOP/s a core (perf: 65-70% of the GEMM's time at 2048^3 and
 * 4096x768x768, the epilogue and the packing the rest), each panel's first read from L3.
 *
 * Two A tiles (32 rows) by two B tiles (32 columns) into four C tiles: 8 tiles, all the
 * registers there are, each loaded tile used twice. Each of A's rows holds 32 bfloat16 of
 * k contiguous (ku = 16 pairs), so an A tile is 1 KB of the panel in one piece.
 *
 * Like vdpbf16ps, tdpbf16ps reads denormal inputs as zero and flushes denormal results,
 * rounding to nearest even whatever MXCSR says (Intel's manual): only magnitudes below
 * 2^-126 are affected; each product of bfloat16 is exact in float32 and added in float32.
 *
 * Linux hands out the tile data state (8 KB a thread) only to a process that asked for it
 * (arch_prctl ARCH_REQ_XCOMP_PERM, once, for every thread); a tile instruction before that
 * is SIGILL. The tile configuration is per thread: loaded once per run of kernel calls on
 * a thread (begin: ldtilecfg takes ~50 ns; in every kernel call it cost 8-16% of the whole
 * GEMM at 512x1024x1024, 2048^3 and 4096x768x768), released after (end) so the thread's
 * context switches stop saving the tiles. */
#include <stddef.h>
#include <stdint.h>

#include "gemm_bf16.h"

#define MR 32 /* rows: two A tiles */
#define KU 16 /* pairs of a tile row: 64 bytes */

#if defined(__x86_64__) && defined(__linux__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#include <immintrin.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#define CV_TARGET __attribute__((target("amx-tile,amx-bf16")))
#define ARCH_REQ_XCOMP_PERM 0x1023
#define XFEATURE_XTILEDATA 18

static int ok;

/* CPUID leaf 7: EDX bit 22 AMX-BF16, bit 24 AMX-TILE; then the kernel's permission,
 * which fails where the kernel or the hypervisor does not support the tile state. */
static void check(void) {
    unsigned a, b, c, d;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d) || !(d & 1u << 22) || !(d & 1u << 24))
        return;
    ok = syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) == 0;
}

static int usable(void) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, check);
    return ok;
}

/* Palette 1, eight tiles of 16 rows x 64 bytes. A constant: GCC 12's _tile_loadconfig
 * tells the compiler it reads 8 bytes, and dropped the stores that filled a local copy. */
typedef struct {
    uint8_t palette, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} __attribute__((aligned(64))) tilecfg;

static const tilecfg config = {1, 0, {0}, {64, 64, 64, 64, 64, 64, 64, 64},
                               {16, 16, 16, 16, 16, 16, 16, 16}};

CV_TARGET static void begin(void) { _tile_loadconfig(&config); }

CV_TARGET static void end(void) { _tile_release(); }

/* Tiles 0-3: C (rows 0-15 / 16-31 by columns 0-15 / 16-31), 4-5: A, 6-7: B. The tile
 * loads and stores name their memory only by address: the caller's stores to the panels
 * and to c are behind a function call, which the compiler does not move them across. */
CV_TARGET static void kern(int64_t kq, const uint32_t *a, const uint32_t *b, float *c,
                           int64_t ldc, int accumulate) {
    const int64_t ld = ldc * (int64_t)sizeof *c;
    float *c1 = c + 16 * ldc;
    if (accumulate) {
        _tile_loadd(0, c, ld);
        _tile_loadd(1, c + 16, ld);
        _tile_loadd(2, c1, ld);
        _tile_loadd(3, c1 + 16, ld);
    } else {
        _tile_zero(0);
        _tile_zero(1);
        _tile_zero(2);
        _tile_zero(3);
    }
    for (int64_t g = 0; g < kq / KU; g++) {
        const uint32_t *ag = a + g * KU * MR, *bg = b + g * KU * CV_BF16_NR;
        _tile_loadd(4, ag, KU * 4);
        _tile_loadd(5, ag + 16 * KU, KU * 4);
        _tile_loadd(6, bg, CV_BF16_NR * 4);
        _tile_loadd(7, bg + 16, CV_BF16_NR * 4);
        _tile_dpbf16ps(0, 4, 6);
        _tile_dpbf16ps(1, 4, 7);
        _tile_dpbf16ps(2, 5, 6);
        _tile_dpbf16ps(3, 5, 7);
    }
    _tile_stored(0, c, ld);
    _tile_stored(1, c + 16, ld);
    _tile_stored(2, c1, ld);
    _tile_stored(3, c1 + 16, ld);
}

const cv_bf16_kernel cv_bf16_amx = {"amx", kern, MR, KU, usable, begin, end, NULL,
                                     cv_bf16_pack_b_avx512};
#else
static int usable(void) { return 0; }

const cv_bf16_kernel cv_bf16_amx = {"amx", NULL, MR, KU, usable, NULL, NULL, NULL, NULL};
#endif
