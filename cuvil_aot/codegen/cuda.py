"""GPU kernels in CUDA C++, one per fusion group, all in one source per module.

A kernel takes one by-value argument: a struct laid out alike in C and C++
(``int64_t``s, pointers, doubles) that the host wrapper (gpu_wrapper.py)
fills as the CPU wrapper fills its kernels' arguments (launch.py): each
operand is a base pointer plus one element stride per loop variable, from the
access's index map. Expressions come from the CPU emitter (c.py); CudaEmitter
overrides what differs: the op table (ops_cuda.py), offsets, vector lanes
and the GEMM accumulator.

Each group has a few entry points (``extern "C"``) that the host picks from:

- elementwise: ``_s32``/``_s64``, grid-stride loops decomposing a flat index
  into the loop variables, in 32-bit arithmetic when every offset fits;
  ``_flat`` when every operand runs contiguously along the loop space and is
  aligned: 4 elements per step through 16-byte (for 4-byte types) vectors;
- row: ``_w32``/``_w64`` one warp per row, ``_b32``/``_b64`` one block per
  row (long rows, or few rows); the stages reduce with shuffles, then the roots
  are stored; ``_bc32`` (a block per row) keeps up to 16 elements per thread in
  registers, and every value of an element a pass computes, so a row of up to 4096 is
  read once and exp(x - max) computed once; ``_bcu32`` is ``_bc32`` where every operand
  that runs along the row does so contiguously (the row's stride a constant 1) and in
  aligned runs of 4: a thread's elements come in runs of 4 through 16-byte (for 4-byte
  types) vectors;
  ``_q32`` gives each of many short rows (up to 64) 8 lanes of a warp;
- GEMM: ``_tiled`` (128x128 tiles), ``_tiled64``, ``_gemv1``, ``_gemv4`` (main
  loops in cuda_gemm.h; at one row per tile the GEMV reads float32 weights as float4
  where they are contiguous and aligned), and for float32 ``_tc``/``_tct`` (3xTF32 on tensor
  cores, 128x128 tiles), all calling the group's epilogue functor on finished
  accumulators.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from cuvil_aot.codegen import ops_c, ops_cuda
from cuvil_aot.codegen.c import (
    Kernel,
    KernelEmitter,
    _Body,
    _dest_map,
    _extreme,
    _scalar_dtype,
    _store_roots,
)
from cuvil_aot.codegen.c_row import reciprocals
from cuvil_aot.codegen.writer import Writer
from cuvil_aot.ir.group import Dest, Group, Kind
from cuvil_aot.ir.indexing import IndexMap, identity
from cuvil_aot.ir.node import Node
from cuvil_aot.ir.ops import Op
from cuvil_aot.ir.types import Shape

BLOCK = 256  # elementwise, warp-per-row and tiled GEMM blocks
# Block-per-row teams. Measured on the H200 (softmax 4096 x 4096; bench/gpu/gpu_rows.md):
# re-reading the row from L1 takes 61-68 us with 256 threads (67 with 512, 115 with 1024);
# the cached kernel (row and exp in registers, loads as selects so a pass's loads overlap,
# x * (1/sum)) 42 us, against 35.7 for a hand-written kernel of the same plan.
ROW_BLOCK = 256
GEMV_BLOCK = 1024
VEC = 4  # elements per step of a _flat kernel
# Many rows of up to 64 (a pooling's 7 x 7): 8 lanes per row. A warp per row has one
# row's loads in flight per warp: the ResNet head's pooling at batch 256 (26 MB) took
# 21.1 us so, 8.5 with 8 lanes per row (CUPTI, bench/gpu/h200_2026-11-30c/).
QUARTER = 8
SHORT_ROW = 64
ENTRIES = {Kind.ELEMENTWISE: ("s32", "s64", "flat"),
           Kind.ROW: ("w32", "w64", "b32", "b64", "bc32", "bcu32", "q32"),
           Kind.GEMM: ("tiled", "tiled64", "gemv1", "gemv4", "ksum")}
# float32 only: tensor cores, B with n (tc) or k (tct) contiguous; tiles of 128 or 64 rows
GEMM_TC = ("tc", "tct", "tc64", "tct64")
HEADER = '#include <cooperative_groups.h>\n#include "cuvil_aot/cuda_gemm.h"\n'


@dataclass
class CudaKernel(Kernel):
    @property
    def entries(self) -> list[str]:
        names = ENTRIES[self.group.kind]
        if self.group.kind is Kind.GEMM and self.acc_type == "float":
            names += GEMM_TC
        return [f"{self.name}_{e}" for e in names]

    @property
    def acc_type(self) -> str:
        return ops_c.CTYPE[self.group.terms[0].dtype]


class _GpuBody(_Body):
    """A body region; ``flat``: every offset is the flat index ``t``; ``lane``: values move
    through the vectors ``L{j}``/``S{j}`` of a _flat kernel's step."""

    def __init__(self, w: Writer, flat: bool = False, lane: int | None = None,
                 in_row: bool = False):
        super().__init__(w, False, None)
        self.flat, self.lane, self.in_row = flat, lane, in_row


class CudaEmitter(KernelEmitter):
    def __init__(self, name: str, group: Group, buffers: set[int]):
        super().__init__(name, group, buffers)
        self.k: CudaKernel = CudaKernel(name, group)
        self.row_cache: _RowCache | None = None  # set while a cached row kernel is emitted

    def render(self, op: Op, dtype: str, args: list[str]) -> str:
        return ops_cuda.render(op, dtype, args)

    def accumulator(self) -> str:
        return "acc"

    def offset(self, j: int, body: _Body) -> str:
        body.used.add(j)
        if isinstance(body, _GpuBody) and body.flat:
            return "t"
        return super().offset(j, body)

    def expr(self, node: Node, m: IndexMap, body: _Body) -> str:
        """In a cached row kernel, every value of a row's element that a pass computes is
        also kept in registers, so later passes reuse it (softmax: exp once)."""
        cache = self.row_cache
        if cache is None or not isinstance(body, _GpuBody) or not body.in_row:
            return super().expr(node, m, body)
        key = (id(node), m)
        if key in cache.done:
            return f"{cache.done[key]}[r]"
        if key in body.memo:
            return body.memo[key]
        if id(node) in self.recips:  # x / d as x * (1 / d): see _full_pass
            x = self.expr(node.srcs[0], m, body)
            value = body.local(ops_c.CTYPE[node.dtype], f"{x} * {self.recips[id(node)][0]}")
            body.memo[key] = value
        else:
            value = super().expr(node, m, body)
        if node.op is not Op.CONST and value.startswith("v"):  # a local: computed or loaded
            name = f"cv{len(cache.types)}"
            cache.types[name] = ops_c.CTYPE[node.dtype]
            cache.pending[key] = name
            body.w.line(f"{name}[r] = {value};")
        return value

    def load(self, base: Node, view: Shape | None, m: IndexMap, body: _Body) -> str:
        j = self.operand(base, view, m)
        if isinstance(body, _GpuBody) and body.lane is not None:
            body.used.add(j)
            return body.local(ops_c.CTYPE[base.dtype], f"L{j}.v[{body.lane}]")
        if _predicated(self, body):  # a select, not a branch: the loads of a pass overlap
            ctype, offset = ops_c.CTYPE[base.dtype], self.offset(j, body)
            scalar = f"in ? ({ctype})p{j}[{offset}] : ({ctype})0"
            if not self._along_row(j):
                return body.local(ctype, scalar)
            vec, vtype = self._run_vector(j)
            body.w.line(f"if (V > 1 && r % V == 0) {vec} = in ? *reinterpret_cast<const {vtype} *>"
                        f"(&p{j}[{offset}]) : {vtype}{{}};")
            return body.local(ctype, f"V > 1 ? ({ctype}){vec}.v[r % V] : {scalar}")
        return super().load(base, view, m, body)

    def _along_row(self, j: int) -> bool:
        """Operand j runs along the row: in ``_bcu32`` contiguously, in runs of V."""
        axis = unit_axis(self.k)
        return axis is not None and axis in self.k.operands[j].support()

    def _run_vector(self, j: int) -> tuple[str, str]:
        """The vector register (name, C type) through which a cached row kernel moves
        operand j's runs."""
        assert self.row_cache is not None
        name, vtype = f"q{j}", f"cv_vec<{ops_c.STORAGE[self.k.operands[j].dtype]}, V>"
        self.row_cache.vectors[name] = vtype
        return name, vtype

    def store(self, root: Node, dest: Dest, m: IndexMap, value: str, body: _Body) -> None:
        if _predicated(self, body):
            j = self.operand(dest.buffer, None, _dest_map(root, dest, m), dest)
            if self._along_row(j):
                (vec, vtype), offset = self._run_vector(j), self.offset(j, body)
                with body.w.block("if (V > 1)"):  # the run's last element stores the run
                    body.w.line(f"{vec}.v[r % V] = ({ops_c.STORAGE[dest.buffer.dtype]})({value});")
                    body.w.line(f"if (r % V == V - 1 && in) *reinterpret_cast<{vtype} *>"
                                f"(&p{j}[{offset}] - (V - 1)) = {vec};")
                body.w.line("else if (in)")
            else:
                body.w.line("if (in)")
            body.w.level += 1
            super().store(root, dest, m, value, body)
            body.w.level -= 1
            return
        if isinstance(body, _GpuBody) and body.lane is not None:
            j = self.operand(dest.buffer, None, _dest_map(root, dest, m), dest)
            body.used.add(j)
            storage = ops_c.STORAGE[dest.buffer.dtype]
            body.w.line(f"S{j}.v[{body.lane}] = ({storage})({value});")
            return
        super().store(root, dest, m, value, body)


def _predicated(em: CudaEmitter, body: _Body) -> bool:
    """A pass of a cached row kernel: it runs for every register slot r, and `in` says
    whether slot r holds an element of the row (loads, folds and stores respect it)."""
    return em.row_cache is not None and isinstance(body, _GpuBody) and body.in_row


def emit_kernel(name: str, group: Group, buffers: set[int]) -> CudaKernel:
    em = CudaEmitter(name, group, buffers)
    w = Writer()
    {Kind.ELEMENTWISE: _elementwise, Kind.ROW: _rows, Kind.GEMM: _gemm}[group.kind](em, w)
    em.k.code = w.text()
    decl = Writer()
    args_struct(em.k, decl)
    em.k.struct = decl.text()
    return em.k


def args_struct(k: CudaKernel, w: Writer) -> None:
    """The argument struct: the same text compiles to the same layout in C and C++."""
    nops = max(1, len(k.operands))
    with w.block("typedef struct", f"}} {k.name}_args;"):
        w.line(f"int64_t n[{k.nloops}];")
        w.line(f"char *p[{nops}];")
        w.line(f"int64_t s[{nops}][{k.nloops}];")
        if k.group.kind is Kind.GEMM:
            w.line(f"cv_gpu_term t[{len(k.group.terms)}];")
            w.line("int64_t cols;  /* columns per block of the GEMV main loop */")
            w.line("int64_t vec;  /* 1: the GEMV reads B as float4 */")
            w.line("int64_t split;  /* > 1: k in chunks, partial sums in part (_ksum adds) */")
            w.line("char *part;")
        for pname, node in sorted(k.scalars.items()):
            w.line(f"{ops_c.CTYPE[_scalar_dtype(node)]} arg_{pname};")
        for sym in sorted(k.symbols):
            w.line(f"int64_t sym_{sym};")


def source(kernels: list[CudaKernel], ones: Sequence[str] = ()) -> str:
    """The module's CUDA source: the header, every argument struct, every kernel, then
    the one-kernel versions of multi-kernel calls (``ones``, see cuda_one.py)."""
    return HEADER + "".join(k.struct for k in kernels) + "".join(k.code for k in kernels) + \
        "".join(ones)


def gemv_call(k: CudaKernel, mr: int, after: str = "") -> str:
    """The GEMV main loop of GEMM kernel ``k`` on its argument struct ``a``; ``after``:
    its runs of columns and the consumer that runs in its tiles (cuda_one.py)."""
    nloops = k.nloops
    batch = "a->n[0]" if nloops == 3 else "1"
    after = f", {after}" if after else ""
    return (f"cv_gemv<{k.acc_type}, {mr}>(a->t, {len(k.group.terms)}, a->n[{nloops - 2}], "
            f"a->n[{nloops - 1}], {batch}, (int)a->cols, (int)a->vec, {k.name}_epi{{a}}"
            f"{after});")


# Pieces ------------------------------------------------------------------------------

def _prologue(k: CudaKernel, w: Writer, index: str, strides: bool = True,
              unit: int | None = None) -> None:
    """Each operand's pointer and strides; along loop variable ``unit`` the stride is the
    constant 1 where the template parameter UNIT says so (the host checked it)."""
    for j, op in enumerate(k.operands):
        const = "" if op.dest is not None else "const "
        storage = ops_c.STORAGE[op.dtype]
        w.line(f"{const}{storage} *__restrict__ p{j} = ({const}{storage} *)a->p[{j}];")
        for v in op.support() if strides else ():
            value = f"({index})a->s[{j}][{v}]"
            if v == unit:
                value = f"UNIT ? ({index})1 : {value}"
            w.line(f"const {index} s{j}_{v} = {value};")


def _sizes(k: CudaKernel, w: Writer, index: str) -> None:
    for v in range(k.nloops):
        w.line(f"const {index} n{v} = ({index})a->n[{v}]; (void)n{v};")


def _product(axes: list[int]) -> str:
    return " * ".join(f"n{v}" for v in axes) or "1"


def _decompose(w: Writer, axes: list[int], flat: str, index: str) -> None:
    """Loop variables i{axis} from a flat index over ``axes`` (last fastest)."""
    if not axes:
        return
    w.line(f"{index} rem = {flat};")
    for axis in reversed(axes[1:]):
        w.line(f"const {index} i{axis} = rem % n{axis}; rem /= n{axis};")
    w.line(f"const {index} i{axes[0]} = rem;")
    w.line(" ".join(f"(void)i{axis};" for axis in axes))


def _entry(w: Writer, k: CudaKernel, suffix: str, threads: str, call: str) -> None:
    with w.block(f'extern "C" __global__ void __launch_bounds__({threads}) '
                 f"{k.name}_{suffix}(const __grid_constant__ {k.name}_args a_)"):
        w.line(f"const {k.name}_args *a = &a_;")
        w.line(call)


def _fill(body: _GpuBody, fill: Callable[[_GpuBody], None]) -> Writer:
    fill(body)
    return body.w


# Elementwise ---------------------------------------------------------------------------

def _elementwise(em: CudaEmitter, w: Writer) -> None:
    k, nloops = em.k, em.nloops
    roots = list(zip(em.group.roots, em.group.dests))
    strided = _fill(_GpuBody(Writer()), lambda b: _store_roots(em, b, roots))
    scalar = _fill(_GpuBody(Writer(), flat=True), lambda b: _store_roots(em, b, roots))
    lanes = [_GpuBody(Writer(), lane=lane) for lane in range(VEC)]
    for body in lanes:
        _store_roots(em, body, roots)
    with w.block(f"template <class I> static __device__ __forceinline__ void "
                 f"{k.name}_span(const {k.name}_args *a, I first, I end, I step)"):
        _prologue(k, w, "I")
        _sizes(k, w, "I")
        with w.block("for (I t = first; t < end; t += step)"):
            _decompose(w, list(range(nloops)), "t", "I")
            w.extend(strided)
    with w.block(f"template <class I> static __device__ __forceinline__ void "
                 f"{k.name}_strided(const {k.name}_args *a)"):
        total = " * ".join(f"(I)a->n[{v}]" for v in range(nloops))
        w.line(f"{k.name}_span<I>(a, (I)(blockIdx.x * blockDim.x + threadIdx.x), {total}, "
               "(I)(gridDim.x * blockDim.x));")
    _entry(w, k, "s32", f"{BLOCK}", f"{k.name}_strided<int32_t>(a);")
    _entry(w, k, "s64", f"{BLOCK}", f"{k.name}_strided<int64_t>(a);")
    with w.block(f'extern "C" __global__ void __launch_bounds__({BLOCK}) '
                 f"{k.name}_flat(const __grid_constant__ {k.name}_args a_)"):
        w.line(f"const {k.name}_args *a = &a_;")
        _prologue(k, w, "int64_t", strides=False)
        _sizes(k, w, "int64_t")
        w.line(f"const int64_t total = {_product(list(range(nloops)))};")
        w.line("const int64_t step = (int64_t)gridDim.x * blockDim.x;")
        w.line("const int64_t first = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;")
        with w.block(f"for (int64_t q = first; q < total / {VEC}; q += step)"):
            _vector_step(em, w, lanes)
        with w.block(f"for (int64_t t = total / {VEC} * {VEC} + first; t < total; t += step)"):
            w.extend(scalar)


def _vector_step(em: CudaEmitter, w: Writer, lanes: list[_GpuBody]) -> None:
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


# Rows ----------------------------------------------------------------------------------

REDUCE_INIT = {Op.SUM: "0", Op.PROD: "1"}
REDUCE_OP = {Op.SUM: "cv_op_sum", Op.PROD: "cv_op_prod", Op.MAX: "cv_op_max",
             Op.MIN: "cv_op_min"}


ROW_CACHE = 16  # elements per thread a cached block-per-row kernel keeps in registers
ROW_RUN = 4  # _bcu32: a thread's elements in runs of 4, moved as one vector each


@dataclass
class _RowCache:
    """Values of a row's elements kept in register arrays ``cv{n}[r]``, by (node, index
    map): ``done`` by an earlier pass (readable), ``pending`` by the current one."""

    done: dict[tuple[int, IndexMap], str] = field(default_factory=dict)
    pending: dict[tuple[int, IndexMap], str] = field(default_factory=dict)
    types: dict[str, str] = field(default_factory=dict)  # array name -> element C type
    vectors: dict[str, str] = field(default_factory=dict)  # a run's vector -> its C type


def unit_axis(k: CudaKernel) -> int | None:
    """The loop variable along a row when the row is one axis, else None (``_bcu32`` is
    then never launched)."""
    reduced = list(k.group.space.reduce_axes)
    return reduced[0] if len(reduced) == 1 else None


def _rows(em: CudaEmitter, w: Writer) -> None:
    """TEAM: 32 (a warp per row), 8 (a quarter warp per row: four short rows' loads in
    flight per warp), 0 (a block of any size per row) or the block size.
    ``_bcu32`` has both the block size and the row's stride as constants, so a thread's R
    loads are one address plus immediates: the generated softmax then issues as few
    instructions as a hand-written one (PTX: 719 against 890 for ``_bc32``, 671 by hand).
    ``_bc32`` keeps a run-time team: with a constant one ptxas precomputes the R strided
    addresses into 96 registers (64 otherwise), halving the blocks an SM holds."""
    k = em.k
    unit = unit_axis(k)
    plain, cached = _row_passes(em, cache=False), _row_passes(em, cache=True)
    for name, params, inner, row_unit in (
            (f"{k.name}_rows", "class I, int TEAM", plain, None),
            (f"{k.name}_rows_c", "class I, int TEAM, int R, bool UNIT, int V", cached, unit)):
        with w.block(f"template <{params}> static __device__ __forceinline__ void "
                     f"{name}(const {k.name}_args *a)"):
            _row_prologue(em, w, row_unit)
            with w.block("for (I row = first; row < rows; row += (I)gridDim.x * teams)"):
                _decompose(w, list(em.group.space.kept_axes), "row", "I")
                w.extend(inner)
    for suffix, index, team, threads in (("w32", "int32_t", 32, BLOCK),
                                         ("w64", "int64_t", 32, BLOCK),
                                         ("b32", "int32_t", 0, ROW_BLOCK),
                                         ("b64", "int64_t", 0, ROW_BLOCK)):
        _entry(w, k, suffix, f"{threads}", f"{k.name}_rows<{index}, {team}>(a);")
    _entry(w, k, "q32", f"{BLOCK}", f"{k.name}_rows<int32_t, {QUARTER}>(a);")
    _entry(w, k, "bc32", f"{ROW_BLOCK}",
           f"{k.name}_rows_c<int32_t, 0, {ROW_CACHE}, false, 1>(a);")
    unit_call = f"{k.name}_rows_c<int32_t, {ROW_BLOCK}, {ROW_CACHE}, true, {ROW_RUN}>(a);"
    _entry(w, k, "bcu32", f"{ROW_BLOCK}",  # the host never picks it for a row of several axes
           unit_call if unit is not None else "__trap();")


def _row_prologue(em: CudaEmitter, w: Writer, unit: int | None) -> None:
    space = em.group.space
    _prologue(em.k, w, "I", unit=unit)
    _sizes(em.k, w, "I")
    w.line(f"const I rows = {_product(list(space.kept_axes))}, "
           f"len = {_product(list(space.reduce_axes))}; (void)len;")
    w.line("constexpr int LANES = cv_team_in_warp<TEAM> ? TEAM : 0;  /* a team in a warp */")
    w.line("const I team = TEAM ? (I)TEAM : (I)blockDim.x;")
    w.line("const I tid = (I)(LANES ? threadIdx.x % LANES : threadIdx.x);")
    w.line("const I teams = (I)(LANES ? blockDim.x / LANES : 1); (void)team;")
    w.line("const I first = (I)blockIdx.x * teams + (I)(LANES ? threadIdx.x / LANES : 0);")


def _row_passes(em: CudaEmitter, cache: bool) -> Writer:
    """The stages, then the roots, of one row. With ``cache``, each thread owns elements
    j = tid + r * team (r < R), and every value of an element that a pass loads or computes
    stays in registers for the later passes (CudaEmitter.expr): the row is read from
    memory once and exp(x - max) computed once."""
    space = em.group.space
    reduced = list(space.reduce_axes)
    pairs = list(zip(em.group.roots, em.group.dests))
    em.row_cache = _RowCache() if cache else None
    inner = Writer()
    for n, stage in enumerate(em.group.stages):
        _stage(em, inner, n, stage, reduced)
    if per_row := [(r, d) for r, d in pairs if r.shape != space.shape]:
        with inner.block("if (tid == 0)"):
            _store_roots(em, _GpuBody(inner), per_row)
    if full := [(r, d) for r, d in pairs if r.shape == space.shape]:
        _full_pass(em, inner, reduced, full)
    if em.row_cache is None:
        return inner
    decls = Writer()
    for name, ctype in em.row_cache.types.items():  # arrays no pass reads are dropped by ptxas
        decls.line(f"{ctype} {name}[R];")
    for name, vtype in em.row_cache.vectors.items():
        decls.line(f"{vtype} {name}; (void){name};")
    decls.extend(inner)
    em.row_cache = None
    return decls


def _full_pass(em: CudaEmitter, w: Writer, reduced: list[int],
               full: list[tuple[Node, Dest]]) -> None:
    """The pass that stores the full-shape roots. In a cached kernel, a division by a
    per-row value (softmax's sum) multiplies by its reciprocal where that is within
    ~1.5 ulp (c_row.reciprocals), else divides: one branch per row, not per element
    (softmax 4096 x 4096 on the H200: 49 -> 42.7 us, bench/gpu/gpu_rows.md)."""
    if em.row_cache is not None:
        reciprocals(em, w, full)
    def roots() -> _GpuBody:
        body = _GpuBody(Writer(), in_row=True)
        _store_roots(em, body, full)
        return body

    oks = [ok for _, ok in em.recips.values()]
    if not oks:
        _row_loop(em, w, reduced, roots())
        return
    fast = roots()
    em.recips.clear()
    divide = roots()
    with w.block(f"if ({' && '.join(oks)})"):
        _row_loop(em, w, reduced, fast)
    with w.block("else"):
        _row_loop(em, w, reduced, divide)


def _row_loop(em: CudaEmitter, w: Writer, reduced: list[int], body: _GpuBody) -> None:
    if em.row_cache is None:
        with w.block("for (I j = tid; j < len; j += team)"):
            _decompose(w, reduced, "j", "I")
            w.extend(body.w)
        return
    em.row_cache.done |= em.row_cache.pending
    em.row_cache.pending = {}
    w.line("#pragma unroll")
    with w.block("for (int r = 0; r < R; r++)"):
        w.line("const I j = (tid + (I)(r / V) * team) * V + r % V;  /* runs of V */")
        w.line("const bool in = j < len; (void)in;")
        _decompose(w, reduced, "j", "I")
        w.extend(body.w)


def _stage(em: CudaEmitter, w: Writer, n: int, stage: Node, reduced: list[int]) -> None:
    """One reduction over the row: each thread folds its share, then the team combines."""
    src, op = stage.srcs[0], stage.op
    m = identity(em.nloops)
    ctype = ops_c.CTYPE[stage.dtype]
    body = _GpuBody(Writer(), in_row=True)
    value = em.expr(src, m, body)
    if op in (Op.SUM, Op.PROD, Op.MAX, Op.MIN):
        init = REDUCE_INIT.get(op) or _extreme(src.dtype, op is Op.MIN)
        w.line(f"{ctype} acc{n} = {init};")
        if _predicated(em, body):
            value = f"in ? ({ctype})({value}) : ({ctype})({init})"
        body.w.line(f"acc{n} = {REDUCE_OP[op]}()(acc{n}, ({ctype})({value}));")
        _row_loop(em, w, reduced, body)
        w.line(f"acc{n} = cv_team_reduce<TEAM>(acc{n}, {REDUCE_OP[op]}());")
    else:  # argmax / argmin over one axis: the first NaN, else the first extreme
        is_max = "true" if op is Op.ARGMAX else "false"
        vtype = ops_c.CTYPE[src.dtype]
        w.line(f"{vtype} best{n} = {_extreme(src.dtype, op is Op.ARGMIN)};")
        w.line(f"int64_t acc{n} = INT64_MAX;")
        guard = "in && " if _predicated(em, body) else ""
        body.w.line(f"if ({guard}cv_arg_better<{is_max}>(({vtype})({value}), (int64_t)j, best{n}, "
                    f"acc{n})) {{ best{n} = {value}; acc{n} = j; }}")
        _row_loop(em, w, reduced, body)
        w.line(f"cv_team_arg<TEAM, {is_max}>(best{n}, acc{n});")
    em.stage_vars[id(stage)] = f"acc{n}"


# GEMM ----------------------------------------------------------------------------------

def _gemm(em: CudaEmitter, w: Writer) -> None:
    k, nloops = em.k, em.nloops
    roots = list(zip(em.group.roots, em.group.dests))
    body = _fill(_GpuBody(Writer()), lambda b: _store_roots(em, b, roots))
    acc = k.acc_type
    loop_vars = "int64_t i0, int64_t i1, int64_t i2" if nloops == 3 else "int64_t, int64_t i0, " \
        "int64_t i1"
    with w.block(f"struct {k.name}_epi", "};"):
        w.line(f"const {k.name}_args *a;")
        with w.block(f"__device__ __forceinline__ void operator()({loop_vars}, {acc} acc) const"):
            _prologue(k, w, "int64_t")
            w.extend(body)
    m, n = f"a->n[{nloops - 2}]", f"a->n[{nloops - 1}]"
    batch = "a->n[0]" if nloops == 3 else "1"
    nterms = len(em.group.terms)
    part = f"(int)a->split, reinterpret_cast<{acc} *>(a->part)"
    for suffix, tile in (("tiled", 128), ("tiled64", 64)):
        _entry(w, k, suffix, f"{BLOCK}", f"cv_gemm_tiled<{acc}, {tile}>(a->t, {nterms}, {m}, "
               f"{n}, {batch}, {part}, {k.name}_epi{{a}});")
    for mr in (1, 4):
        _entry(w, k, f"gemv{mr}", f"{GEMV_BLOCK}", gemv_call(k, mr))
    _entry(w, k, "ksum", f"{BLOCK}", f"cv_gemm_ksum<{acc}>(reinterpret_cast<const {acc} *>("
           f"a->part), (int)a->split, {m}, {n}, {batch}, {k.name}_epi{{a}});")
    if acc == "float":  # two blocks per SM: cp.async stages of one overlap the other's math
        for suffix, bt, rows in zip(GEMM_TC, ("false", "true") * 2, (128, 128, 64, 64)):
            _entry(w, k, suffix, f"{BLOCK}, 2", f"cv_gemm_tc<{bt}, {rows}>(a->t, {nterms}, {m}, "
                   f"{n}, {batch}, {part}, {k.name}_epi{{a}});")
