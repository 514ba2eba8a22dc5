"""SCAN kernels in C: per row of the kept axes, one sequential pass along the row's axis.

A running sum or product (np.cumsum, np.cumprod) adds each element's value, computed
inline from the group's source expression, to an accumulator of the result dtype and
stores it: NumPy's ``add.accumulate`` order, so float results round as NumPy's do. A
running maximum or minimum (np.maximum.accumulate) keeps np.maximum's answer of the
accumulator and the element: a NaN wins, a tie keeps the element (float16: the
accumulator), which decides the sign of a zero. A
sort (np.sort, np.argsort) loads the row's keys into scratch, sorts their positions
stably with NaNs last (native rowsort.h), then stores the keys or the positions.
"""

from __future__ import annotations

from collections.abc import Callable

from cuvil_aot.compiler.codegen import ops_c
from cuvil_aot.compiler.codegen.c_loops import decompose, extent
from cuvil_aot.compiler.codegen.kernel_emitter import Body, KernelEmitter
from cuvil_aot.compiler.codegen.writer import Writer
from cuvil_aot.compiler.ir.indexing import identity
from cuvil_aot.compiler.ir.node import Node
from cuvil_aot.compiler.ir.ops import SCANS, Op
from cuvil_aot.compiler.ir.types import is_float
from cuvil_aot.errors import InternalCompilerError

INCLUDE = '#include "cuvil_aot/rowsort.h"'
INIT = {Op.CUMSUM: "0", Op.CUMPROD: "1"}
SYMBOL = {Op.CUMSUM: "+", Op.CUMPROD: "*"}
BOOLEAN = {Op.CUMSUM: "|", Op.CUMPROD: "&"}  # NumPy's add and multiply of bools
# running extrema: the elementwise op of each step, and whether its start is the highest
EXTREMA = {Op.CUMMAX: (Op.MAXIMUM, False), Op.CUMMIN: (Op.MINIMUM, True)}
RUNNING = (Op.CUMSUM, Op.CUMPROD, Op.CUMMAX, Op.CUMMIN)
# NumPy's float16 maximum keeps its first operand of a tie (npy_half_ge), the float32 and
# float64 loops their second: the sign of a zero after an equal zero
FIRST_ON_TIES = frozenset({"float16"})


def scan_root(em: KernelEmitter) -> tuple[Node, int]:
    """The group's one root (a node of ops.SCANS) and the loop variable along its rows."""
    group = em.group
    if len(group.roots) != 1 or group.roots[0].op not in SCANS \
            or len(group.space.reduce_axes) != 1:
        raise InternalCompilerError(f"{em.k.name}: a scan kernel has one scan root")
    return group.roots[0], group.space.reduce_axes[0]


def combine(op: Op, dtype: str, acc: str, value: str,
            render: Callable[[Op, str, list[str]], str] = ops_c.render) -> str:
    """``acc`` op ``value`` in ``dtype`` as NumPy computes one step of the scan: integers
    wrap (computed unsigned: C's signed overflow is undefined), float16 and bfloat16 round
    each step; an extremum is the target's (``render``) np.maximum / np.minimum, exact."""
    if op in EXTREMA:  # np.maximum(a, b) is (a NaN or a > b) ? a : b
        pair = [value, acc] if dtype in FIRST_ON_TIES else [acc, value]
        return render(EXTREMA[op][0], dtype, pair)
    fam = ops_c.FAMILY[dtype]
    if fam == "b":
        return f"({acc} {BOOLEAN[op]} {value})"
    if fam in ops_c.INTEGERS:
        return f"({ops_c.CTYPE[dtype]})((uint64_t)({acc}) {SYMBOL[op]} (uint64_t)({value}))"
    step = f"({acc} {SYMBOL[op]} {value})"
    return ops_c.cast(step, "float32", dtype) if dtype in ops_c.ROUNDED else step


def scan_body(em: KernelEmitter, w: Writer) -> None:
    """The kernel's rows [t0, t1): a running sum, product or extremum, or a sort."""
    root, axis = scan_root(em)
    kept = list(em.group.space.kept_axes)
    if root.op in RUNNING:
        _running(em, w, root, axis, kept)
    else:
        _sorted(em, w, root, axis, kept)


def init(op: Op, dtype: str) -> str:
    """The running value before the first element: -0.0 for a float sum, whose first
    element then stands as it is (-0.0 + x is x for every x; 0.0 + -0.0 is 0.0, where
    NumPy's cumsum starts from the element and keeps -0.0); for an extremum the lowest
    (highest) value of the dtype, which the first element replaces (-inf, +inf for floats:
    np.maximum(-inf, x) is x, NaN and -inf included)."""
    if op in EXTREMA:
        return ops_c.extreme(dtype, EXTREMA[op][1])
    return "-0.0" if op is Op.CUMSUM and is_float(dtype) else INIT[op]


def _running(em: KernelEmitter, w: Writer, root: Node, axis: int, kept: list[int]) -> None:
    m = identity(em.nloops)
    ctype = ops_c.CTYPE[root.dtype]
    with w.block("for (int64_t t = t0; t < t1; t++)"):
        decompose(em, w, kept, "t")
        w.line(f"{ctype} acc = {init(root.op, root.dtype)};")
        with w.block(f"for (int64_t i{axis} = 0; i{axis} < {extent(em, axis)}; i{axis}++)"):
            body = Body(w, False, axis)
            value = em.expr(root.srcs[0], m, body)
            w.line(f"acc = {combine(root.op, root.dtype, 'acc', value)};")
            em.store(root, em.group.dests[0], m, "acc", body)


def _sorted(em: KernelEmitter, w: Writer, root: Node, axis: int, kept: list[int]) -> None:
    m = identity(em.nloops)
    src = root.srcs[0]
    ktype, fam = ops_c.CTYPE[src.dtype], ops_c.FAMILY[src.dtype]
    n = extent(em, axis)
    loop = f"for (int64_t i{axis} = 0; i{axis} < {n}; i{axis}++)"
    w.line(f"const int64_t len = {n};")
    w.line(f"{ktype} *keys = ({ktype} *)cv_row_scratch((size_t)len * sizeof *keys);")
    w.line("int64_t *perm = (int64_t *)cv_row_scratch(2 * (size_t)len * sizeof *perm);")
    with w.block("for (int64_t t = t0; t < t1; t++)"):
        decompose(em, w, kept, "t")
        with w.block(loop):
            w.line(f"keys[i{axis}] = {em.expr(src, m, Body(w, False, axis))};")
        w.line(f"cv_argsort_{fam}(keys, perm, perm + len, len);")
        with w.block(loop):
            value = f"keys[perm[i{axis}]]" if root.op is Op.SORT else f"perm[i{axis}]"
            em.store(root, em.group.dests[0], m, value, Body(w, False, axis))
    w.line("free(keys);")
    w.line("free(perm);")
