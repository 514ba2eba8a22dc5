/* x86-64 micro-architecture level detection (psABI levels v2, v3, v4).
 *
 * A level counts only when the CPU has every feature of it and, for v3 and
 * v4, the OS saves the YMM / ZMM registers on a context switch (XCR0), since
 * a CPU flag alone does not make AVX usable. The usable level starts at the
 * detected one and can only be lowered (cv_set_cpu_level), so a lowered level
 * runs the same kernels a smaller machine would.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "internal.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>

enum { LEAF_1, LEAF_7, LEAF_EXT1, NLEAVES };
enum { REG_EBX, REG_ECX, REG_EDX };

typedef struct {
    const char *name;
    uint8_t level, leaf, reg, bit;
} cv_feature;

/* Every feature the psABI lists for v2..v4 (SSE/SSE2 and the rest of v1 are
 * part of x86-64 itself). */
static const cv_feature features[] = {
    {"sse3", 2, LEAF_1, REG_ECX, 0},        {"ssse3", 2, LEAF_1, REG_ECX, 9},
    {"cx16", 2, LEAF_1, REG_ECX, 13},       {"sse4_1", 2, LEAF_1, REG_ECX, 19},
    {"sse4_2", 2, LEAF_1, REG_ECX, 20},     {"popcnt", 2, LEAF_1, REG_ECX, 23},
    {"lahf_lm", 2, LEAF_EXT1, REG_ECX, 0},  {"fma", 3, LEAF_1, REG_ECX, 12},
    {"movbe", 3, LEAF_1, REG_ECX, 22},      {"avx", 3, LEAF_1, REG_ECX, 28},
    {"f16c", 3, LEAF_1, REG_ECX, 29},       {"bmi1", 3, LEAF_7, REG_EBX, 3},
    {"avx2", 3, LEAF_7, REG_EBX, 5},        {"bmi2", 3, LEAF_7, REG_EBX, 8},
    {"lzcnt", 3, LEAF_EXT1, REG_ECX, 5},    {"avx512f", 4, LEAF_7, REG_EBX, 16},
    {"avx512dq", 4, LEAF_7, REG_EBX, 17},   {"avx512cd", 4, LEAF_7, REG_EBX, 28},
    {"avx512bw", 4, LEAF_7, REG_EBX, 30},   {"avx512vl", 4, LEAF_7, REG_EBX, 31},
};
#define NFEATURES ((int)(sizeof features / sizeof features[0]))

#define XCR0_YMM 0x06u /* SSE and AVX state */
#define XCR0_ZMM 0xE0u /* opmask, ZMM_Hi256, Hi16_ZMM state */

static const char *found_names[NFEATURES];
static int nfound;
static int detected_level;

/* Read XCR0 with the raw opcode's mnemonic; no -mxsave needed. */
static uint64_t read_xcr0(void) {
    uint32_t lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((uint64_t)hi << 32) | lo;
}

static void read_leaves(uint32_t regs[NLEAVES][3]) {
    static const uint32_t leaf_ids[NLEAVES] = {1, 7, 0x80000001u};
    for (int l = 0; l < NLEAVES; l++) {
        uint32_t a = 0, b = 0, c = 0, d = 0;
        if (!__get_cpuid_count(leaf_ids[l], 0, &a, &b, &c, &d))
            b = c = d = 0;
        regs[l][REG_EBX] = b;
        regs[l][REG_ECX] = c;
        regs[l][REG_EDX] = d;
    }
}

/* Usable state per level: v3 needs YMM and v4 ZMM state enabled by the OS. */
static int os_supports(int level, uint32_t regs[NLEAVES][3]) {
    if (level < 3)
        return 1;
    if (!(regs[LEAF_1][REG_ECX] & (1u << 27))) /* OSXSAVE: xgetbv usable */
        return 0;
    uint64_t want = level == 3 ? XCR0_YMM : (XCR0_YMM | XCR0_ZMM);
    return (read_xcr0() & want) == want;
}

static void detect(void) {
    uint32_t regs[NLEAVES][3];
    int missing[5] = {0};
    read_leaves(regs);
    for (int f = 0; f < NFEATURES; f++) {
        const cv_feature *ft = &features[f];
        if (regs[ft->leaf][ft->reg] & (1u << ft->bit))
            found_names[nfound++] = ft->name;
        else
            missing[ft->level] = 1;
    }
    int level = 1;
    while (level < 4 && !missing[level + 1] && os_supports(level + 1, regs))
        level++;
    detected_level = level;
}

static void ensure_detected(void) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, detect);
}

const char *const *cv_cpu_features(int *count) {
    ensure_detected();
    *count = nfound;
    return found_names;
}

int cv_cpu_detected_level(void) {
    ensure_detected();
    return detected_level;
}

#else /* not x86: no levels above the baseline */

const char *const *cv_cpu_features(int *count) {
    *count = 0;
    return 0;
}

int cv_cpu_detected_level(void) { return 1; }

#endif

/* 0 = not lowered: use the detected level. */
static atomic_int usable_level;

int cv_cpu_level(void) {
    int lvl = atomic_load_explicit(&usable_level, memory_order_relaxed);
    return lvl ? lvl : cv_cpu_detected_level();
}

void cv_set_cpu_level(int level) {
    int det = cv_cpu_detected_level();
    atomic_store(&usable_level, level <= 0 || level > det ? det : level);
}
