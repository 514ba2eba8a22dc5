/* One CUDA thread block on the CPU, for the kernel emulators (attention_emulator.cpp,
 * gemv_rows_emulator.cpp): its EMU_THREADS threads are fibers (ucontext) run round-robin on
 * one thread, so __syncthreads, __syncwarp and the warp shuffles are barriers. Define
 * EMU_THREADS (a multiple of 32) before including this. */
#ifndef CUVIL_AOT_TESTS_EMULATED_BLOCK_H
#define CUVIL_AOT_TESTS_EMULATED_BLOCK_H

#include <ucontext.h>

#include <vector>

struct dim3e {
    unsigned x, y, z;
};
static const int NT = EMU_THREADS;
static int cur;                 /* the running fiber: threadIdx.x */
static dim3e blockIdx, gridDim; /* one block at a time */
#define threadIdx (dim3e{(unsigned)cur, 0, 0})
#define blockDim (dim3e{(unsigned)NT, 1, 1})

static ucontext_t sched, fib[NT];
static void yield_() { swapcontext(&fib[cur], &sched); }
struct barrier_ {
    int n, count = 0, gen = 0;
    void wait() {
        const int g = gen;
        if (++count == n) count = 0, gen++;
        else
            while (gen == g) yield_();
    }
};
static barrier_ block_bar{NT};
static struct warp_bars_ {
    barrier_ of[NT / 32];
    warp_bars_() {
        for (barrier_ &b : of) b.n = 32;
    }
} warp_bar;
static void __syncthreads() { block_bar.wait(); }
static void __syncwarp() { warp_bar.of[cur / 32].wait(); }
static float xch[NT];
static float __shfl_xor_sync(unsigned, float v, int o) {
    xch[cur] = v;
    __syncwarp();
    const float r = xch[cur ^ o];
    __syncwarp();
    return r;
}
static float __shfl_sync(unsigned, float v, int lane) {
    xch[cur] = v;
    __syncwarp();
    const float r = xch[(cur & ~31) | lane];
    __syncwarp();
    return r;
}

/* Runs body() as each thread of every block of gridDim, block after block. */
static void (*emu_body)();
static bool emu_ended[NT];
static void emu_thread() {
    emu_body();
    emu_ended[cur] = true;
}
static void run_grid(void (*body)()) {
    static std::vector<char> stacks((size_t)NT * 256 * 1024);
    emu_body = body;
    for (unsigned by = 0; by < gridDim.y; by++)
        for (unsigned bx = 0; bx < gridDim.x; bx++) {
            blockIdx = {bx, by, 0};
            for (int i = 0; i < NT; i++) {
                emu_ended[i] = false;
                getcontext(&fib[i]);
                fib[i].uc_stack.ss_sp = &stacks[(size_t)i * 256 * 1024];
                fib[i].uc_stack.ss_size = 256 * 1024;
                fib[i].uc_link = &sched;
                makecontext(&fib[i], emu_thread, 0);
            }
            for (int left = NT; left > 0;) {
                left = 0;
                for (cur = 0; cur < NT; cur++)
                    if (!emu_ended[cur]) swapcontext(&sched, &fib[cur]), left += !emu_ended[cur];
            }
        }
}

#endif
