"""GEMM CUDA kernels: the group's epilogue functor, run on finished accumulators, and the
entry points of the main loops of cuda_gemm.h: ``_tiled`` (128x128 tiles), ``_tiled64``,
``_gemv1``, ``_gemv4`` (at one row per tile the GEMV reads float32 weights as float4 where
they are contiguous and aligned), ``_ksum`` (adds split-K partial sums) and, for float32,
``_tc``/``_tct`` (3xTF32 on tensor cores, 128x128 tiles) and their 64-row versions."""

from __future__ import annotations

from cuvil_aot.compiler.codegen.cuda_emitter import CudaEmitter, CudaKernel, GpuBody
from cuvil_aot.compiler.codegen.cuda_geometry import BLOCK, GEMM_TC, GEMV_BLOCK
from cuvil_aot.compiler.codegen.cuda_pieces import entry, filled, prologue
from cuvil_aot.compiler.codegen.kernel_emitter import store_roots
from cuvil_aot.compiler.codegen.writer import Writer


def gemv_call(k: CudaKernel, mr: int, after: str = "") -> str:
    """The GEMV main loop of GEMM kernel ``k`` on its argument struct ``a``; ``after``:
    its runs of columns and the consumer that runs in its tiles (cuda_one.py)."""
    nloops = k.nloops
    batch = "a->n[0]" if nloops == 3 else "1"
    after = f", {after}" if after else ""
    return (f"cv_gemv<{k.acc_type}, {mr}>(a->t, {len(k.group.terms)}, a->n[{nloops - 2}], "
            f"a->n[{nloops - 1}], {batch}, (int)a->cols, (int)a->vec, {k.name}_epi{{a}}"
            f"{after});")


def gemm_kernels(em: CudaEmitter, w: Writer) -> None:
    """The epilogue functor, then every entry point (the host picks one per call)."""
    k, nloops = em.k, em.nloops
    roots = list(zip(em.group.roots, em.group.dests))
    body = filled(GpuBody(Writer()), lambda b: store_roots(em, b, roots))
    acc = k.acc_type
    loop_vars = "int64_t i0, int64_t i1, int64_t i2" if nloops == 3 else "int64_t, int64_t i0, " \
        "int64_t i1"
    with w.block(f"struct {k.name}_epi", "};"):
        w.line(f"const {k.name}_args *a;")
        with w.block(f"__device__ __forceinline__ void operator()({loop_vars}, {acc} acc) const"):
            prologue(k, w, "int64_t")
            w.extend(body)
    m, n = f"a->n[{nloops - 2}]", f"a->n[{nloops - 1}]"
    batch = "a->n[0]" if nloops == 3 else "1"
    nterms = len(em.group.terms)
    part = f"(int)a->split, reinterpret_cast<{acc} *>(a->part)"
    for suffix, tile in (("tiled", 128), ("tiled64", 64)):
        entry(w, k, suffix, f"{BLOCK}", f"cv_gemm_tiled<{acc}, {tile}>(a->t, {nterms}, {m}, "
               f"{n}, {batch}, {part}, {k.name}_epi{{a}});")
    for mr in (1, 4):
        entry(w, k, f"gemv{mr}", f"{GEMV_BLOCK}", gemv_call(k, mr))
    entry(w, k, "ksum", f"{BLOCK}", f"cv_gemm_ksum<{acc}>(reinterpret_cast<const {acc} *>("
           f"a->part), (int)a->split, {m}, {n}, {batch}, {k.name}_epi{{a}});")
    if acc == "float":  # two blocks per SM: cp.async stages of one overlap the other's math
        for suffix, bt, rows in zip(GEMM_TC, ("false", "true") * 2, (128, 128, 64, 64)):
            entry(w, k, suffix, f"{BLOCK}, 2", f"cv_gemm_tc<{bt}, {rows}>(a->t, {nterms}, {m}, "
                   f"{n}, {batch}, {part}, {k.name}_epi{{a}});")
