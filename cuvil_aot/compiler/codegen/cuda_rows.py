"""Row CUDA kernels: per row of the kept axes, the stages reduce over the row, then the
roots are stored. ``_w32``/``_w64``: a warp per row; ``_b32``/``_b64``: a block per row
(long rows, or few rows); ``_q32``: a quarter warp per short row; ``_bc32``/``_bcu32``: a
block per row that keeps up to ROW_CACHE elements per thread in registers, every value of
an element a pass computes too, so the row is read once (cuda_emitter.RowCache).
"""

from __future__ import annotations

from cuvil_aot.compiler.codegen import ops_c
from cuvil_aot.compiler.codegen.cuda_emitter import (
    CudaEmitter,
    GpuBody,
    RowCache,
    predicated,
    unit_axis,
)
from cuvil_aot.compiler.codegen.cuda_geometry import BLOCK, QUARTER, ROW_BLOCK, ROW_CACHE, ROW_RUN
from cuvil_aot.compiler.codegen.cuda_pieces import decompose, entry, product, prologue, sizes
from cuvil_aot.compiler.codegen.kernel_emitter import store_roots
from cuvil_aot.compiler.codegen.ops_c import REDUCE_INIT, extreme
from cuvil_aot.compiler.codegen.row_reciprocals import reciprocals
from cuvil_aot.compiler.codegen.writer import Writer
from cuvil_aot.compiler.ir.group import Dest
from cuvil_aot.compiler.ir.indexing import identity
from cuvil_aot.compiler.ir.node import Node
from cuvil_aot.compiler.ir.ops import Op

# The functors of cuda_kernel.h that combine two partial results of a reduction
REDUCE_OP = {Op.SUM: "cv_op_sum", Op.PROD: "cv_op_prod", Op.MAX: "cv_op_max",
             Op.MIN: "cv_op_min"}


def row_kernels(em: CudaEmitter, w: Writer) -> None:
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
                decompose(w, list(em.group.space.kept_axes), "row", "I")
                w.extend(inner)
    for suffix, index, team, threads in (("w32", "int32_t", 32, BLOCK),
                                         ("w64", "int64_t", 32, BLOCK),
                                         ("b32", "int32_t", 0, ROW_BLOCK),
                                         ("b64", "int64_t", 0, ROW_BLOCK)):
        entry(w, k, suffix, f"{threads}", f"{k.name}_rows<{index}, {team}>(a);")
    entry(w, k, "q32", f"{BLOCK}", f"{k.name}_rows<int32_t, {QUARTER}>(a);")
    entry(w, k, "bc32", f"{ROW_BLOCK}",
          f"{k.name}_rows_c<int32_t, 0, {ROW_CACHE}, false, 1>(a);")
    unit_call = f"{k.name}_rows_c<int32_t, {ROW_BLOCK}, {ROW_CACHE}, true, {ROW_RUN}>(a);"
    entry(w, k, "bcu32", f"{ROW_BLOCK}",  # the host never picks it for a row of several axes
          unit_call if unit is not None else "__trap();")


def _row_prologue(em: CudaEmitter, w: Writer, unit: int | None) -> None:
    space = em.group.space
    prologue(em.k, w, "I", unit=unit)
    sizes(em.k, w, "I")
    w.line(f"const I rows = {product(list(space.kept_axes))}, "
           f"len = {product(list(space.reduce_axes))}; (void)len;")
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
    em.row_cache = RowCache() if cache else None
    inner = Writer()
    for n, stage in enumerate(em.group.stages):
        _stage(em, inner, n, stage, reduced)
    if per_row := [(r, d) for r, d in pairs if r.shape != space.shape]:
        with inner.block("if (tid == 0)"):
            store_roots(em, GpuBody(inner), per_row)
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
    ~1.5 ulp (row_reciprocals.py), else divides: one branch per row, not per element
    (softmax 4096 x 4096 on the H200: 49 -> 42.7 us, bench/gpu/gpu_rows.md)."""
    if em.row_cache is not None:
        reciprocals(em, w, full)
    def roots() -> GpuBody:
        body = GpuBody(Writer(), in_row=True)
        store_roots(em, body, full)
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


def _row_loop(em: CudaEmitter, w: Writer, reduced: list[int], body: GpuBody) -> None:
    if em.row_cache is None:
        with w.block("for (I j = tid; j < len; j += team)"):
            decompose(w, reduced, "j", "I")
            w.extend(body.w)
        return
    em.row_cache.done |= em.row_cache.pending
    em.row_cache.pending = {}
    w.line("#pragma unroll")
    with w.block("for (int r = 0; r < R; r++)"):
        w.line("const I j = (tid + (I)(r / V) * team) * V + r % V;  /* runs of V */")
        w.line("const bool in = j < len; (void)in;")
        decompose(w, reduced, "j", "I")
        w.extend(body.w)


def _stage(em: CudaEmitter, w: Writer, n: int, stage: Node, reduced: list[int]) -> None:
    """One reduction over the row: each thread folds its share, then the team combines."""
    src, op = stage.srcs[0], stage.op
    m = identity(em.nloops)
    ctype = ops_c.CTYPE[stage.dtype]
    body = GpuBody(Writer(), in_row=True)
    value = em.expr(src, m, body)
    if op in (Op.SUM, Op.PROD, Op.MAX, Op.MIN):
        init = REDUCE_INIT.get(op) or extreme(src.dtype, op is Op.MIN)
        w.line(f"{ctype} acc{n} = {init};")
        if predicated(em, body):
            value = f"in ? ({ctype})({value}) : ({ctype})({init})"
        body.w.line(f"acc{n} = {REDUCE_OP[op]}()(acc{n}, ({ctype})({value}));")
        _row_loop(em, w, reduced, body)
        w.line(f"acc{n} = cv_team_reduce<TEAM>(acc{n}, {REDUCE_OP[op]}());")
    else:  # argmax / argmin over one axis: the first NaN, else the first extreme
        is_max = "true" if op is Op.ARGMAX else "false"
        vtype = ops_c.CTYPE[src.dtype]
        w.line(f"{vtype} best{n} = {extreme(src.dtype, op is Op.ARGMIN)};")
        w.line(f"int64_t acc{n} = INT64_MAX;")
        guard = "in && " if predicated(em, body) else ""
        body.w.line(f"if ({guard}cv_arg_better<{is_max}>(({vtype})({value}), (int64_t)j, best{n}, "
                    f"acc{n})) {{ best{n} = {value}; acc{n} = j; }}")
        _row_loop(em, w, reduced, body)
        w.line(f"cv_team_arg<TEAM, {is_max}>(best{n}, acc{n});")
    em.stage_vars[id(stage)] = f"acc{n}"
