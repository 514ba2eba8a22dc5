// What the host pays per call on the GPU path, piece by piece (issue 23: 24-42 us pass on
// the host between a transformer call's start and its first kernel, bench/gpu/
// call_timeline.py): cuTensorMapEncodeTiled of one wgmma operand map (the wrapper makes 2
// a GEMM each call), cuGraphExecKernelNodeSetParams of one node, and a graph of N empty
// kernels launched and synchronized against N cuLaunchKernel + one synchronize. Medians of 2000 after 200 warm-up.
//
//   nvcc -O3 -arch=sm_90 host_costs.cu -o host_costs && ./host_costs
#include <cuda.h>
#include <cuda_runtime.h>
#include "probe_util.cuh"

__global__ void empty() {}

#define CU(x) do { CUresult r = (x); if (r != CUDA_SUCCESS) { \
    printf("%s:%d CUresult %d\n", __FILE__, __LINE__, (int)r); exit(1); } } while (0)

template <class T> static T entry(const char *name) {
    void *p = nullptr;
    cudaDriverEntryPointQueryResult q;
    CK(cudaGetDriverEntryPointByVersion(name, &p, 12000, cudaEnableDefault, &q));
    if (!p) { printf("no driver entry point %s\n", name); exit(1); }
    return (T)p;
}

template <class F> static float median_us(F body) {
    std::vector<float> t;
    for (int i = 0; i < 2200; i++) {
        const auto t0 = std::chrono::steady_clock::now();
        body();
        const auto dt = std::chrono::steady_clock::now() - t0;
        if (i >= 200) t.push_back(std::chrono::duration<float, std::micro>(dt).count());
    }
    return med(t);
}

int main() {
    auto encode = entry<decltype(&cuTensorMapEncodeTiled)>("cuTensorMapEncodeTiled");
    auto launch = entry<decltype(&cuLaunchKernel)>("cuLaunchKernel");
    auto set_params = entry<decltype(&cuGraphExecKernelNodeSetParams)>(
        "cuGraphExecKernelNodeSetParams");
    auto get_params = entry<decltype(&cuGraphKernelNodeGetParams)>("cuGraphKernelNodeGetParams");
    CK(cudaFree(0));
    float *buf;
    CK(cudaMalloc(&buf, 64 << 20));
    // A 1024 x 768 float32 operand in 128 x 32 boxes, 128-byte swizzle (as gpu_wrap.h asks)
    CUtensorMap map;
    cuuint64_t dims[3] = {768, 1024, 1}, strides[2] = {768 * 4, 768 * 1024 * 4};
    cuuint32_t box[3] = {32, 128, 1}, estr[3] = {1, 1, 1};
    int flip = 0;
    const float enc = median_us([&] {
        CU(encode(&map, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 3, buf + (flip ^= 64), dims, strides,
                  box, estr, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                  CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE));
    });
    printf("cuTensorMapEncodeTiled (1024 x 768 float32, 128 x 32 box): %.3f us\n", enc);

    CUfunction fe;
    CK(cudaGetFuncBySymbol((cudaFunction_t *)&fe, (const void *)empty));
    for (int n : {1, 8, 16, 32}) {
        cudaStream_t s;
        CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
        CUgraph g;
        CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
        CU(launch(fe, 1, 1, 1, 32, 1, 1, 0, (CUstream)s, nullptr, nullptr));
        for (int i = 1; i < n; i++)
            CU(launch(fe, 1, 1, 1, 32, 1, 1, 0, (CUstream)s, nullptr, nullptr));
        CK(cudaStreamEndCapture(s, (cudaGraph_t *)&g));
        cudaGraphExec_t ge;
        CK(cudaGraphInstantiate(&ge, (cudaGraph_t)g, 0));
        const float graph = median_us([&] { CK(cudaGraphLaunch(ge, s)); CK(cudaStreamSynchronize(s)); });
        const float loose = median_us([&] {
            CU(launch(fe, 1, 1, 1, 32, 1, 1, 0, (CUstream)s, nullptr, nullptr));
            for (int i = 1; i < n; i++)
            CU(launch(fe, 1, 1, 1, 32, 1, 1, 0, (CUstream)s, nullptr, nullptr));
            CK(cudaStreamSynchronize(s));
        });
        printf("%2d nodes: graph launch + sync %.2f us, %d cuLaunchKernel + sync %.2f us\n",
               n, graph, n, loose);
        // node update: the first node's parameters set again (as a call whose pointers moved)
        cudaGraphNode_t nodes[64];
        size_t count = 64;
        CK(cudaGraphGetNodes((cudaGraph_t)g, nodes, &count));
        CUDA_KERNEL_NODE_PARAMS p;
        CU(get_params((CUgraphNode)nodes[0], &p));
        const float upd = median_us([&] { CU(set_params((CUgraphExec)ge, (CUgraphNode)nodes[0], &p)); });
        printf("   cuGraphExecKernelNodeSetParams of one node: %.3f us\n", upd);
        CK(cudaGraphExecDestroy(ge));
        CK(cudaStreamDestroy(s));
    }
    return 0;
}
