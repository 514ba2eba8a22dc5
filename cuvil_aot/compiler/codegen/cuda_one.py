"""A call's kernels as one CUDA kernel (the one-kernel): at batch 1 each launch costs
more than its work, so a call whose work is small runs every kernel of codegen/cuda.py as a
phase of one cooperative kernel, with grid-wide barriers between phases, or without one where
a GEMV's elementwise consumer runs in the GEMV's own tiles (tile_consumer). The host side
(gpu_wrapper.py) fills ``{prefix}_one_args`` and picks the launch."""

from __future__ import annotations

from cuvil_aot.compiler.codegen.cuda_emitter import CudaKernel
from cuvil_aot.compiler.codegen.cuda_gemm import dot_call, gemv_call
from cuvil_aot.compiler.codegen.cuda_geometry import DOT_COLS, DOT_ROWS, DOT_VARIANT
from cuvil_aot.compiler.codegen.writer import Writer
from cuvil_aot.compiler.ir.group import Kind
from cuvil_aot.compiler.ir.indexing import identity
from cuvil_aot.compiler.ir.types import Dim

ONE_BLOCK = 1024  # threads of a one-kernel block: a block per SM, all co-resident
ONE_ROW_CACHE = 2  # elements per thread of a block-per-row phase kept in registers
# The most kernels a one-kernel takes as phases. It wins where a launch costs more than
# the work (an LSTM step: 2 kernels, a ResNet head at batch 1: 3), and lost on every
# transformer layer measured (15 kernels, H200, bench/gpu/h200_2026-12-02c): from call to
# result a BERT-base layer at 1 x 16 took 265 us as one kernel against 125 launched one
# by one, four of them at 1 x 8 749 against 368, a GPT-2 decode step 143 against 81.
ONE_MAX_KERNELS = 4


def one_struct(prefix: str, kernels: list[CudaKernel]) -> str:
    """The arguments of every kernel of a call, each kernel's variant and, for a GEMV
    whose consumer runs in its tiles, their runs of columns (see one_kernel); the host
    fills it for the separate launches too."""
    w = Writer()
    with w.block("typedef struct", f"}} {prefix}_one_args;"):
        for g, k in enumerate(kernels):
            w.line(f"{k.name}_args a{g};")
        w.line(f"int v[{len(kernels)}];")
        w.line(f"int runs[{len(kernels)}];  /* 0: kernel g + 1 waits for a grid barrier */")
    return w.text()


def one_kernel(prefix: str, kernels: list[CudaKernel]) -> str:
    """A call's kernels as one cooperative kernel, with a grid-wide barrier between
    them: at batch 1 each launch costs more than its work (H200: two launches and a
    synchronize 11.4 us, one cooperative launch with one barrier 8.8 us;
    bench/gpu/gpu_rows.md). Each kernel's code runs block-stride over any grid, with 32-bit
    offsets (a call needing 64 is launched kernel by kernel); v[g] picks its variant:
    rows 1 for a block per row (else a warp per row), or 4: a block per row that keeps
    the row in registers (one pass over memory instead of three: a ResNet head's softmax
    phase at batch 1 took 2.3 us
    with three, H200, bench/gpu/resnet_probe.cu); GEMV its rows per tile (1 or 4), or
    DOT_VARIANT for the dot GEMV (a transposed B, cv_gemv_dot). The
    phases run in a loop, so that the GEMVs share one copy of their main loops
    (_shared_gemvs): their arguments and epilogues are picked by phase.

    A GEMV followed by an elementwise kernel that reads its result column-aligned
    (tile_consumer: the LSTM step's gates) may skip the barrier between them: where the
    host sets runs[g], each GEMV tile computes every column its consumer's elements
    read (runs of columns n / runs apart) and the block then computes those elements."""
    w = Writer()
    paired = {g for g in range(len(kernels) - 1) if tile_consumer(kernels, g) is not None}
    for g in paired:
        _after_struct(w, kernels[g + 1], f"{prefix}_after{g + 1}")
    shared = _shared_gemvs(kernels, paired)
    for acc, phases in shared.items():
        _epilogue_switch(w, prefix, kernels, acc, phases)
    with w.block(f'extern "C" __global__ void __launch_bounds__({ONE_BLOCK}, 1) '
                 f"{prefix}_one(const __grid_constant__ {prefix}_one_args o)"):
        w.line("/* a loop over the phases: one copy of the GEMV main loops they share */")
        w.line("#pragma unroll 1")
        with w.block(f"for (int g = 0; g < {len(kernels)}; g++)"):
            w.line("if (g) cooperative_groups::this_grid().sync();")
            with w.block("switch (g)"):
                for g, k in enumerate(kernels):
                    if g - 1 in paired or any(g in phases for phases in shared.values()):
                        continue
                    with w.block(f"case {g}:"):
                        w.line(f"const {k.name}_args *a = &o.a{g};")
                        if g in paired:
                            _paired_phase(w, prefix, kernels, g)
                        else:
                            w.line(_one_call(k, f"o.v[{g}]"))
                        w.line("continue;")
            for acc, phases in shared.items():
                _shared_gemv_call(w, prefix, kernels, acc, phases)
    return w.text()


def _shared_gemvs(kernels: list[CudaKernel], paired: set[int]) -> dict[str, list[int]]:
    """The GEMM phases, by accumulator type, that share one GEMV main loop in the
    one-kernel: inlined once per (type, rows per tile) instead of at each phase (a BERT
    layer's seven GEMMs: 14 inlined main loops, two thirds of its unit's nvcc time). A
    GEMV whose consumer runs in its tiles keeps its own (its consumer is its ``after``)."""
    shared: dict[str, list[int]] = {}
    for g, k in enumerate(kernels):
        if k.group.kind is Kind.GEMM and g not in paired:
            shared.setdefault(k.acc_type, []).append(g)
    return shared


def _epilogue_switch(w: Writer, prefix: str, kernels: list[CudaKernel], acc: str,
                     phases: list[int]) -> None:
    """The shared GEMV's epilogue: phase g's own (its group's stores), picked by g."""
    with w.block(f"struct {prefix}_one_epi_{acc}", "};"):
        w.line(f"const {prefix}_one_args *o;")
        w.line("int g;")
        with w.block("__device__ __forceinline__ void operator()(int64_t b, int64_t i, "
                     f"int64_t j, {acc} acc) const"), w.block("switch (g)"):
            for g in phases:
                w.line(f"case {g}: {kernels[g].name}_epi_t<false>{{&o->a{g}}}(b, i, j, acc); "
                       "break;")  # what an earlier phase wrote: no read-only loads


def _shared_gemv_call(w: Writer, prefix: str, kernels: list[CudaKernel], acc: str,
                      phases: list[int]) -> None:
    """The GEMV phases of accumulator type ``acc``: their arguments picked by phase (from
    the parameter bank: each case reads fixed offsets of ``o``), one call per row count."""
    with w.block(""):
        # t starts as a parameter's address, not 0: a null among its values made nvcc
        # read the terms through generic loads instead of the parameter bank
        w.line(f"const cv_gpu_term *t = o.a{phases[0]}.t;")
        w.line("int on = 0, nt = 0, cols = 0, vec = 0, v = 0;")
        w.line("int64_t m = 0, n = 0, nb = 1;")
        with w.block("switch (g)"):
            for g in phases:
                k = kernels[g]
                last = k.nloops - 1
                batch = f" nb = o.a{g}.n[0];" if k.nloops == 3 else ""
                w.line(f"case {g}: on = 1; t = o.a{g}.t; nt = {len(k.group.terms)}; "
                       f"m = o.a{g}.n[{last - 1}]; n = o.a{g}.n[{last}];{batch} "
                       f"cols = (int)o.a{g}.cols; vec = (int)o.a{g}.vec; v = o.v[{g}]; break;")
        with w.block("if (on)"):
            epi = f"{prefix}_one_epi_{acc}{{&o, g}}"
            dot = f"cv_gemv_dot<{acc}, {DOT_ROWS}, {DOT_COLS}>(t, nt, m, n, nb, vec, {epi});"
            w.line(f"if (v == {DOT_VARIANT}) {dot} else if (v == 1) cv_gemv<{acc}, 1>(t, nt, m, "
                   f"n, nb, cols, vec, {epi}); else cv_gemv<{acc}, 4>(t, nt, m, n, nb, cols, vec, "
                   f"{epi});")
            w.line("continue;")


def _paired_phase(w: Writer, prefix: str, kernels: list[CudaKernel], g: int) -> None:
    """GEMV g with its consumer g + 1 in its tiles where the host set runs[g], else after
    a grid barrier; the loop then skips g + 1."""
    k = kernels[g]
    runs = f"o.runs[{g}]"
    after = f"{runs} ? {runs} : 1, {prefix}_after{g + 1}{{&o.a{g + 1}, {runs} != 0}}"
    w.line(f"if (o.v[{g}] == {DOT_VARIANT}) {dot_call(k)} else if (o.v[{g}] == 1) "
           f"{gemv_call(k, 1, after)} else {gemv_call(k, 4, after)}")
    with w.block(f"if (!{runs})"):
        w.line("cooperative_groups::this_grid().sync();")
        w.line(f"const {kernels[g + 1].name}_args *a = &o.a{g + 1};")
        w.line(_one_call(kernels[g + 1], f"o.v[{g + 1}]"))
    w.line("g++;")


def tile_consumer(kernels: list[CudaKernel], g: int) -> list[Dim] | None:
    """Where kernel g + 1 may run inside the tiles of kernel g's GEMV (one_kernel): the
    column offsets of its loads of g's results, which it reads at [i, j + offset] over a
    loop space [m, n'] (m: the GEMM's rows); None where it may not. The host checks at
    run time that each offset is a multiple of n' below the GEMM's n."""
    gemm, cons = kernels[g].group, kernels[g + 1].group
    if gemm.kind is not Kind.GEMM or cons.kind is not Kind.ELEMENTWISE \
            or len(gemm.space.shape) != 2 or len(cons.space.shape) != 2 \
            or cons.space.shape[0] != gemm.space.shape[0] \
            or any(d.axis != -1 or d.buffer.shape != gemm.space.shape for d in gemm.dests):
        return None
    results = {id(d.buffer) for d in gemm.dests}
    row, one, zero = identity(2)[0], Dim.of(1), Dim.of(0)
    offsets = []
    for op in kernels[g + 1].operands:
        if op.dest is not None or id(op.base) not in results:
            continue
        if op.view is not None or op.map[0] != row or op.map[1].coeffs != (zero, one):
            return None
        offsets.append(op.map[1].const)
    return offsets or None


def _after_struct(w: Writer, k: CudaKernel, name: str) -> None:
    """Kernel k's elements of rows [row0, row0 + rows) and columns [col0, col0 + run):
    what a GEMV tile of the one-kernel leaves it to compute (see one_kernel); ``name``,
    the one-kernel's own (k may be another version's too: gpu_plan._named)."""
    with w.block(f"struct {name}", "};"):
        w.line(f"const {k.name}_args *a;")
        w.line("int on;  /* 0: the consumer runs after a grid barrier instead */")
        with w.block("__device__ __forceinline__ void operator()(int64_t row0, int rows, "
                     "int64_t col0, int64_t run) const"):
            w.line("if (!on) return;")
            w.line("const int64_t n0 = a->n[0], n1 = a->n[1], "
                   "col1 = col0 + run < n1 ? col0 + run : n1;")
            with w.block("for (int64_t r = row0; r < row0 + rows && r < n0; r++)"):
                w.line(f"{k.name}_span<int32_t>(a, (int32_t)(r * n1 + col0 + threadIdx.x), "
                       "(int32_t)(r * n1 + col1), (int32_t)blockDim.x);")


def _one_call(k: CudaKernel, v: str) -> str:
    """Elementwise or row phase k of the one-kernel, in 32-bit offsets only: a call whose
    offsets need 64 bits is launched kernel by kernel (gpu_launch.py), and each variant
    left out of this one large kernel is nvcc time saved (a BERT-style layer's one-kernel
    took 9.5 s of nvcc for sm_90 with the 64-bit variants)."""
    name = k.name
    if k.group.kind is Kind.ELEMENTWISE:
        return f"{name}_strided<int32_t>(a);"
    return (f"if ({v} == 4) {name}_rows_c<int32_t, 0, {ONE_ROW_CACHE}, false, 1>(a); "
            f"else if ({v}) {name}_rows<int32_t, 0>(a); else {name}_rows<int32_t, 32>(a);")
