"""``x[...]`` on an array: basic indexing with ints, slices, ``None`` and ``...``
(integer arrays among them: a gather, see gather.py).

Bounds known at compile time are checked now. Symbolic bounds that cannot be
proven in range become run-time requirements (checked by the wrapper once
the argument shapes are known: an int index out of range raises NumPy's IndexError), and
a symbolic slice length that is no polynomial of the dimensions, ceil(length / step),
becomes a derived symbol the wrapper computes. A slice whose bounds may lie outside the
axis (``x[:, :4]`` or ``x[1:]`` of a symbolic one), and one whose bounds or step are ints
known only at run time (``x[:, : t + 1]``), take Python's clamping, per call:
runtime_slices.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from cuvil_aot.compiler.frontend import builder as B
from cuvil_aot.compiler.frontend import runtime_slices
from cuvil_aot.compiler.frontend.gather import advanced
from cuvil_aot.compiler.frontend.user_error import UserError
from cuvil_aot.compiler.frontend.values import fold
from cuvil_aot.compiler.ir import construct as C
from cuvil_aot.compiler.ir.node import Node
from cuvil_aot.compiler.ir.run_time import RunTimeSlice
from cuvil_aot.compiler.ir.types import Dim
from cuvil_aot.errors import SourceSpan

Requirement = C.Requirement


@dataclass(frozen=True)
class Derived:
    """A dimension symbol computed at run time: ceil(length / step)."""

    name: str
    length: Dim
    step: int


Need = Requirement | Derived | RunTimeSlice  # what a slice needs of the call


def record(needs: list[Need], into: Any) -> None:
    """Put what a slice needs of the call where the lowering collects it: ``into`` has the
    lists ``derived``, ``run_time`` and ``requirements`` (the interpreter, a handler's Ctx)."""
    for need in needs:
        if isinstance(need, Derived):
            into.derived.append((need.name, need.length, need.step))
        elif isinstance(need, RunTimeSlice):
            into.run_time.append(need)
        else:
            into.requirements.append(need)


def index(x: Node, idx: Any, span: SourceSpan) -> tuple[Node, list[Need]]:
    """Basic indexing: ints, slices (constant or symbolic bounds), None and ``...``.

    Symbolic bounds that cannot be proven in range become run-time requirements,
    checked by the wrapper once the argument shapes are known."""
    items = list(idx) if isinstance(idx, tuple) else [idx]
    if any(isinstance(item, Node | list | np.ndarray) for item in items):
        if sum(1 for i in items if i is not None and i is not Ellipsis) > x.type.ndim:
            raise UserError(f"too many indices: the array has {x.type.ndim} dimensions", span)
        basic, gather_from = advanced(x, items, span)  # arrays: a gather (gather.py)
        sliced, basic_needs = index(x, tuple(basic), span)
        return gather_from(sliced), basic_needs
    if sum(1 for i in items if i is Ellipsis) > 1:
        raise UserError("an index can only have a single ellipsis ('...')", span)
    used = sum(1 for i in items if i is not None and i is not Ellipsis)
    if used > x.type.ndim:
        raise UserError(f"too many indices: the array has {x.type.ndim} dimensions, "
                        f"{used} were indexed", span)
    at = next((i for i, item in enumerate(items) if item is Ellipsis), len(items))
    items[at:at + 1] = [slice(None)] * (x.type.ndim - used)
    starts, steps, sizes, out_shape = [], [], [], []
    needs: list[Need] = []
    axis = 0
    for item in items:
        if item is None:
            out_shape.append(Dim.of(1))
            continue
        dim = x.shape[axis]
        axis += 1
        if isinstance(item, slice):
            start, step, size = _slice_bounds(item, dim, span, needs)
            out_shape.append(size)
        elif isinstance(item, int | Dim):
            start, step, size = _int_index(item, dim, axis - 1, span, needs)
        else:
            raise UserError(f"unsupported index {item!r}", span, "ints, slices, None, ...")
        starts.append(start)
        steps.append(step)
        sizes.append(size)
    node = B.slice_axes(x, starts, steps, sizes, span)
    return C.reshape(node, tuple(out_shape), span), needs


def _int_index(i: int | Dim, dim: Dim, axis: int, span: SourceSpan,
               needs: list[Need]) -> tuple[Dim, Dim, Dim]:
    i = Dim.of(i)
    if i.is_static and dim.is_static:
        if not -dim.value <= i.value < dim.value:
            raise UserError(f"index {i.value} is out of bounds for axis with size {dim.value}",
                            span)
        return Dim.of(i.value % dim.value), Dim.of(1), Dim.of(1)
    start = dim + i if i.is_static and i.value < 0 else i
    numpy = C.Raises("IndexError", ("index ", i, f" is out of bounds for axis {axis} with size ",
                                    dim))
    needs += [(need, numpy) for need, _ in _bounds(start, start + 1, dim, span)]
    return start, Dim.of(1), Dim.of(1)


def _slice_bounds(s: slice, dim: Dim, span: SourceSpan,
                  needs: list[Need]) -> tuple[Dim, Dim, Dim]:
    """(start, step, size) of the slice; a bound that may lie outside ``dim`` clamps as
    in Python, at the call (a run-time slice), where none can the sizes stay polynomials."""
    bounds = [fold(v) for v in (s.start, s.stop, s.step)]
    if not runtime_slices.is_run_time(bounds):
        found: list[Need] = []
        start, step, size = _static_slice(bounds, dim, span, found)
        if not any(isinstance(n, tuple) for n in found):
            needs += found
            return start, step, size
    start, step_dim, size, record = runtime_slices.slice_bounds(bounds, dim, span)
    needs.append(record)
    return start, step_dim, size


def _static_slice(bounds: list[Any], dim: Dim, span: SourceSpan,
                  needs: list[Need]) -> tuple[Dim, Dim, Dim]:
    step = 1 if bounds[2] is None else bounds[2]
    if not isinstance(step, int) or step == 0:
        raise UserError("slice steps must be nonzero integer constants", span)
    if dim.is_static and all(b is None or isinstance(b, int) for b in bounds[:2]):
        lo, hi, stride = slice(bounds[0], bounds[1], step).indices(dim.value)
        return Dim.of(lo), Dim.of(stride), Dim.of(len(range(lo, hi, stride)))
    if step < 0:  # walking down from start to just above stop (-1 means past index 0)
        start = _symbolic_bound(bounds[0], dim, dim - 1)
        stop = Dim.of(-1) if bounds[1] is None else _symbolic_bound(bounds[1], dim, dim)
        size = _ceil_div(start - stop, -step, needs)
        needs += _bounds(stop + 1, start + 1, dim, span)
        return start, Dim.of(step), size
    start = _symbolic_bound(bounds[0], dim, Dim.of(0))
    stop = _symbolic_bound(bounds[1], dim, dim)
    size = _ceil_div(stop - start, step, needs)
    needs += _bounds(start, stop, dim, span)
    return start, Dim.of(step), size


def _symbolic_bound(value: Any, dim: Dim, default: Dim) -> Dim:
    if value is None:
        return default
    bound = Dim.of(value)
    return dim + bound if bound.is_static and bound.value < 0 else bound


def _ceil_div(length: Dim, step: int, needs: list[Need]) -> Dim:
    size = length if step == 1 else (length + (step - 1)).exact_div(step)
    if size is not None:
        return size
    name = C.derived_symbol(length, step)  # ceil(length / step) is no polynomial: a run-time symbol
    needs.append(Derived(name, length, step))
    return Dim.of(name)




def _bounds(start: Dim, stop: Dim, dim: Dim, span: SourceSpan) -> list[Requirement]:
    """What must hold for [start:stop] to lie within ``dim``, where not provable now."""
    where = f"the index at {span} ({span.text.strip()})"
    return [(expr, f"{where} needs {expr} >= 0") for expr in (start, stop - start, dim - stop)
            if not expr.known_nonnegative()]
