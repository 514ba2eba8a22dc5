"""The wgmma main loop over K-major copies (gpu_wg_copies.py, cuda_transpose.h, gpu_wrap.h's
cv_gpu_wg_transposed), without a GPU: a GPT-2 block's ``x @ w`` GEMMs (B N-major) may run
the wgmma entry, their copies launched from the call's list just before them; the unit
compiles for sm_90a with the copy kernel in it; the copy kernel itself, run on the host (its
threads as std::threads, __syncthreads a barrier); the host helper's copies read what the
operands as they are hold (its arguments and the rewritten terms, checked on host memory
through a fake runtime); the cost model's choices at GPT-2's shapes."""

from __future__ import annotations

import ctypes
import re
import shutil
import subprocess
import sysconfig
from pathlib import Path

import numpy as np
import pytest
from conftest import host_code, load_source

from cuvil_aot.compiler import pipeline
from cuvil_aot.compiler.gpu_targets import GpuTargets, sass_code
from cuvil_aot.compiler.toolchain import nvcc

ROOT = Path(__file__).resolve().parent.parent
NVCC = nvcc.find_nvcc()

SOURCE = '''
import numpy as np
import cuvil_aot as cv

GPT2 = "f32[768,2304], f32[2304], f32[768,768], f32[768], f32[768,3072], f32[3072], " \\
    "f32[3072,768], f32[768]"

def gelu(h):
    return 0.5 * h * (1.0 + np.tanh(0.7978845608 * (h + 0.044715 * h ** 3)))

@cv.optimize(signatures=["f32[B,T,768], " + GPT2])
def gpt2_gemms(x, w_attn, b_attn, w_proj, b_proj, w_fc, b_fc, w_out, b_out):
    qkv = x @ w_attn + b_attn
    x = x + qkv[..., :768] @ w_proj + b_proj
    return x + gelu(x @ w_fc + b_fc) @ w_out + b_out
'''


def _sources(tmp_path: Path) -> dict[str, str]:
    module = load_source(tmp_path, SOURCE)
    return pipeline.generate_sources(module, pipeline.Options(cpu_levels=(1,)),
                                     GpuTargets.of(("sm_90",)))[3]


def test_gpt2_style_gemms_run_wgmma_over_copies(tmp_path):
    files = _sources(tmp_path)
    unit, host = files["kernels_f0.cu"], host_code(files)
    assert '#include "cuvil_aot/cuda_transpose.h"' in unit
    assert "cv_gemm_wgmma_job<CV_WG_TF32X3, 128, 3>" in unit
    names = re.search(r"cv_gpu_f0_names\[\] = \{([^}]*)\}", host)
    assert names is not None
    table = [n.strip().strip('"') for n in names.group(1).split(",")]
    assert table[-3:] == ["f0_gemm_f32_wg", "f0_gemm_f32_tcc", "cv_transpose_f32"]
    entry = len(table) - 1
    gemms = host.count("cv_gpu_wg_transposed(")  # every GEMM may take copies of its B
    assert gemms == 4
    assert host.count("const int wgl = api->gpu->wgmma(&cv_gpu_f0, dev);") == 4
    # in the call's list: each GEMM's copies (one per operand) just before its main loop;
    # copies of the function's arguments (every B here, the first GEMM's A) are the graph's
    # roots (they wait for nothing), copies of intermediates are not
    queued = host[host.index("cv_gpu_launch Q["):]
    rooted = []
    for g in re.findall(r"Q\[nq\+\+\] = L\[(\d+)\]\.wg \?", queued):
        main = queued.index(f"Q[nq++] = L[{g}].wg ?")
        copies = [re.search(rf"if \(L\[{g}\]\.wg && \(L\[{g}\]\.tr >> {c} & 1\)\) "
                            rf"(roots\[nroots\+\+\] = nq, )?Q\[nq\+\+\] = "
                            rf"\(cv_gpu_launch\)\{{&cv_gpu_f0, {entry}, ", queued)
                  for c in (0, 1)]
        assert all(m is not None and main - 700 < m.start() < main for m in copies)
        rooted.append([m.group(1) is not None for m in copies])
        assert "while (nroots) Q[roots[--nroots]].after = 0;" in queued[main:main + 700]
    assert rooted == [[True, True], [False, True], [False, True], [False, True]]
    assert "api->gpu->scratch_free(&wtm[g][cp], stream)" in host  # given back at the end


@pytest.mark.skipif(NVCC is None, reason="nvcc not found")
def test_the_copy_kernel_compiles_for_sm_90a(tmp_path):
    assert NVCC is not None
    src = tmp_path / "unit.cu"
    src.write_text(_sources(tmp_path)["kernels_f0.cu"])
    out = tmp_path / "unit.cubin"
    code = sass_code("sm_90")
    subprocess.run([NVCC.path, "-cubin", f"-gencode=arch=compute_{code[3:]},code={code}",
                    *nvcc.NVCC_FLAGS, f"-I{ROOT / 'native' / 'include'}", str(src), "-o",
                    str(out)], check=True, capture_output=True, text=True)
    assert b"cv_transpose_f32" in out.read_bytes() and b"f0_gemm_f32_wg" in out.read_bytes()


HARNESS = r"""
#include "cuvil_aot/gpu_wrap.h"
/* A fake runtime: scratch from malloc (or no pools), maps recorded, not made. */
static int pools = 1, maps_made;
static int scratch(int dev, int dtype, int ndim, const int64_t *shape, uintptr_t stream,
                   cv_gpu_array *out) {
    (void)dev, (void)dtype, (void)ndim, (void)stream;
    if (!pools) return 1;
    out->data = aligned_alloc(256, (size_t)(shape[0] * 4 + 255) / 256 * 256);
    return 0;
}
/* the last map asked for: rank 3 dims, 2 strides, box, swizzle; and the one before */
static int64_t last[2][9];
static int tensor_map(void *map, int dtype, int rank, const void *base, const uint64_t *dims,
                      const uint64_t *strides, const uint32_t *box, int swizzle) {
    (void)map, (void)dtype, (void)rank, (void)base;
    memcpy(last[0], last[1], sizeof last[0]);
    for (int d = 0; d < 3; d++) last[1][d] = (int64_t)dims[d], last[1][5 + d] = box[d];
    last[1][3] = (int64_t)strides[0], last[1][4] = (int64_t)strides[1], last[1][8] = swizzle;
    maps_made++;
    return 0;
}
int nmajor_maps(const cv_gpu_term *t, int nterms, int64_t m, int64_t n, int64_t nb,
                int64_t *seen) {
    cv_gpu_api api;
    cv_tmap maps[8];
    memset(&api, 0, sizeof api);
    api.tensor_map = tensor_map;
    const int r = cv_gpu_wg_maps_nmajor(&api, maps, t, nterms, m, n, nb, 128);
    memcpy(seen, last, sizeof last);
    return r;
}
int transposed(cv_gpu_term *t, int nterms, int64_t m, int64_t n, int64_t nb, int x3,
               int with_pools, cv_transpose_args *tr, int *on) {
    cv_gpu_api api;
    cv_gpu_array mem[8];
    cv_tmap maps[8];
    memset(&api, 0, sizeof api);
    api.scratch = scratch, api.tensor_map = tensor_map;
    pools = with_pools, maps_made = 0;
    return cv_gpu_wg_transposed(&api, 0, 0, maps, t, nterms, m, n, nb, 128, x3, tr, mem, on);
}
int pays(int64_t rows, double flops, int64_t elems, int copies, int x3) {
    return cv_gpu_wg_transpose_pays(rows, flops, elems, copies, x3);
}
"""


class Term(ctypes.Structure):
    _fields_ = [("a", ctypes.c_void_p), ("a_rs", ctypes.c_int64), ("a_cs", ctypes.c_int64),
                ("a_bs", ctypes.c_int64), ("b", ctypes.c_void_p), ("b_rs", ctypes.c_int64),
                ("b_cs", ctypes.c_int64), ("b_bs", ctypes.c_int64), ("k", ctypes.c_int64)]


class Copy(ctypes.Structure):
    _fields_ = [("inp", ctypes.c_void_p), ("out", ctypes.c_void_p)] + \
        [(f, ctypes.c_int64) for f in ("rows", "cols", "nb", "rs", "cs", "bs", "ld")]


@pytest.fixture(scope="module")
def harness(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("copies")
    src, lib = tmp / "harness.c", tmp / "harness.so"
    src.write_text(HARNESS)
    subprocess.run(["gcc", "-O1", "-shared", "-fPIC", f"-I{ROOT / 'native' / 'include'}",
                    f"-I{sysconfig.get_paths()['include']}", f"-I{np.get_include()}",
                    "-Wno-unused-function", str(src), "-o", str(lib)], check=True)
    h = ctypes.CDLL(str(lib))
    h.transposed.argtypes = [ctypes.POINTER(Term), ctypes.c_int] + [ctypes.c_int64] * 3 + \
        [ctypes.c_int, ctypes.c_int, ctypes.POINTER(Copy), ctypes.POINTER(ctypes.c_int)]
    h.nmajor_maps.argtypes = [ctypes.POINTER(Term), ctypes.c_int] + [ctypes.c_int64] * 3 + \
        [ctypes.POINTER(ctypes.c_int64)]
    h.pays.argtypes = [ctypes.c_int64, ctypes.c_double, ctypes.c_int64, ctypes.c_int,
                       ctypes.c_int]
    return h


def _run_copy(c: Copy) -> None:
    """cv_transpose_f32 as the header defines it: out[z][r][c] = in[z bs + r rs + c cs]."""
    z, r, col = np.meshgrid(np.arange(c.nb), np.arange(c.rows), np.arange(c.cols), indexing="ij")
    src = z * c.bs + r * c.rs + col * c.cs
    span = int(src.max()) + 1
    inp = np.ctypeslib.as_array((ctypes.c_float * span).from_address(c.inp))
    out = np.ctypeslib.as_array((ctypes.c_float * (c.nb * c.rows * c.ld)).from_address(c.out))
    out[(z * c.rows + r) * c.ld + col] = inp[src]


def _read(base: int, off: np.ndarray) -> np.ndarray:
    return np.ctypeslib.as_array((ctypes.c_float * (int(off.max()) + 1)).from_address(base))[off]


def _operands(t: Term, m: int, n: int, nb: int) -> tuple[np.ndarray, np.ndarray]:
    """What term t's A (nb, m, k) and B (nb, k, n) read."""
    z, i, p = np.meshgrid(np.arange(nb), np.arange(m), np.arange(t.k), indexing="ij")
    a = _read(t.a, z * t.a_bs + i * t.a_rs + p * t.a_cs)
    z, p, j = np.meshgrid(np.arange(nb), np.arange(t.k), np.arange(n), indexing="ij")
    return a, _read(t.b, z * t.b_bs + p * t.b_rs + j * t.b_cs)


# (m, n, k, nb, layout of A, layout of B): "k" K-major, "mn" contiguous along m or n, "s"
# strided both ways; B batched ("mn" with nb > 1) or one for every batch. Rows enough that
# the copies pay (a copied A needs the product deep and wide too); odd n and k
LAYOUTS = [(6001, 251, 75, 1, "k", "mn"), (2001, 250, 77, 3, "k", "mn"),
           (2999, 1250, 515, 2, "mn", "k"), (3000, 1201, 515, 2, "mn", "mn"),
           (6001, 250, 77, 1, "k", "s")]


@pytest.mark.parametrize("m, n, k, nb, la, lb", LAYOUTS)
def test_copies_read_what_the_operands_hold(harness, m, n, k, nb, la, lb):
    rng = np.random.default_rng(m * n + k)
    store = rng.standard_normal(8 * (m + n + 1) * (k + 8) * nb).astype(np.float32)
    base = store.ctypes.data
    bbase = base + 4 * (store.size // 2 // 64 * 64)
    ld = (k + 3) // 4 * 4 + 4  # K-major rows 16-byte aligned (TMA): padded
    a = {"k": (ld, 1), "mn": (1, m), "s": (2, 2 * m)}[la]
    b = {"k": (1, ld), "mn": (n, 1), "s": (2 * n, 2)}[lb]
    t = Term(base, a[0], a[1], m * ld * 2 if nb > 1 else 0, bbase, b[0], b[1],
             n * ld * 2 if lb == "mn" and nb > 1 else 0, k)
    before = _operands(t, m, n, nb)
    copies, on = (Copy * 2)(), (ctypes.c_int * 2)()
    mask = harness.transposed(ctypes.byref(t), 1, m, n, nb, 1, 1, copies, on)
    want = (la != "k") | (lb != "k") << 1
    assert mask == want and list(on) == [want & 1, want >> 1 & 1]
    assert (t.a_cs, t.b_rs) == (1, 1)  # both K-major now, rows 16-byte aligned
    assert t.a_rs % 4 == 0 and t.b_cs % 4 == 0
    for c in range(2):
        if mask >> c & 1:
            _run_copy(copies[c])
    after = _operands(t, m, n, nb)
    np.testing.assert_array_equal(after[0], before[0])
    np.testing.assert_array_equal(after[1], before[1])


def test_no_copies_where_none_is_needed_pays_or_fits(harness):
    k_major = Term(4096, 768, 1, 0, 8192, 1, 768, 0, 768)
    copies, on = (Copy * 2)(), (ctypes.c_int * 2)()
    assert harness.transposed(ctypes.byref(k_major), 1, 512, 768, 1, 1, 1, copies, on) == 0
    n_major = Term(4096, 768, 1, 0, 8192, 768, 1, 0, 768)
    assert harness.transposed(ctypes.byref(n_major), 1, 8, 768, 1, 1, 1, copies, on) == 0
    assert harness.transposed(ctypes.byref(n_major), 1, 512, 768, 1, 1, 0, copies, on) == 0
    assert n_major.b_rs == 768 and n_major.b == 8192  # unchanged where it falls back
    # A K-major as it is but its rows not 16-byte aligned (k = 301, contiguous): no map for
    # A, so no copy of B is made (nothing allocated)
    odd = Term(4096, 301, 1, 0, 8192, 999, 1, 0, 301)
    on = (ctypes.c_int * 2)()
    assert harness.transposed(ctypes.byref(odd), 1, 1001, 999, 1, 1, 1, copies, on) == 0
    assert list(on) == [0, 0] and odd.b_rs == 999


def test_an_n_major_b_is_mapped_as_it_is(harness):
    """cv_gpu_wg_maps_nmajor (CUVIL_AOT_CUDA_WG_NMAJOR): GPT-2's c_attn, x (8, 128, 768) @ w
    (768, 2304): A's map as the K-major ones, B's over k rows of n in boxes of 64 n x 32 k,
    unswizzled (each consumer's half, cuda_wg_split.h); refused where a B is K-major or
    its rows are not 16-byte aligned, A is not K-major, or at 128 rows (wgmma does not pay
    there, as for the copies)."""
    seen = (ctypes.c_int64 * 18)()
    c_attn = Term(4096, 768, 1, 128 * 768, 8192, 2304, 1, 0, 768)
    assert harness.nmajor_maps(ctypes.byref(c_attn), 1, 128, 2304, 8, seen) == 1
    a_map, b_map = list(seen[:9]), list(seen[9:])
    assert a_map == [768, 128, 8, 768 * 4, 128 * 768 * 4, 32, 128, 1, 3]
    assert b_map == [2304, 768, 1, 2304 * 4, 768 * 2304 * 4, 64, 32, 1, 0]
    per_batch = Term(4096, 512, 1, 300 * 512, 8192, 300, 1, 512 * 300, 512)  # np.matmul(a, b)
    assert harness.nmajor_maps(ctypes.byref(per_batch), 1, 300, 300, 16, seen) == 1
    assert list(seen[9:]) == [300, 512, 16, 300 * 4, 512 * 300 * 4, 64, 32, 1, 0]
    refused = [(Term(4096, 768, 1, 0, 8192, 1, 768, 0, 768), 1024),  # B K-major
               (Term(4096, 300, 1, 0, 8192, 517, 1, 0, 300), 1000),  # rows of 517 floats
               (Term(4096, 1, 1024, 0, 8192, 768, 1, 0, 768), 1024),  # A M-major
               (Term(4096, 768, 1, 0, 8192, 2304, 1, 0, 768), 128)]  # 128 rows
    for t, m in refused:
        assert harness.nmajor_maps(ctypes.byref(t), 1, m, t.b_rs if t.b_cs == 1 else 768, 1,
                                   seen) == 0


@pytest.mark.parametrize("rows, n, k, x3, want", [
    (8 * 128, 2304, 768, 1, True),  # GPT-2 8 x 128: c_attn, c_fc, c_proj, as measured
    (8 * 128, 768, 3072, 1, True),
    (8 * 128, 768, 768, 1, True),
    (128, 2304, 768, 1, False),  # 1 x 128: measured slower with the copies, every weight
    (128, 3072, 768, 1, False),
    (128, 768, 768, 1, False),
    (48, 768, 768, 1, False),
    (4096, 4096, 4096, 0, True)])
def test_the_copies_pay_at_gpt2_shapes(harness, rows, n, k, x3, want):
    elems = n * ((k + 3) // 4 * 4)
    assert bool(harness.pays(rows, 2.0 * rows * n * k, elems, 1, x3)) is want


EMULATOR = r"""
/* cv_transpose_f32 on the host: a block's threads as std::threads, a barrier for
 * __syncthreads, blocks one after another (grid-stride over the tiles as on the device). */
#include <barrier>
#include <cstdint>
#include <thread>
#include <vector>
struct dim { unsigned x; };
static thread_local dim threadIdx, blockIdx;
static dim gridDim;
static std::barrier<> *sync_point;
static void __syncthreads() { sync_point->arrive_and_wait(); }
#define __CUDACC__ 1
#define __global__
#define __shared__ static
#define __grid_constant__
#define __launch_bounds__(x)
#include "cuvil_aot/cuda_transpose.h"

extern "C" void run(const cv_transpose_args *a, unsigned grid) {
    gridDim.x = grid;
    std::barrier<> bar(CV_TRANSPOSE_BLOCK);
    sync_point = &bar;
    for (unsigned b = 0; b < grid; b++) {
        std::vector<std::thread> ts;
        for (unsigned t = 0; t < CV_TRANSPOSE_BLOCK; t++)
            ts.emplace_back([=] { threadIdx.x = t; blockIdx.x = b; cv_transpose_f32(*a); });
        for (auto &t : ts) t.join();
    }
}
extern "C" int64_t tiles(const cv_transpose_args *a) { return cv_transpose_tiles(a); }
"""


@pytest.mark.skipif(shutil.which("g++") is None, reason="g++ not found")
@pytest.mark.parametrize("rows, cols, nb, layout, grid", [
    (70, 45, 1, "transposed", 0), (33, 97, 3, "transposed", 0), (64, 64, 2, "transposed", 3),
    (100, 31, 2, "strided", 0), (5, 3, 1, "transposed", 0)])
def test_the_copy_kernel_on_the_host(tmp_path, rows, cols, nb, layout, grid):
    """out[z][r][c] = in[z bs + r rs + c cs] for every element, nothing written past a row's
    cols (the padding to ld stays as it was); grid 0: a block per tile, else fewer blocks
    looping over the tiles."""
    src, lib = tmp_path / "emu.cpp", tmp_path / "emu.so"
    src.write_text(EMULATOR)
    subprocess.run(["g++", "-std=c++20", "-O1", "-shared", "-fPIC", "-pthread",
                    f"-I{ROOT / 'native' / 'include'}", str(src), "-o", str(lib)], check=True)
    emu = ctypes.CDLL(str(lib))
    emu.tiles.restype = ctypes.c_int64
    rng = np.random.default_rng(rows * cols + nb)
    # the input as stored: (nb, cols, rows) C-ordered, so rows are its contiguous axis (a
    # transposed operand); strided: every other element of it
    step = 2 if layout == "strided" else 1
    store = rng.standard_normal((nb, cols, rows * step)).astype(np.float32)
    view = store[:, :, ::step]
    want = view.transpose(0, 2, 1)  # (nb, rows, cols)
    ld = (cols + 3) // 4 * 4
    out = np.full((nb, rows, ld), np.nan, np.float32)
    a = Copy(store.ctypes.data, out.ctypes.data, rows, cols, nb, step, rows * step,
             cols * rows * step, ld)
    tiles = emu.tiles(ctypes.byref(a))
    assert tiles == -(-rows // 32) * -(-cols // 32) * nb
    emu.run(ctypes.byref(a), ctypes.c_uint(grid or tiles))
    np.testing.assert_array_equal(out[:, :, :cols], want)
    assert np.isnan(out[:, :, cols:]).all()
