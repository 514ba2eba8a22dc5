// The fused attention at few query rows (batch 1: BERT-base at 1 x 8 and 1 x 16, 12 heads of
// 64): the tensor-core kernel (cv_attention_tc, 4 warps x 16 rows: at 16 rows one warp works)
// against the FMA kernel (cv_attention_fma, 4 warps x 4 rows), and both at the 8 x 128 and
// decode shapes for reference, and the dispatcher the module's entry calls (cv_attention).
// Heads read and the output stored through (b, t, h, d) strides (cv_att_store), the score
// scaled by 1/8 and masked through a (b, s) padding mask as the generated BERT layer's
// functors do; results checked against float64; us per launch in a graph.
//   nvcc -O3 -std=c++17 -arch=sm_90 -I../../native/include attn_small_probe.cu -o a && ./a
#include <cmath>
#include "cuvil_aot/cuda_driver.h"
#include "cuvil_aot/cuda_attention.h"
#include "probe_util.cuh"

// As the generated BERT layer's: the batch's index from z through the argument's shape, a
// padding mask of (b, s) (all ones here), the merged heads stored through cv_att_store.
struct MaskArgs {
    const float *mask;
    int64_t n[2], s;
};
struct Score {
    const MaskArgs *a;
    __device__ float operator()(int64_t z, int64_t, int64_t col, float dot) const {
        int64_t rem = z;
        rem /= a->n[1];
        const int64_t i0 = rem % a->n[0];
        return dot * 0.125f + (1.0f - a->mask[i0 * a->s + col]) * -10000.0f;
    }
};

struct Args {
    cv_att_in q, k, v, o;
    MaskArgs m;
    int64_t nz, t, s, dk, dv;
};

__global__ void __launch_bounds__(128) tc(const __grid_constant__ Args a) {
    __shared__ __align__(16) float sm[cv_att_tc_cfg<64, 64>::FLOATS];
    cv_attention_tc<64, 64, true, true, float, float, float>(a.q, a.k, a.v, a.nz, a.t, a.s, (int)a.dk,
                                                             (int)a.dv, 1, Score{&a.m}, cv_att_store{&a.o}, sm);
}

__global__ void __launch_bounds__(128) fma(const __grid_constant__ Args a) {
    __shared__ __align__(16) float sm[sizeof(cv_att_smem<64>) / sizeof(float)];
    cv_attention_fma<float, float, float, 64>(a.q, a.k, a.v, a.nz, a.t, a.s, a.dk, a.dv,
                                              (int64_t)blockIdx.x * CV_ATT_BM, Score{&a.m}, cv_att_store{&a.o}, sm);
}

// the dispatcher, as the module's entry calls it (sm_90: the FMA kernel at t <= 16)
__global__ void __launch_bounds__(128) entry(const __grid_constant__ Args a) {
    cv_attention<64, 64, true, true>(a.q, a.k, a.v, a.nz, a.t, a.s, a.dk, a.dv, 1, Score{&a.m}, cv_att_store{&a.o});
}

static cudaStream_t st;

int main() {
    CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    const int cases[][3] = {{1, 8, 8}, {1, 16, 16}, {1, 1, 256}, {8, 128, 128}};
    srand(3);
    printf("%-14s %10s %10s %10s\n", "b x t x s", "tc us", "fma us", "entry us");
    for (auto &c : cases) {
        const int b = c[0], t = c[1], s = c[2], h = 12, nz = b * h;
        auto hq = random_floats((size_t)b * t * h * 64, 1), hk = random_floats((size_t)b * s * h * 64, 1),
             hv = random_floats((size_t)b * s * h * 64, 1);
        float *q = upload(hq), *k = upload(hk), *v = upload(hv), *mask = upload(std::vector<float>((size_t)b * s, 1.f)), *o;
        CK(cudaMalloc(&o, 4 * (size_t)nz * t * 64));
        // (b, t, h, d) arrays, batch z = (b, h)
        const cv_att_in aq{(const char *)q, h, (int64_t)t * h * 64, 64, h * 64, 1};
        const cv_att_in ak{(const char *)k, h, (int64_t)s * h * 64, 64, h * 64, 1};
        const cv_att_in av{(const char *)v, h, (int64_t)s * h * 64, 64, h * 64, 1};
        // o: (b, t, h, d), as the merged heads
        const cv_att_in ao{(const char *)o, h, (int64_t)t * h * 64, 64, h * 64, 1};
        const Args args{aq, ak, av, ao, MaskArgs{mask, {b, h}, s}, nz, t, s, 64, 64};
        std::vector<double> ref((size_t)nz * t * 64);
        double top = 0;
        for (int z = 0; z < nz; z++)
            for (int i = 0; i < t; i++) {
                const int bb = z / h, hh = z % h;
                std::vector<double> sc(s);
                double mx = -1e300, sum = 0;
                for (int j = 0; j < s; j++) {
                    double d = 0;
                    for (int e = 0; e < 64; e++)
                        d += (double)hq[((size_t)(bb * t + i) * h + hh) * 64 + e] * hk[((size_t)(bb * s + j) * h + hh) * 64 + e];
                    sc[j] = d * 0.125, mx = std::max(mx, sc[j]);
                }
                for (int j = 0; j < s; j++) sc[j] = std::exp(sc[j] - mx), sum += sc[j];
                for (int e = 0; e < 64; e++) {
                    double acc = 0;
                    for (int j = 0; j < s; j++) acc += sc[j] * hv[((size_t)(bb * s + j) * h + hh) * 64 + e];
                    ref[((size_t)(bb * t + i) * h + hh) * 64 + e] = acc / sum, top = std::max(top, std::fabs(acc / sum));
                }
            }
        std::vector<float> out(ref.size());
        auto run = [&](auto launch) {
            CK(cudaMemsetAsync(o, 0xff, 4 * out.size(), st));
            launch();
            CK(cudaGetLastError());
            CK(cudaStreamSynchronize(st));
            CK(cudaMemcpy(out.data(), o, 4 * out.size(), cudaMemcpyDeviceToHost));
            double err = 0;
            for (size_t i = 0; i < out.size(); i++) {
                const double e = std::fabs(out[i] - ref[i]);
                err = std::isnan(e) ? INFINITY : std::max(err, e);
            }
            printf(" %9.2f%s", graph_us(st, launch), err / top < 2e-6 ? " " : "!");
        };
        char name[32];
        snprintf(name, sizeof name, "%dx%dx%d", b, t, s);
        printf("%-14s", name);
        run([&] { tc<<<dim3((t + 63) / 64, nz), 128, 0, st>>>(args); });
        run([&] { fma<<<dim3((t + 15) / 16, nz), 128, 0, st>>>(args); });
        run([&] { entry<<<dim3((t + 63) / 64, nz), 128, 0, st>>>(args); });
        printf("\n");
        CK(cudaFree(q)); CK(cudaFree(k)); CK(cudaFree(v)); CK(cudaFree(o)); CK(cudaFree(mask));
    }
    return 0;
}
