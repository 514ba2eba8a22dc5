"""Scans and sorts: ``np.cumsum``, ``np.cumprod``, ``np.sort``, ``np.argsort``,
``np.argpartition``, ``np.partition`` and their method forms; the running extrema
``np.maximum.accumulate`` and ``np.minimum.accumulate`` (ufunc_methods.py) as well;
``np.lexsort`` as stable argsorts, the least significant key first, each applied to the
order so far (a radix sort by keys).

Each becomes one node of ``ops.SCANS`` along one axis (``axis=None``: of the array
flattened, as NumPy), whose kernel owns whole rows (codegen c_scan.py, cuda_scan.py).
A running sum or product has NumPy's result dtype (``np.cumsum`` of bool and of small
ints is int64, of uint8 uint64, of a float its own; ``dtype=`` picks another) and
computes in it, the source cast to it first, as NumPy's ``add.accumulate``. A sort is
stable with NaNs last, so ``argsort`` equals NumPy's ``kind="stable"`` and every other
kind's contract holds; a partition is a sort, which satisfies every ``kth``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from cuvil_aot.compiler.frontend import builder as B
from cuvil_aot.compiler.frontend.call_checks import known_before_the_kernels
from cuvil_aot.compiler.frontend.handlers import Ctx, Handler
from cuvil_aot.compiler.frontend.shape_args import run_time_int
from cuvil_aot.compiler.frontend.user_error import UserError, checked
from cuvil_aot.compiler.frontend.values import dtype_arg, fold, is_symbolic, to_node
from cuvil_aot.compiler.ir import construct as C
from cuvil_aot.compiler.ir.node import Node
from cuvil_aot.compiler.ir.ops import Op
from cuvil_aot.compiler.ir.types import Dim, TensorType, is_int

SORT_KINDS = (None, "quicksort", "mergesort", "heapsort", "stable")
ACCUMULATE: dict[Op, Callable[..., Any]] = {
    Op.CUMSUM: np.cumsum, Op.CUMPROD: np.cumprod,
    Op.CUMMAX: np.maximum.accumulate, Op.CUMMIN: np.minimum.accumulate}


def _flat(x: Node, ctx: Ctx) -> Node:
    return checked(C.reshape, x, (C.total(x.shape),), ctx.span, span=ctx.span)


def _along(x: Node, axis: Any, ctx: Ctx) -> tuple[Node, int]:
    """``x`` and the axis a scan runs along: ``axis=None`` flattens ``x`` first."""
    if axis is None:
        return _flat(x, ctx), 0
    axis = fold(axis)
    if isinstance(axis, bool) or not isinstance(axis, int | np.integer):
        raise UserError("axis must be an int known at compile time or None", ctx.span,
                        "axis=-1 (a constant), or axis=None for the flattened array")
    return x, checked(B.normalize_axes, (int(axis),), x.type.ndim, span=ctx.span)[0]


def _scan_node(op: Op, x: Node, axis: int, dtype: str, ctx: Ctx) -> Node:
    return Node(op, TensorType(dtype, x.shape), (x,), attrs=(axis,), span=ctx.span)


# Running sums and products ---------------------------------------------------------------

def running(op: Op) -> Handler:
    """np.cumsum / np.cumprod (and the methods), np.maximum / np.minimum.accumulate: NumPy's
    result dtype, computed in it."""
    def handler(ctx: Ctx, a: Any, axis: Any = None, dtype: Any = None, out: Any = None) -> Node:
        name = ACCUMULATE[op].__name__
        if out is not None:
            raise UserError(f"{name}(out=...) is not supported", ctx.span,
                            f"y = np.{name}(x, axis) (a new array)")
        x = to_node(a, ctx.span)
        want = None if dtype is None else dtype_arg(dtype, ctx.span)
        result = ACCUMULATE[op](np.zeros(1, x.dtype), dtype=want).dtype.name  # in DTYPES
        if x.type.ndim == 0:  # NumPy scans a 0-d array as its one element (axis 0 or -1)
            x = C.reshape(x, (1,), ctx.span)
        x, ax = _along(x, axis, ctx)
        return _scan_node(op, C.cast(x, result, ctx.span), ax, result, ctx)
    return handler


# Sorts -------------------------------------------------------------------------------

def _sort_source(ctx: Ctx, a: Any, axis: Any, kind: Any, order: Any,
                 stable: Any) -> tuple[Node, int]:
    if order is not None:
        raise UserError("order= (the fields of a structured array) is not supported", ctx.span,
                        "sort a plain array")
    if kind not in SORT_KINDS:
        raise UserError(f"sort kind must be one of 'quicksort', 'mergesort', 'heapsort' or "
                        f"'stable' (got {kind!r})", ctx.span,
                        "leave kind out: the sort is stable, which satisfies every kind")
    if stable is not None and kind is not None:
        raise UserError("`kind` and keyword parameters can't be provided at the same time. "
                        "Use only one of them.", ctx.span)
    if stable not in (None, True, False):
        raise UserError("stable= must be True, False or None", ctx.span)
    return _along(to_node(a, ctx.span), axis, ctx)


def sort(ctx: Ctx, a: Any, axis: Any = -1, kind: Any = None, order: Any = None, *,
         stable: Any = None) -> Node:
    x, ax = _sort_source(ctx, a, axis, kind, order, stable)
    return _scan_node(Op.SORT, x, ax, x.dtype, ctx)


def argsort(ctx: Ctx, a: Any, axis: Any = -1, kind: Any = None, order: Any = None, *,
            stable: Any = None) -> Node:
    x, ax = _sort_source(ctx, a, axis, kind, order, stable)
    return _scan_node(Op.ARGSORT, x, ax, "int64", ctx)


def method_sort(ctx: Ctx, a: Node, axis: Any = -1, kind: Any = None, order: Any = None, *,
                stable: Any = None) -> Node:
    raise UserError("x.sort() sorts the array in place, which is not supported", ctx.span,
                    "x = np.sort(x, axis=-1) (a sorted copy)")


def _check_kth(kth: Any, n: Dim, size: Dim, ctx: Ctx) -> None:
    """NumPy's checks of a partition index: an int (or ints) in range of the axis (of
    length ``n``) unless the array (``size`` elements) is empty. Where the axis or the
    index is known only at the call (a symbolic axis, an int parameter), checked there,
    raising NumPy's ValueError; a kth from array data or a run-time loop's variable is not
    checked (the result is fully sorted: a valid partition for any kth in range)."""
    items = list(kth) if isinstance(kth, tuple | list) else [kth]
    for k in items:
        k = fold(k)
        if isinstance(k, bool | np.bool_):
            raise UserError("Booleans unacceptable as partition index", ctx.span)
        if isinstance(k, Node) and not k.shape and is_int(k.dtype):
            if not known_before_the_kernels(k):
                continue  # from array data or a loop's variable: unchecked, a full sort
            k = run_time_int(k, ctx)
        elif not is_symbolic(k) and (isinstance(k, Node) or not isinstance(k, int | np.integer)):
            raise UserError("Partition index must be integer", ctx.span,
                            "kth as an int, a negative int (-k) or an int parameter")
        length, count = fold(C.resolved(n)), fold(C.resolved(size))
        if isinstance(length, int) and isinstance(k, int | np.integer):
            if count != 0 and not -length <= int(k) < length:
                raise UserError(f"kth(={int(k) + length if k < 0 else int(k)}) out of bounds "
                                f"({length})", ctx.span)
            continue
        _kth_at_the_call(Dim.of(k if isinstance(k, Dim) else int(k)), C.resolved(n),
                         C.resolved(size), ctx)


def _kth_at_the_call(k: Dim, n: Dim, size: Dim, ctx: Ctx) -> None:
    """-n <= k < n, or an empty array: NumPy's ValueError names k (k + n where negative).
    A k of either sign passes one of the two checks whatever n is, so both are made where
    its sign is not known now."""
    if k.is_static:
        checks = [(n - k - 1, k)] if k.value >= 0 else [(n + k, k + n)]
    else:
        checks = [(n - k - 1, k), (n + k, k + n)]
    for need, shown in checks:  # (a run-time int may be negative: not provable now)
        if not k.is_static or not (need * size).known_nonnegative():
            ctx.requirements.append((need * size, C.Raises("ValueError", (
                "kth(=", shown, ") out of bounds (", n, ")"))))


def _partition(op: Op) -> Handler:
    """np.argpartition / np.partition: a stable sort, a valid partition for every kth."""
    def handler(ctx: Ctx, a: Any, kth: Any, axis: Any = -1, kind: Any = "introselect",
                order: Any = None) -> Node:
        if kind != "introselect":
            raise UserError(f"select kind must be 'introselect' (got {kind!r})", ctx.span)
        x, ax = _sort_source(ctx, a, axis, None, order, None)
        _check_kth(kth, x.shape[ax], C.total(x.shape), ctx)
        return _scan_node(op, x, ax, "int64" if op is Op.ARGSORT else x.dtype, ctx)
    return handler


def _keys(ctx: Ctx, keys: Any) -> list[Node]:
    """lexsort's keys: a tuple or list of arrays, or the rows of an array of 2 or more
    dimensions (a known count of them), all of one shape."""
    if isinstance(keys, Node):
        if keys.type.ndim < 2 or not keys.shape[0].is_static:
            raise UserError("np.lexsort of one array takes its rows as the keys: an array of "
                            "2 or more dimensions whose first is known at compile time",
                            ctx.span, "np.lexsort((secondary, primary))")
        rest = keys.shape[1:]
        parts = [C.reshape(B.slice_axes(keys, (Dim.of(i),) + (Dim.of(0),) * len(rest),
                                        (Dim.of(1),) * keys.type.ndim,
                                        (Dim.of(1), *rest), ctx.span), rest, ctx.span)
                 for i in range(keys.shape[0].value)]
    elif isinstance(keys, tuple | list):
        parts = [to_node(k, ctx.span) for k in keys]
    else:
        raise UserError("np.lexsort takes a tuple of keys", ctx.span,
                        "np.lexsort((secondary, primary))")
    if not parts:
        raise UserError("TypeError: need sequence of keys with len > 0 in lexsort", ctx.span)
    first = parts[0].shape
    message = ("all keys need to be the same shape",)
    for p in parts:
        if len(p.shape) != len(first) or not all(C.unify(a, b, message)
                                                 for a, b in zip(first, p.shape)):
            raise UserError("ValueError: all keys need to be the same shape", ctx.span)
    if not first:
        raise UserError("np.lexsort of 0-d keys is not supported", ctx.span, "1-D keys")
    return parts


def lexsort(ctx: Ctx, keys: Any, axis: Any = -1) -> Node:
    """The indices that sort by the last key, ties by the one before, ...: argsort by the
    first key, then stably by each next key in that order (NaNs last, as NumPy's)."""
    from cuvil_aot.compiler.frontend.gather import take_along_axis

    parts = _keys(ctx, keys)
    order = argsort(ctx, parts[0], axis, kind="stable")
    for key in parts[1:]:
        by_key = argsort(ctx, take_along_axis(ctx, key, order, axis), axis, kind="stable")
        order = take_along_axis(ctx, order, by_key, axis)
    return order


FUNCTIONS: dict[Any, Handler] = {
    np.cumsum: running(Op.CUMSUM), np.cumprod: running(Op.CUMPROD),
    np.sort: sort, np.argsort: argsort, np.lexsort: lexsort,
    np.argpartition: _partition(Op.ARGSORT), np.partition: _partition(Op.SORT),
}
METHODS: dict[str, Handler] = {
    "cumsum": running(Op.CUMSUM), "cumprod": running(Op.CUMPROD),
    "argsort": argsort, "argpartition": _partition(Op.ARGSORT), "sort": method_sort,
}
