/* cuda_divide.h's cv_divf run on the CPU, for tests/test_divide_emulator.py: its arithmetic
 * as written (fmaf is the FMA the device runs), with rcp.approx modelled as IEEE's 1 / y
 * moved by up to `ulps` units in the last place (deterministic per y), subnormal operands
 * and results flushed to zero as rcp.approx.ftz does. Each quotient is compared with the
 * CPU's IEEE division of the same operands.
 *
 *   g++ -std=c++17 -O1 -I native/include tests/divide_emulator.cpp -o divide
 *   ./divide N ulps seed   prints "worst_ulp special_mismatches normal_inexact normal subnormal"
 */
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>

#define CV_DEV static inline
#define CV_RCP_APPROX_MODEL
static int g_ulps = 1;

static uint32_t bits(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
}

static float flushed(float f) { return std::fabs(f) < 0x1p-126f ? std::copysign(0.f, f) : f; }

/* IEEE's 1 / y, then moved by a multiple of an ulp in [-ulps, ulps] picked by y's bits */
static float cv_rcp_approx(float y) {
    float r = flushed(1.f / flushed(y));
    if (!std::isfinite(r) || r == 0.f) return r;
    const int step = (int)((bits(y) * 2654435761u) >> 16) % (2 * g_ulps + 1) - g_ulps;
    for (int i = 0; i < std::abs(step); i++) r = std::nextafter(r, step > 0 ? INFINITY : -INFINITY);
    return flushed(r);
}

#include "cuvil_aot/cuda_divide.h"

/* float bits as integers in the numbers' order: an ulp distance is a difference */
static int64_t ordered(float f) {
    const int32_t i = (int32_t)bits(f);
    return i < 0 ? -(int64_t)(i & 0x7fffffff) : i;
}

static float operand(std::mt19937_64 &rng) {
    static const float specials[] = {0.f, -0.f, INFINITY, -INFINITY, NAN, 1e-45f, -1e-45f,
                                     1e-40f, 0x1p-126f, 0x1.fffffcp-127f, 3.4028235e38f,
                                     -3.4028235e38f, 1.f, -1.f, 2.f, 0.5f, 0x1p-100f, 0x1p125f};
    if (rng() % 20 == 0) return specials[rng() % (sizeof specials / sizeof *specials)];
    const double m = 1.0 + (double)(rng() >> 11) * 0x1p-53;
    const int e = (int)(rng() % 278) - 150;
    return (float)std::ldexp(rng() % 2 ? -m : m, e);
}

int main(int argc, char **argv) {
    const long n = argc > 1 ? std::atol(argv[1]) : 1000000;
    g_ulps = argc > 2 ? std::atoi(argv[2]) : 1;
    std::mt19937_64 rng(argc > 3 ? std::strtoull(argv[3], nullptr, 10) : 1);
    int64_t worst = 0;
    long special = 0, inexact = 0, normal = 0, subnormal = 0;
    for (long i = 0; i < n; i++) {
        const float x = operand(rng), y = operand(rng);
        const float want = x / y, got = cv_divf(x, y);
        if (std::isnan(want) || std::isnan(got)) {
            special += std::isnan(want) != std::isnan(got);
        } else if (!std::isfinite(want) || want == 0.f) {
            special += bits(want) != bits(got); /* the sign of a zero included */
        } else {
            const int64_t d = std::llabs(ordered(got) - ordered(want));
            worst = d > worst ? d : worst;
            if (std::fabs(want) >= 0x1p-126f) {
                normal++;
                inexact += d != 0;
            } else {
                subnormal++;
            }
        }
    }
    std::printf("%lld %ld %ld %ld %ld\n", (long long)worst, special, inexact, normal, subnormal);
    return 0;
}
