"""ROW kernels in C: per row of the kept axes, one pass per reduction stage, then one
pass that stores the full-shape roots (softmax: max, sum of exp, then exp / sum).

Two things keep that last pass cheap. A costly summed value that the last pass needs
again is stored to the output row by the sum pass and read back from cache
(_stash_plan), and a division by a per-row value becomes a multiplication by its
reciprocal where that is within ~1 ulp (row_reciprocals.py).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from contextlib import nullcontext

from cuvil_aot.compiler.codegen import ops_c
from cuvil_aot.compiler.codegen.c_loops import AHEAD_STEP, decompose, extent, split_loop
from cuvil_aot.compiler.codegen.kernel_emitter import (
    COSTLY,
    Body,
    KernelEmitter,
    dest_map,
    elementwise_tree,
    root_map,
    store_roots,
)
from cuvil_aot.compiler.codegen.ops_c import REDUCE_INIT, extreme
from cuvil_aot.compiler.codegen.row_reciprocals import reciprocals
from cuvil_aot.compiler.codegen.writer import Writer
from cuvil_aot.compiler.ir.group import Dest
from cuvil_aot.compiler.ir.indexing import identity
from cuvil_aot.compiler.ir.node import Node
from cuvil_aot.compiler.ir.ops import Op

SUM_BLOCK = 4096  # elements per float partial sum: error stays O(block), not O(length)
REDUCE_PRAGMA = {Op.SUM: "+", Op.PROD: "*", Op.MAX: "max", Op.MIN: "min"}  # omp reduction


def row_body(em: KernelEmitter, w: Writer) -> None:
    """Per row of the kept axes: each stage's pass over the reduced axes, then the roots."""
    space = em.group.space
    kept, reduced = list(space.kept_axes), list(space.reduce_axes)
    per_row = [(r, d) for r, d in zip(em.group.roots, em.group.dests) if r.shape != space.shape]
    full = [(r, d) for r, d in zip(em.group.roots, em.group.dests) if r.shape == space.shape]
    stash = _stash_plan(em, full)
    short = None if full else _short_rows(em, reduced)
    if short:
        with w.block(f"if ({short[0]})"):
            _short_row_blocks(em, w, kept, short[1], per_row)
    with w.block("else") if short else nullcontext(), \
            w.block("for (int64_t t = t0; t < t1; t++)"):
        decompose(em, w, kept, "t")
        for k, stage in enumerate(em.group.stages):
            _stage(em, w, k, stage, reduced, stash[1:] if stash and stash[0] is stage else None)
        if per_row:
            store_roots(em, Body(w, False, None), per_row)
        if full:
            reciprocals(em, w, full)
            _nest(em, w, reduced, lambda body: store_roots(em, body, full))
        em.stashed.clear()
        em.recips.clear()


# Rows up to this long are summed CV_SUM_ROWS at a time (_short_rows); longer rows
# amortize their horizontal sum (see rowsum.h).
SUMMED_ROW_MAX = 64


def _short_rows(em: KernelEmitter, reduced: list[int]) -> tuple[str, str] | None:
    """(condition, row start) when the kernel is one float32 sum of loaded values over one
    short static axis (a global average pool): rows then go CV_SUM_ROWS at a time
    through cv_sum_rows_f32 (rowsum.h), while that axis has unit stride."""
    stages = em.group.stages
    if len(stages) != 1 or stages[0].op is not Op.SUM or len(reduced) != 1:
        return None
    v, src = reduced[0], stages[0].srcs[0]
    shape = em.group.space.shape
    if src.dtype != "float32" or not shape[v].is_static \
            or not 0 < shape[v].value <= SUMMED_ROW_MAX:
        return None
    body = Body(Writer(), True, v)
    value = em.expr(src, identity(em.nloops), body)
    load = re.fullmatch(rf"const float {value} = (p(\d+))\[(.*)\];", body.w.text().strip())
    if body.count != 1 or load is None:
        return None
    j = int(load[2])
    terms = load[3].split(" + ")
    if f"i{v}" not in terms:  # the row's axis is not indexed (x.sum() of an f32[1, 1]):
        return None  # no stride of it to test
    start = [term for term in terms if term != f"i{v}"]
    return f"s{j}_{v} == 1", " + ".join([load[1], *start])


def _short_row_blocks(em: KernelEmitter, w: Writer, kept: list[int], start: str,
                      per_row: list[tuple[Node, Dest]]) -> None:
    """Blocks of CV_SUM_ROWS rows: their start pointers, the sums, then each row's roots."""
    stage = em.group.stages[0]
    length = extent(em, em.group.space.reduce_axes[0])
    rows = "for (int64_t t = tb; t < tb + nr; t++)"
    with w.block("for (int64_t tb = t0; tb < t1; tb += CV_SUM_ROWS)"):
        w.line("const int64_t nr = cv_min64(CV_SUM_ROWS, t1 - tb);")
        w.line("const float *rows[CV_SUM_ROWS];")
        w.line("float sums[CV_SUM_ROWS];")
        with w.block(rows):
            decompose(em, w, kept, "t")
            w.line(f"rows[t - tb] = {start};")
        w.line(f"cv_sum_rows_f32(rows, nr, {length}, sums);")
        with w.block(rows):
            decompose(em, w, kept, "t")
            w.line("const float sum0 = sums[t - tb];")
            em.stage_vars[id(stage)] = "sum0"
            store_roots(em, Body(w, False, None), per_row)


def _stash_plan(em: KernelEmitter, full: list[tuple[Node, Dest]]) -> tuple[Node, Node, Dest] | None:
    """(sum stage, root, its dest) when the final pass would compute the summed value again
    (softmax's exp): the sum pass then stores it to the root's output row, still in cache
    when the final pass reads it back. Only for a costly value and the root's own dtype
    (the stored value is the computed one, bit for bit). Outputs never overlap inputs."""
    for stage in em.group.stages:
        src = stage.srcs[0]
        if stage.op is not Op.SUM or src.dtype not in ("float32", "float64"):
            continue
        if not any(n.op in COSTLY for n in elementwise_tree(src)):
            continue
        for root, dest in full:
            if dest.buffer.dtype == src.dtype and root_map(em.group, root) == identity(
                    em.nloops) and any(n is src for n in elementwise_tree(root)):
                return stage, root, dest
    return None


def _nest(em: KernelEmitter, w: Writer, axes: list[int], fill: Callable[[Body], None],
          pragma: str = "#pragma omp simd", block: tuple[str, str, str] | None = None,
          pre: Callable[[Body], None] | None = None, ahead: Sequence[str] = ()) -> None:
    """Loops over ``axes``, the innermost split in two (see c_loops.split_loop).

    ``block`` = (partial, its C type, total): the innermost loop runs in blocks of
    SUM_BLOCK, each summed into a fresh ``partial`` then added to ``total``, so a float
    sum of any length keeps its precision (a lone float stops growing at 2^24).
    ``pre``: a loop of its own over the same innermost range, before ``fill``'s, issuing
    the prefetches ``ahead`` (see _next_row)."""
    if len(axes) > 1:
        v = axes[0]
        with w.block(f"for (int64_t i{v} = 0; i{v} < {extent(em, v)}; i{v}++)"):
            _nest(em, w, axes[1:], fill, pragma, block, pre, ahead)
        return
    v = axes[0]
    lo, hi = ("0", extent(em, v)) if block is None else (f"b{v}", f"e{v}")
    loop = f"for (int64_t b{v} = 0; b{v} < {extent(em, v)}; b{v} += {SUM_BLOCK})"
    with w.block(loop) if block else nullcontext():
        if block:
            w.line(f"{block[1]} {block[0]} = 0;")
            w.line(f"const int64_t e{v} = cv_min64(b{v} + {SUM_BLOCK}, {extent(em, v)});")
        if pre:
            split_loop(em, w, v, lo, hi, pre, ahead=ahead)
        split_loop(em, w, v, lo, hi, fill, pragma)
        if block:
            w.line(f"{block[2]} += {block[0]};")


def _next_row(em: KernelEmitter) -> list[str]:
    """Prefetches of column q of the next row of every input that runs along the rows, for
    the stash pass (softmax's exp): it computes from L1 while the memory would idle until
    the next row's first pass misses. One kept and one reduced axis only. Softmax
    4096 x 4096, 2 threads, in a C harness: 3.2 -> 2.9-3.1 ms."""
    kept, reduced = list(em.group.space.kept_axes), list(em.group.space.reduce_axes)
    if len(kept) != 1 or len(reduced) != 1:
        return []
    row, col = kept[0], reduced[0]
    lines = []
    for j, op in enumerate(em.k.operands):
        if op.dest is not None or set(op.support()) != {row, col}:
            continue
        per_line = max(1, 64 // ops_c.ITEMSIZE[op.dtype])
        lines += [f"cv_prefetch_at(p{j}, (i{row} + 1) * s{j}_{row} + (q + {d}) * s{j}_{col});"
                  for d in range(0, AHEAD_STEP, per_line)]
    return lines


def _stage(em: KernelEmitter, w: Writer, k: int, stage: Node, reduced: list[int],
           stash: tuple[Node, Dest] | None = None) -> None:
    ctype = ops_c.CTYPE[stage.dtype]
    src = stage.srcs[0]
    fam = ops_c.FAMILY[src.dtype]
    is_float = fam in ("f", "d")
    m = identity(em.nloops)
    op = stage.op

    pre, ahead = None, []
    if stash:  # the summed value goes to the output row first, in a loop of its own: GCC
        # does not vectorize a loop that has both stores and an omp simd reduction
        root, dest = stash
        j = em.operand(dest.buffer, None, dest_map(root, dest, m), dest)
        pre = lambda body: em.store(root, dest, m, em.expr(src, m, body), body)  # noqa: E731
        ahead = _next_row(em)

    def summed(body: Body) -> str:  # from the output row when stashed (see _expr)
        if stash:
            em.stashed[id(src)] = j
        return em.expr(src, m, body)

    if op is Op.SUM and fam == "f":  # float32/16: blocks of float partials into a double
        w.line(f"double total{k} = 0;")
        fill = lambda body: body.w.line(f"acc{k} += {summed(body)};")  # noqa: E731
        _nest(em, w, reduced, fill, f"#pragma omp simd reduction(+:acc{k})",
              (f"acc{k}", "float", f"total{k}"), pre, ahead)
        w.line(f"const {ctype} sum{k} = ({ctype})total{k};")
        em.stage_vars[id(stage)] = f"sum{k}"
        return
    if op in (Op.SUM, Op.PROD):
        w.line(f"{ctype} acc{k} = {REDUCE_INIT[op]};")
        sym = REDUCE_PRAGMA[op]
        fill = lambda body: body.w.line(f"acc{k} {sym}= {summed(body)};")  # noqa: E731
        _nest(em, w, reduced, fill, f"#pragma omp simd reduction({sym}:acc{k})", pre=pre,
              ahead=ahead)
        em.stage_vars[id(stage)] = f"acc{k}"
        return
    if op in (Op.MAX, Op.MIN):
        cmp = ">" if op is Op.MAX else "<"
        w.line(f"{ctype} acc{k} = {extreme(src.dtype, op is Op.MIN)};")
        w.line(f"int nan{k} = 0;")
        def fill(body: Body) -> None:
            v = em.expr(src, m, body)
            body.w.line(f"acc{k} = {v} {cmp} acc{k} ? {v} : acc{k};")
            if is_float:
                body.w.line(f"nan{k} |= {v} != {v};")
        pragma = f"#pragma omp simd reduction({REDUCE_PRAGMA[op]}:acc{k}) reduction(|:nan{k})"
        _nest(em, w, reduced, fill, pragma)
        if is_float:
            w.line(f"if (nan{k}) acc{k} = NAN;")
        em.stage_vars[id(stage)] = f"acc{k}"
        return
    # argmax / argmin over one axis: first occurrence, the first NaN wins
    cmp = ">" if op is Op.ARGMAX else "<"
    vtype = ops_c.CTYPE[src.dtype]
    w.line(f"{vtype} best{k} = {extreme(src.dtype, op is Op.ARGMIN)};")
    w.line(f"int64_t acc{k} = 0;")
    axis = reduced[0]
    def fill_arg(body: Body) -> None:
        v = em.expr(src, m, body)
        nan_case = f" || ({v} != {v} && best{k} == best{k})" if is_float else ""
        body.w.line(f"if ({v} {cmp} best{k}{nan_case}) {{ best{k} = {v}; acc{k} = i{axis}; }}")
    _nest(em, w, reduced, fill_arg, "")
    em.stage_vars[id(stage)] = f"acc{k}"
