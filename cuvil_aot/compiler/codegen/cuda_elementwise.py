"""Elementwise CUDA kernels: ``_s32``/``_s64``, grid-stride loops decomposing a flat
index into the loop variables (32-bit where every offset fits), ``_flat`` where every
operand runs contiguously along the loop space and is aligned: VEC elements per step
through 16-byte (for 4-byte types) vectors, and ``_v32`` where every operand runs
contiguously along the last loop variable only (a slice, a concatenation, a transpose
that keeps the last axis: GPT-2's KV cache grown by ``np.concatenate``): VEC elements of
that variable per step, the others decomposed once a vector. A kernel that gathers or
reads an index ramp has neither vector body (nor ``_v32`` one with an operand broadcast
along the last variable): its entries run the strided loop, and the host never picks
them (flat_condition, last_condition: the host's choice, in gpu_launch.py)."""

from __future__ import annotations

from collections.abc import Callable

from cuvil_aot.compiler.codegen import ops_c
from cuvil_aot.compiler.codegen.cuda_emitter import CudaEmitter, CudaKernel, GpuBody
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
    if scalar is None:  # never launched (flat_condition), but correct
        entry(w, k, "flat", f"{BLOCK}", f"{k.name}_strided<int64_t>(a);")
        entry(w, k, "v32", f"{BLOCK}", NEVER)
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
            w.line(f"const int64_t t = q * {VEC};")
            _vector_step(em, w, lanes, lambda j: "t")
        with w.block(f"for (int64_t t = total / {VEC} * {VEC} + first; t < total; t += step)"):
            w.extend(scalar)
    _vector_strided(em, w, lanes)


# the body of an entry the host never picks: no time spent compiling a copy of another's
NEVER = "__trap();"


def along_last(k: CudaKernel) -> bool:
    """A ``_v32`` body exists: at least two loop variables (one is ``_flat``'s or the
    strided loop's), every operand along the last, no gather or ramp."""
    last = k.nloops - 1
    return last >= 1 and not (k.gathers or k.ramps) and \
        all(last in op.support() for op in k.operands)


def _vector_strided(em: CudaEmitter, w: Writer, lanes: list[GpuBody]) -> None:
    """``_v32``: a step per VEC elements of the last loop variable (32-bit offsets, every
    operand's last stride 1, its other strides and its pointer multiples of VEC elements:
    the host checked), the same lanes as ``_flat``'s."""
    k, last = em.k, em.nloops - 1
    if not along_last(k):  # never launched (last_condition)
        entry(w, k, "v32", f"{BLOCK}", NEVER)
        return
    with w.block(f'extern "C" __global__ void __launch_bounds__({BLOCK}) '
                 f"{k.name}_v32(const __grid_constant__ {k.name}_args a_)"):
        w.line(f"const {k.name}_args *a = &a_;")
        prologue(k, w, "int32_t")
        sizes(k, w, "int32_t")
        w.line(f"const int32_t nv = n{last} / {VEC}, total = {product(list(range(last)))} * nv;")
        w.line("const int32_t step = (int32_t)(gridDim.x * blockDim.x);")
        with w.block("for (int32_t q = (int32_t)(blockIdx.x * blockDim.x + threadIdx.x); "
                     "q < total; q += step)"):
            w.line("int32_t rem = q;")
            w.line(f"const int32_t i{last} = rem % nv * {VEC}; rem /= nv;")
            for axis in range(last - 1, 0, -1):
                w.line(f"const int32_t i{axis} = rem % n{axis}; rem /= n{axis};")
            if last > 0:
                w.line("const int32_t i0 = rem;")
            where = GpuBody(Writer())
            _vector_step(em, w, lanes, lambda j: f"({em.offset(j, where)})")


def _vector_step(em: CudaEmitter, w: Writer, lanes: list[GpuBody],
                 at: Callable[[int], str]) -> None:
    """One step of VEC lanes: operand j's vector at element offset ``at(j)``."""
    used = sorted(lanes[0].used)
    for j in used:
        op = em.k.operands[j]
        vec = f"cv_vec<{ops_c.STORAGE[op.dtype]}, {VEC}>"
        if op.dest is None:
            w.line(f"const {vec} L{j} = *reinterpret_cast<const {vec} *>(p{j} + {at(j)});")
        else:
            w.line(f"{vec} S{j};")
    for body in lanes:
        with w.block(""):
            w.extend(body.w)
    for j in used:
        op = em.k.operands[j]
        if op.dest is not None:
            vec = f"cv_vec<{ops_c.STORAGE[op.dtype]}, {VEC}>"
            w.line(f"*reinterpret_cast<{vec} *>(p{j} + {at(j)}) = S{j};")


def flat_condition(w: Writer, k: CudaKernel) -> None:
    """Every operand steps through memory exactly as the flat index, and is aligned."""
    nloops = k.nloops
    w.line(f"const int64_t c{nloops - 1} = 1;")
    for v in range(nloops - 2, -1, -1):
        w.line(f"const int64_t c{v} = c{v + 1} * a.n[{v + 1}];")
    conds = []
    for j, op in enumerate(k.operands):
        storage = ops_c.STORAGE[op.dtype]
        conds.append(f"(uintptr_t)a.p[{j}] % ({VEC} * sizeof({storage})) == 0")
        conds += [f"(a.n[{v}] == 1 || a.s[{j}][{v}] == c{v})" for v in range(nloops)]
    if k.gathers or k.ramps:  # a table's offsets come from the data, a ramp's value
        # from the loop variables: never from the flat index
        conds = ["0"]
    w.line(f"const int flat = {' && '.join(conds) or '1'};")


def last_condition(w: Writer, k: CudaKernel) -> None:
    """``last``: not flat, but every operand steps by 1 along the last loop variable, whose
    size is a multiple of VEC, its other strides (along variables longer than 1) and its
    alignment VEC elements, in 32-bit offsets (``_v32``)."""
    last = k.nloops - 1
    conds = ["!flat", "fits", f"a.n[{last}] % {VEC} == 0"]
    for j, op in enumerate(k.operands):
        storage = ops_c.STORAGE[op.dtype]
        conds.append(f"(uintptr_t)a.p[{j}] % ({VEC} * sizeof({storage})) == 0")
        conds += [f"(a.n[{v}] == 1 || a.s[{j}][{v}] % {VEC} == 0)"  # 1: i{v} is 0
                  for v in op.support() if v != last]
        conds.append(f"a.s[{j}][{last}] == 1")
    if not along_last(k):  # no _v32 body
        conds = ["0"]
    w.line(f"const int last = {' && '.join(conds)};")
