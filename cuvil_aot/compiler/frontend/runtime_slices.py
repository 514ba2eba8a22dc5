"""Slices whose bounds or step are ints known only at run time: ``x[:, : t + 1]``,
``x[:, a:b]``, ``x[:, ::s]`` with ``t``, ``a``, ``b``, ``s`` int parameters (or
expressions of them, of dimensions and of constants).

NumPy takes Python's slice semantics: a negative bound counts from the end once, a
bound out of range clamps, an empty result is fine, a zero step is a ValueError. None
of that is a polynomial of the dimensions, so the slice's start, length (and step,
where it is not a constant) become symbols the call computes (ir/run_time.py) and
the SLICE node reads them as any symbolic offset and size: no kernel changes.

Bounds computed from array values (``x[: int(n[0])]``) are refused: the wrapper sizes
every array before any kernel runs.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from cuvil_aot.compiler.frontend import builder as B
from cuvil_aot.compiler.frontend.user_error import UserError
from cuvil_aot.compiler.ir.node import Node, toposort
from cuvil_aot.compiler.ir.ops import ELEMENTWISE, Op
from cuvil_aot.compiler.ir.run_time import RunTimeSlice
from cuvil_aot.compiler.ir.types import Dim, is_int
from cuvil_aot.errors import SourceSpan

NOT_AN_INDEX = "slice indices must be integers or None or have an __index__ method"
INDEX_HINT = "int parameters, dimensions (x.shape[0]) and constants, with + - * // %"


def is_run_time(bounds: list[Any]) -> bool:
    """Whether a slice with these (folded) bounds needs this module: a bound known only
    at run time, a step that is no constant, or a bound of no integer kind (refused)."""
    *ends, step = bounds
    if step is not None and not isinstance(step, int | np.integer):
        return True
    return any(b is not None and not isinstance(b, int | np.integer | Dim) for b in ends)


def slice_bounds(bounds: list[Any], dim: Dim,
                 span: SourceSpan) -> tuple[Dim, Dim, Dim, RunTimeSlice]:
    """(start, step, size) of ``slice(*bounds)`` on an axis of size ``dim``, as symbols the
    call computes, and the record of how to compute them."""
    start, stop = (_bound(b, span) for b in bounds[:2])
    step: Node | int = 1
    if bounds[2] is not None:
        raw = bounds[2]
        if isinstance(raw, int | np.integer):
            step = int(raw)
            if step == 0:
                raise UserError("ValueError: slice step cannot be zero", span)
        else:
            node = _bound(raw, span)
            step = 1 if node is None else node
    record = RunTimeSlice.of(dim, start, stop, step)
    step_dim = Dim.of(step) if isinstance(step, int) else Dim.of(str(record.step_symbol))
    return Dim.of(record.start_symbol), step_dim, Dim.of(record.size_symbol), record


def _bound(value: Any, span: SourceSpan) -> Node | None:
    """A bound as a 0-d int node the host can compute, or None."""
    if value is None:
        return None
    if isinstance(value, bool | int | np.integer):
        return B.const(int(value), span=span)
    if isinstance(value, Dim):
        return B.const(value, span=span)
    if not isinstance(value, Node) or value.shape or \
            not (is_int(value.dtype) or value.dtype == "bool"):
        what = f"an array of shape {value.type}" if isinstance(value, Node) and value.shape \
            else f"a {value.dtype}" if isinstance(value, Node) else f"a {type(value).__name__}"
        raise UserError(f"TypeError: {NOT_AN_INDEX} (this one is {what})", span, INDEX_HINT)
    for node in toposort([value]):
        scalar_param = node.op is Op.PARAM and node.type.weak
        if node.shape or not (node.op is Op.CONST or scalar_param or node.op in ELEMENTWISE):
            raise UserError("a slice bound computed from the values of an array is not "
                            "supported: every array's size must be known before the kernels "
                            "run", span, "pass the bound as an int parameter")
    return value
