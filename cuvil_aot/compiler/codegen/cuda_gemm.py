"""GEMM CUDA kernels: each group's epilogue functor, run on finished accumulators, and per
unit and accumulator type one set of entry points of the main loops of cuda_gemm.h that
every GEMM of the unit launches with its tag and arguments: ``_tiled`` (128x128 tiles),
``_tiled64``, ``_gemv1``, ``_gemv4`` (at one row per tile the GEMV reads float32 weights as
float4 where they are contiguous and aligned), ``_ksum`` (adds split-K partial sums),
``_dot`` (a transposed B), ``_dotw`` (its tiles of 8 columns on 16 warps) and, for
float32, ``_tc64``/``_tct64`` (3xTF32 on tensor cores, 64x128 tiles) and ``_gemv8`` (the
float4 GEMV of up to 8 rows a tile).

Before, each GEMM had its nine entry points, its epilogue inlined into each main loop
(an 8-GEMM encoder layer: 72 main loops, 15 s of nvcc for sm_90 on one core). After::

    typedef struct { int64_t tag; union { f0_s0_g0_args m0; f0_s0_g2_args m1; } u; }
        f0_gemm_f32_args;
    struct f0_gemm_f32_epi { ... switch (a->tag) { case 0: f0_s0_g0_epi{&a->u.m0}(...); ...
    extern "C" __global__ void f0_gemm_f32_tc(const __grid_constant__ f0_gemm_f32_args a_) {
        const cv_gemm_job j = f0_gemm_f32_job(&a_);   /* m, n, terms... of the tagged GEMM */
        cv_gemm_tc<false, 128>(j.t, j.nterms, j.m, j.n, j.nb, ..., f0_gemm_f32_epi{&a_});
    }
"""

from __future__ import annotations

from cuvil_aot.compiler.codegen.cuda_emitter import CudaEmitter, CudaKernel, GpuBody
from cuvil_aot.compiler.codegen.cuda_geometry import (
    BLOCK,
    DOT_COLS,
    DOT_ROWS,
    DOT_WIDE_BLOCK,
    ENTRIES,
    GEMM_TC,
    GEMV_BLOCK,
    GEMV_ROWS,
    GEMV_ROWS_BLOCK,
)
from cuvil_aot.compiler.codegen.cuda_pieces import filled, prologue
from cuvil_aot.compiler.codegen.kernel_emitter import store_roots
from cuvil_aot.compiler.codegen.writer import Writer
from cuvil_aot.compiler.ir.group import Kind
from cuvil_aot.compiler.ir.node import Node
from cuvil_aot.compiler.ir.ops import Op

# Operand types whose every value a TF32 tensor core holds exactly (10 mantissa bits)
TF32_EXACT = ("bfloat16", "float16")


def _gemv_operands(k: CudaKernel) -> str:
    """A GEMV's terms, their count, m, n and batches, from GEMM kernel ``k``'s struct ``a``."""
    nloops = k.nloops
    batch = "a->n[0]" if nloops == 3 else "1"
    return f"a->t, {len(k.group.terms)}, a->n[{nloops - 2}], a->n[{nloops - 1}], {batch}"


def gemv_call(k: CudaKernel, mr: int, after: str = "") -> str:
    """The GEMV main loop of GEMM kernel ``k`` on its argument struct ``a``; ``after``:
    its runs of columns and the consumer that runs in its tiles (cuda_one.py)."""
    after = f", {after}" if after else ""
    return (f"cv_gemv<{k.acc_type}, {mr}>({_gemv_operands(k)}, (int)a->cols, (int)a->vec, "
            f"{k.name}_epi{{a}}{after});")


def dot_call(k: CudaKernel) -> str:
    """The dot GEMV (a transposed B: cv_gemv_dot) of GEMM kernel ``k`` on its struct ``a``."""
    return (f"cv_gemv_dot<{k.acc_type}, {DOT_ROWS}, {DOT_COLS}>({_gemv_operands(k)}, "
            f"(int)a->vec, {k.name}_epi{{a}});")


def gemm_kernels(em: CudaEmitter, w: Writer) -> None:
    """The group's epilogue functor; its main loops are its unit's (shared_gemms)."""
    k, nloops = em.k, em.nloops
    roots = list(zip(em.group.roots, em.group.dests))
    # read-only loads (cv_ld<RO>): the rows of a band that the wgmma main loop hands over
    # load first, then store; before, each row's load waited for the row above's store, and
    # the bf16 BERT layer's O projection (its epilogue adds x) took 68 us where the same
    # GEMM with a bias alone took 18 (H200)
    em.read_only = True
    body = filled(GpuBody(Writer()), lambda b: store_roots(em, b, roots))
    em.read_only = False
    loop_vars = "int64_t i0, int64_t i1, int64_t i2" if nloops == 3 else "int64_t, int64_t i0, " \
        "int64_t i1"
    # RO false: a one-kernel's phase may read what an earlier phase of its launch wrote
    w.line("template <bool RO>")
    with w.block(f"struct {k.name}_epi_t", "};"):
        w.line(f"const {k.name}_args *a;")
        with w.block(f"__device__ __forceinline__ void operator()({loop_vars}, {k.acc_type} acc) "
                     "const"):
            prologue(k, w, "int64_t")
            w.extend(body)
    w.line(f"using {k.name}_epi = {k.name}_epi_t<true>;")


# CudaKernel.loops -> the shared main loops' suffix: float32 and float64 operands, and
# bfloat16 ones accumulated in float32
LOOP_NAMES = {"float": "f32", "double": "f64", "bf16": "b16"}
# bfloat16 GEMMs run the SIMT tiles on their stored values (S = cv_bf16), or the wgmma
# main loop (cuda_wgmma.py, the bf16 kind): no GEMV, dot GEMV or mma.sync entries
B16_ENTRIES = ("tiled", "tiled64", "ksum")


def shared_name(unit: str, loops: str) -> str:
    """The GEMM main loops of ``unit`` of key ``loops`` (CudaKernel.loops): their argument
    struct, functor and entry points are named from it."""
    return f"{unit}_gemm_{LOOP_NAMES[loops]}"


def _tf32_exact(x: Node) -> bool:
    """Every value of matmul operand ``x`` is a TF32 number: rounded by the tf32 policy
    (Op.TF32), a bfloat16/float16 value or one widened from it (the bf16 and fp16
    policies), or a permutation of such (the policies round below ``w.T``:
    precision.round_operand)."""
    while x.op is Op.PERMUTE:
        x = x.srcs[0]
    return x.op is Op.TF32 or x.dtype in TF32_EXACT or \
        (x.op is Op.CAST and x.srcs[0].dtype in TF32_EXACT)


def one_tf32_product(kernels: list[CudaKernel]) -> bool:
    """The tensor-core main loops may take one TF32 product instead of three: every GEMM
    of the unit reads TF32 numbers only, whose small parts 3xTF32 would find zero (the same
    products, at twice the speed: 63-89 against 33-47 TFLOP/s on the H200)."""
    return all(_tf32_exact(s) for k in kernels for t in k.group.terms for s in t.srcs)


def entry_names(loops: str) -> tuple[str, ...]:
    """The entry points of shared GEMM main loops of key ``loops`` (cuda_geometry's order)."""
    if loops == "bf16":
        return B16_ENTRIES
    return ENTRIES[Kind.GEMM] + (GEMM_TC + GEMV_ROWS if loops == "float" else ())


def shared_entries(unit: str, loops: str) -> list[str]:
    """The entry points of a unit's shared GEMM main loops."""
    return [f"{shared_name(unit, loops)}_{e}" for e in entry_names(loops)]


def shared_struct(name: str, kernels: list[CudaKernel]) -> str:
    """The shared main loops' argument: which GEMM (its tag: its index in ``kernels``) and
    that GEMM's own arguments (the same text compiles to the same layout in C and C++)."""
    w = Writer()
    with w.block("typedef struct", f"}} {name}_args;"):
        w.line("int64_t tag;")
        with w.block("union", "} u;"):
            for tag, k in enumerate(kernels):
                w.line(f"{k.name}_args m{tag};")
    return w.text()


def shared_gemms(unit: str, kernels: list[CudaKernel]) -> str:
    """One set of main loops for every GEMM of ``unit`` that accumulates in one type: each
    is compiled once per unit, not once per GEMM (most of nvcc's time where a function has
    several matmuls), and hands the accumulators to the epilogue of the GEMM its argument's
    tag names (a switch at the one call site of the staged epilogue). A one-kernel
    (cuda_one.py) inlines its own: a call to a shared noinline GEMV read its arguments
    through generic loads, not the parameter bank, and a GPT-2 decode step took 186 us
    against 127 (H200, one run each)."""
    acc, loops = kernels[0].acc_type, kernels[0].loops
    name = shared_name(unit, loops)
    stored = ", cv_bf16" if loops == "bf16" else ""  # the SIMT tiles' operand type
    w = Writer()
    # The functor reads the arguments through their address. Holding a copy instead (each
    # field read once) measured no better: bench/gpu/wg_epi_probe.cu, H200, 2026-12-03:
    # bf16 4096^3 570-579 TFLOP/s from a copy against 648 through the pointer; the explicit
    # fields read once (the probe's val_epi) 2-8% faster, not yet what codegen writes.
    with w.block(f"struct {name}_epi", "};"):
        w.line(f"const {name}_args *a;")
        with w.block(f"__device__ __forceinline__ void operator()(int64_t b, int64_t i, int64_t j, "
                     f"{acc} acc) const"), w.block("switch (a->tag)"):
            for tag, k in enumerate(kernels):
                w.line(f"case {tag}: {k.name}_epi{{&a->u.m{tag}}}(b, i, j, acc); break;")
    # The same pick once for a run of elements (cuda_gemm_tiled.h's cv_epi_with): the
    # wgmma epilogue's rows then form one block without a branch between them.
    with w.block(f"template <class F> static __device__ __forceinline__ void "
                 f"cv_epi_with(const {name}_epi &e, F &&f)"), w.block("switch (e.a->tag)"):
        for tag, k in enumerate(kernels):
            w.line(f"case {tag}: f({k.name}_epi{{&e.a->u.m{tag}}}); break;")
    with w.block(f"static __device__ __forceinline__ cv_gemm_job {name}_job(const {name}_args *a)"):
        with w.block("switch (a->tag)"):
            for tag, k in enumerate(kernels):
                x = f"a->u.m{tag}."
                dims = f"{x}n[1], {x}n[2], {x}n[0]" if k.nloops == 3 else f"{x}n[0], {x}n[1], 1"
                w.line(f"case {tag}: return cv_gemm_job{{{x}t, {len(k.group.terms)}, {dims}, "
                       f"(int){x}split, {x}part, (int){x}cols, (int){x}vec, {x}split_row0}};")
        w.line("return cv_gemm_job{};")
    part = f"j.split, reinterpret_cast<{acc} *>(j.part)"
    epi = f"{name}_epi{{&a_}}"
    block, gemv_block = f"{BLOCK}", f"{GEMV_BLOCK}"
    tiles = f"(j.t, j.nterms, j.m, j.n, j.nb, {part}, {epi});"
    calls = {"tiled": (block, f"cv_gemm_tiled<{acc}, 128{stored}>{tiles}"),
             "tiled64": (block, f"cv_gemm_tiled<{acc}, 64{stored}>{tiles}"),
             "ksum": (block, f"cv_gemm_ksum<{acc}>(reinterpret_cast<const {acc} *>(j.part), "
                             f"j.split, j.m, j.n, j.nb, {epi}, j.row0);")}
    # three blocks per SM (80 registers): a dot GEMV block waits on one round of loads
    calls["dot"] = (f"{BLOCK}, 3", f"cv_gemv_dot<{acc}, {DOT_ROWS}, {DOT_COLS}>(j.t, j.nterms, "
                                   f"j.m, j.n, j.nb, j.vec, {epi});")
    calls["dotw"] = (f"{DOT_WIDE_BLOCK}, 1", f"cv_gemv_dot_wide<{acc}>(j.t, j.nterms, j.m, j.n, "
                                             f"j.nb, {epi});")
    for mr in (1, 4):
        calls[f"gemv{mr}"] = (gemv_block, f"cv_gemv<{acc}, {mr}>(j.t, j.nterms, j.m, j.n, j.nb, "
                                          f"j.cols, j.vec, {epi});")
    calls["gemv8"] = (f"{GEMV_ROWS_BLOCK}", f"cv_gemv_vec_rows(j.t, j.nterms, (int)j.m, "
                                            f"(int)j.n, j.nb, j.cols, {epi});")
    # two blocks per SM: cp.async stages of one overlap the other's math
    x3 = "false" if one_tf32_product(kernels) else "true"
    for suffix, bt in zip(GEMM_TC, ("false", "true")):
        calls[suffix] = (f"{BLOCK}, 2", f"cv_gemm_tc<{bt}, 64, {x3}>(j.t, j.nterms, j.m, j.n, "
                                        f"j.nb, {part}, {epi});")
    for entry_name in shared_entries(unit, loops):
        threads, call = calls[entry_name[len(name) + 1:]]
        with w.block(f'extern "C" __global__ void __launch_bounds__({threads}) '
                     f"{entry_name}(const __grid_constant__ {name}_args a_)"):
            w.line(f"const cv_gemm_job j = {name}_job(&a_);")
            w.line(call)
    return w.text()


# the entry of split-K in thread-block clusters (cv_gemm_tc_cluster): float32 main loops of
# units built for sm_90, beside their wgmma entry (gpu_plan.lower)
CLUSTER_SUFFIX = "_tcc"


def cluster_entry(name: str, kernels: list[CudaKernel]) -> str:
    """The ``_tcc`` entry of the float32 shared main loops ``name``: the tensor-core tiles
    with B N-major, k split over the blocks of a cluster (cuda_gemm_tc.h)."""
    x3 = "false" if one_tf32_product(kernels) else "true"
    w = Writer()
    with w.block(f'extern "C" __global__ void CV_TC_CLUSTER_DIMS __launch_bounds__({BLOCK}, 2) '
                 f"{name}{CLUSTER_SUFFIX}(const __grid_constant__ {name}_args a_)"):
        w.line(f"const cv_gemm_job j = {name}_job(&a_);")
        w.line(f"cv_gemm_tc_cluster<{x3}>(j.t, j.nterms, j.m, j.n, j.nb, "
               f"{name}_epi{{&a_}});")
    return w.text()


def q8_names(unit: str) -> list[str]:
    """The entry points of ``unit``'s fused int8 GEMV (cuda_q8.h's cv_gemv_q8): one row of
    x, then up to 16 four at a time."""
    return [f"{shared_name(unit, 'float')}_q8x{mr}" for mr in (1, 4)]


def q8_entry(unit: str, kernels: list[CudaKernel], int8: set[str]) -> str:
    """The fused int8 GEMV on the unit's float32 shared argument struct: the tagged GEMM's
    x and int8 weight (its ``q8`` field, where ``int8`` names it), its epilogue. Only units
    with an int8 GEMM compile it."""
    name = shared_name(unit, "float")
    w = Writer()
    for mr, entry in zip((1, 4), q8_names(unit)):
        bounds = "CV_GEMV_Q8_BLOCK, CV_GEMV_Q8_X1_BLOCKS" if mr == 1 else "CV_GEMV_Q8_BLOCK"
        with w.block(f'extern "C" __global__ void __launch_bounds__({bounds}) '
                     f"{entry}(const __grid_constant__ {name}_args a_)"):
            w.line(f"const cv_gemm_job j = {name}_job(&a_);")
            w.line("const cv_q8_weight *q = nullptr;")
            with w.block("switch (a_.tag)"):
                for tag, k in enumerate(kernels):
                    if k.name in int8:
                        w.line(f"case {tag}: q = &a_.u.m{tag}.q8; break;")
            w.line(f"if (q) cv_gemv_q8<{mr}>(j.t[0], *q, j.m, j.n, j.nb, {name}_epi{{&a_}});")
    return w.text()
