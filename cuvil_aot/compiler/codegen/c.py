"""CPU kernels in C, one per fusion group.

Each kernel loops over its group's loop space. Every array it touches is an
operand: a base pointer and one element stride per loop variable, filled in by
the wrapper (pymodule.py) from the index map of the access, so views,
broadcasts and transposes cost nothing. The innermost loop exists twice: a
fast copy, taken when every operand that moves with the inner variable has unit
stride, that the C compiler vectorizes, and a general strided copy (c_loops.py).
Expressions come from kernel_emitter.py; ROW kernels are in c_row.py.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from cuvil_aot.compiler.codegen import gather_access, ops_c, scatter_store
from cuvil_aot.compiler.codegen.c_loops import (
    advance,
    decompose,
    extent,
    fast_condition,
    split_loop,
)
from cuvil_aot.compiler.codegen.c_row import row_body
from cuvil_aot.compiler.codegen.c_scan import INCLUDE, scan_body
from cuvil_aot.compiler.codegen.kernel_emitter import (
    COSTLY,
    Body,
    Kernel,
    KernelEmitter,
    Operand,
    dest_map,
    elementwise_tree,
    root_map,
    scalar_dtype,
    store_roots,
)
from cuvil_aot.compiler.codegen.writer import Writer
from cuvil_aot.compiler.ir.group import Dest, Group, Kind
from cuvil_aot.compiler.ir.node import Node

STREAMED = {"float32": "f32", "float64": "f64"}  # dtypes that non-temporal stores take


def emit_kernel(name: str, group: Group, buffers: set[int],
                hoisted: dict[int, str] | None = None) -> Kernel:
    em = KernelEmitter(name, group, buffers, hoisted)
    body = Writer(1)
    if group.kind is Kind.GEMM:
        _gemm_body(em, body)
        signature = (f"static void {name}(void *vctx, int64_t batch, int64_t r0, int64_t r1, "
                     f"int64_t c0, int64_t c1, const {_acc_type(group)} *acc, int64_t ld)")
    else:
        if group.kind is Kind.ROW:
            row_body(em, body)
        elif group.kind is Kind.SCAN:
            scan_body(em, body)
        else:
            _elementwise_body(em, body)
        signature = f"static void {name}(void *vctx, int64_t t0, int64_t t1)"
    decl = Writer()
    _args_struct(em.k, decl)
    em.k.struct = decl.text()
    w = Writer()
    if group.kind is Kind.SCAN:
        w.line(INCLUDE)
    with w.block(signature):
        w.line(f"const {name}_args *a = (const {name}_args *)vctx;")
        _prologue(em.k, w)
        w.extend(body)
    em.k.code = w.text()
    return em.k


def _acc_type(group: Group) -> str:
    return ops_c.CTYPE[group.terms[0].dtype]


def _args_struct(k: Kernel, w: Writer) -> None:
    with w.block("typedef struct", f"}} {k.name}_args;"):
        w.line(f"int64_t n[{k.nloops}];")
        w.line(f"char *p[{max(1, len(k.operands))}];")
        w.line(f"int64_t s[{max(1, len(k.operands))}][{k.nloops}];")
        w.line("int64_t chunk, nchunk;")
        w.line("int stream;  /* outputs go out through cv_stream_* (kernel.h) */")
        if k.merge:
            w.line("int merged;  /* the two innermost loops run as one, a->inner long */")
            w.line("int64_t inner;")
        for field_name, node in sorted(k.scalars.items()):
            w.line(f"{ops_c.CTYPE[scalar_dtype(node)]} {field_name};")
        for sym in sorted(k.symbols):
            w.line(f"int64_t sym_{sym};")
        gather_access.fields(k, w)


def _prologue(k: Kernel, w: Writer) -> None:
    for j, op in enumerate(k.operands):
        const = "" if op.dest is not None else "const "
        storage = ops_c.STORAGE[op.dtype]
        w.line(f"{const}{storage} *restrict p{j} = ({const}{storage} *)a->p[{j}];")
        for v in op.support():
            w.line(f"const int64_t s{j}_{v} = a->s[{j}][{v}];")


def _elementwise_body(em: KernelEmitter, w: Writer) -> None:
    _elementwise_loops(em, Writer(), merge=False)  # registers the operands and gathers
    em.k.merge = mergeable(em)
    _elementwise_loops(em, w, em.k.merge)


def mergeable(em: KernelEmitter) -> bool:
    """Whether the two innermost loops may run as one where the strides allow it (the
    launcher checks them, launch.merge_condition): no gather or scatter, whose indices
    are more than strides, no index ramp (read at the loop variables), and each operand
    moves with both loops or with neither."""
    if em.nloops < 2 or em.k.gathers or em.k.ramps or scatter_store.writes(em.group):
        return False
    pair = {em.nloops - 2, em.nloops - 1}
    return all(len(pair & set(op.support())) != 1 for op in em.k.operands)


def _elementwise_loops(em: KernelEmitter, w: Writer, merge: bool) -> None:
    """The task loop; with ``merge``, a->merged says the launcher folded the two
    innermost loops into the inner one (a->inner long): the outer of them then runs once.
    A K/V cache's copy into np.concatenate's result, (12, 255, 64) float32: rows of 64
    cost more to set up than to copy (a GPT-2 decode step's two: 39 -> 18-30 us, NumPy's
    np.concatenate 27 us)."""
    inner = em.nloops - 1
    roots = list(zip(em.group.roots, em.group.dests))
    streamed = _streams(em, roots)
    bound = "a->inner" if merge else extent(em, inner)
    trips = {inner - 1: f"(a->merged ? 1 : {extent(em, inner - 1)})"} if merge else None
    # the row's variables stepped, not divided out per task: an im2col copy's rows of 3
    # spent most of their time in the divisions
    w.line("int64_t part = t0 % a->nchunk;")
    decompose(em, w, list(range(inner)), "t0 / a->nchunk", trips, steps=True)
    with w.block("for (int64_t t = t0; t < t1; t++)"):
        w.line("const int64_t lo = part * a->chunk;")
        w.line(f"const int64_t hi = cv_min64(lo + a->chunk, {bound});")
        fill = lambda body: store_roots(em, body, roots)  # noqa: E731
        if streamed:
            _stream_or_split(em, w, inner, roots, fill)
        elif scatter_store.writes(em.group):  # in C order: the last duplicate index wins
            split_loop(em, w, inner, "lo", "hi", fill, pragma="")
        else:
            split_loop(em, w, inner, "lo", "hi", fill)
        with w.block("if (++part == a->nchunk)"):
            w.line("part = 0;")
            advance(em, w, list(range(inner)), trips)
    if streamed:
        w.line("if (a->stream) cv_stream_fence();")


def _streams(em: KernelEmitter, roots: list[tuple[Node, Dest]]) -> bool:
    """Whether large outputs go out with non-temporal stores: float outputs of cheap
    math, each stored along the inner loop. x * 0.5 + y on 16M float32: 3.90 -> 3.40 ms;
    the elementwise chain (tanh, exp) is bound by its math and got slower (4.37 -> 5.07)."""
    inner = em.nloops - 1
    moving = all(inner in Operand(d.buffer, None, dest_map(r, d, root_map(em.group, r)),
                                  d).support() for r, d in roots)
    return moving and all(d.buffer.dtype in STREAMED for _, d in roots) and not any(
        n.op in COSTLY for r, _ in roots for n in elementwise_tree(r)) \
        and not scatter_store.writes(em.group)


def _stream_or_split(em: KernelEmitter, w: Writer, var: int, roots: list[tuple[Node, Dest]],
                     fill: Callable[[Body], None]) -> None:
    """With a->stream and unit strides, the loop over [lo, hi) in tiles of CV_STREAM_TILE
    computed into stack buffers and streamed out (kernel.h); else split_loop's loops."""
    dests = {}
    for root, dest in roots:
        j = em.operand(dest.buffer, None, dest_map(root, dest, root_map(em.group, root)), dest)
        dests[j] = dest.buffer.dtype
    body = Body(Writer(), True, var)
    body.tiles = {j: f"tile{j}" for j in dests}
    fill(body)
    cond = fast_condition(em, body.used | set(dests), var)
    tiles = "for (int64_t c0 = lo; c0 < hi; c0 += CV_STREAM_TILE)"
    with w.block(f"if (a->stream && {cond})"), w.block(tiles):
        w.line("const int64_t c1 = cv_min64(c0 + CV_STREAM_TILE, hi);")
        for j, dtype in dests.items():
            w.line(f"{ops_c.STORAGE[dtype]} tile{j}[CV_STREAM_TILE] __attribute__((aligned(64)));")
        w.line("#pragma omp simd")
        with w.block(f"for (int64_t i{var} = c0; i{var} < c1; i{var}++)"):
            w.extend(body.w)
        for j, dtype in dests.items():
            off = re.sub(rf"\bi{var}\b", "c0", em.offset(j, Body(Writer(), True, var)))
            w.line(f"cv_stream_{STREAMED[dtype]}(&p{j}[{off}], tile{j}, c1 - c0);")
    with w.block("else"):
        split_loop(em, w, var, "lo", "hi", fill)


def _gemm_body(em: KernelEmitter, w: Writer) -> None:
    nloops = em.nloops
    row, col = nloops - 2, nloops - 1
    if nloops == 3:
        w.line("const int64_t i0 = batch;")
    else:
        w.line("(void)batch;")
    roots = list(zip(em.group.roots, em.group.dests))
    with w.block(f"for (int64_t i{row} = r0; i{row} < r1; i{row}++)"):
        w.line(f"const {_acc_type(em.group)} *acc_row = acc + (i{row} - r0) * ld - c0;")
        split_loop(em, w, col, "c0", "c1", lambda body: store_roots(em, body, roots))
