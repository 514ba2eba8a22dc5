"""Elementwise CUDA kernels: ``_s32``/``_s64``, grid-stride loops decomposing a flat
index into the loop variables (32-bit where every offset fits), and ``_flat`` where every
operand runs contiguously along the loop space and is aligned: VEC elements per step
through 16-byte (for 4-byte types) vectors. A kernel that gathers or reads an index ramp
has no ``_flat`` body: its entry runs the strided loop, and the host never picks it."""

from __future__ import annotations

from cuvil_aot.compiler.codegen import ops_c
from cuvil_aot.compiler.codegen.cuda_emitter import CudaEmitter, GpuBody
from cuvil_aot.compiler.codegen.cuda_geometry import BLOCK, VEC
from cuvil_aot.compiler.codegen.cuda_pieces import (
    decompose,
    entry,
    filled,
    product,
    prologue,
    sizes,
)
from cuvil_aot.compiler.codegen.kernel_emitter import store_roots
from cuvil_aot.compiler.codegen.writer import Writer


def elementwise_kernels(em: CudaEmitter, w: Writer) -> None:
    """The span function (also run by the one-kernel, cuda_one.py) and the entry points."""
    k, nloops = em.k, em.nloops
    roots = list(zip(em.group.roots, em.group.dests))
    strided = filled(GpuBody(Writer()), lambda b: store_roots(em, b, roots))
    # a gather's table is never read at the flat index, nor a ramp at its loop variables
    strided_only = bool(k.gathers) or k.ramps
    scalar = None if strided_only else filled(GpuBody(Writer(), flat=True),
                                         lambda b: store_roots(em, b, roots))
    lanes = [] if strided_only else [GpuBody(Writer(), lane=lane) for lane in range(VEC)]
    for body in lanes:
        store_roots(em, body, roots)
    with w.block(f"template <class I> static __device__ __forceinline__ void "
                 f"{k.name}_span(const {k.name}_args *a, I first, I end, I step)"):
        prologue(k, w, "I")
        sizes(k, w, "I")
        with w.block("for (I t = first; t < end; t += step)"):
            decompose(w, list(range(nloops)), "t", "I")
            w.extend(strided)
    with w.block(f"template <class I> static __device__ __forceinline__ void "
                 f"{k.name}_strided(const {k.name}_args *a)"):
        total = " * ".join(f"(I)a->n[{v}]" for v in range(nloops))
        w.line(f"{k.name}_span<I>(a, (I)(blockIdx.x * blockDim.x + threadIdx.x), {total}, "
               "(I)(gridDim.x * blockDim.x));")
    entry(w, k, "s32", f"{BLOCK}", f"{k.name}_strided<int32_t>(a);")
    entry(w, k, "s64", f"{BLOCK}", f"{k.name}_strided<int64_t>(a);")
    if scalar is None:  # never launched (gpu_launch._flat_condition), but correct
        entry(w, k, "flat", f"{BLOCK}", f"{k.name}_strided<int64_t>(a);")
        return
    with w.block(f'extern "C" __global__ void __launch_bounds__({BLOCK}) '
                 f"{k.name}_flat(const __grid_constant__ {k.name}_args a_)"):
        w.line(f"const {k.name}_args *a = &a_;")
        prologue(k, w, "int64_t", strides=False)
        sizes(k, w, "int64_t")
        w.line(f"const int64_t total = {product(list(range(nloops)))};")
        w.line("const int64_t step = (int64_t)gridDim.x * blockDim.x;")
        w.line("const int64_t first = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;")
        with w.block(f"for (int64_t q = first; q < total / {VEC}; q += step)"):
            _vector_step(em, w, lanes)
        with w.block(f"for (int64_t t = total / {VEC} * {VEC} + first; t < total; t += step)"):
            w.extend(scalar)


def _vector_step(em: CudaEmitter, w: Writer, lanes: list[GpuBody]) -> None:
    w.line(f"const int64_t t = q * {VEC};")
    used = sorted(lanes[0].used)
    for j in used:
        op = em.k.operands[j]
        vec = f"cv_vec<{ops_c.STORAGE[op.dtype]}, {VEC}>"
        if op.dest is None:
            w.line(f"const {vec} L{j} = *reinterpret_cast<const {vec} *>(p{j} + t);")
        else:
            w.line(f"{vec} S{j};")
    for body in lanes:
        with w.block(""):
            w.extend(body.w)
    for j in used:
        op = em.k.operands[j]
        if op.dest is not None:
            vec = f"cv_vec<{ops_c.STORAGE[op.dtype]}, {VEC}>"
            w.line(f"*reinterpret_cast<{vec} *>(p{j} + t) = S{j};")
