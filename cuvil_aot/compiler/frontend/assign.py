"""Assignment into arrays, as NumPy's ``__setitem__``: ``y[:, :k] = v``, ``pe[:, 0::2] = s``,
``y[..., 0] = 1.0``, ``y[mask] = 0``, ``k_cache[:, t] = k`` (``t`` an int argument),
``x[ids] = v`` (integer-array indices: a scatter, scatter.py), and the augmented forms
``y[i] += v`` and ``y += v`` (in place, as NumPy's ``__iadd__``).

Arrays are values in the IR: an assignment makes a new value, ``Op.SETITEM`` (the old
array with a region replaced), and binds it to every name that held the old array (an
alias sees the write, as in NumPy). Fusion writes it in place (passes/inplace.py). An
argument's array is the caller's: its last value is stored into the argument's own
buffer (``Function.inplace``; a hidden output where it is not returned), so the caller
sees the write, as in NumPy, and only the region is written.

The value is cast to the array's dtype as ``__setitem__`` casts (unsafe: a float into an
int array truncates); an augmented assignment casts its result with ``same_kind``, as a
NumPy in-place ufunc. A run-time int index (``t``) is a symbol the call computes, wrapped
once when negative and raising NumPy's IndexError when out of range (Function.indices).

Refused, with what to write instead: assignment into a view of another array (``v = y[:, :2];
v[...] = 0``: y would change too), a mask with an array value.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from cuvil_aot.compiler.frontend import builder as B
from cuvil_aot.compiler.frontend import scatter, subscript
from cuvil_aot.compiler.frontend.struct_arguments import ArgumentDict, ArgumentObject
from cuvil_aot.compiler.frontend.user_error import UserError, checked
from cuvil_aot.compiler.frontend.values import Unbound, fold, run_time_origin, strong, to_node
from cuvil_aot.compiler.ir import construct as C
from cuvil_aot.compiler.ir.node import Node, toposort
from cuvil_aot.compiler.ir.ops import ELEMENTWISE, MOVEMENT, Op
from cuvil_aot.compiler.ir.run_time import RunTimeSlice
from cuvil_aot.compiler.ir.types import Dim, TensorType, is_int
from cuvil_aot.errors import SourceSpan

if TYPE_CHECKING:
    from cuvil_aot.compiler.frontend.interp import Interpreter

VIEW_HINT = "assign into the array itself (y[:, :2] = v), or copy first (v = y[:, :2].copy())"


@dataclass
class Writes:
    """What the assignments of one function did: each written argument's last value (by
    parameter index), the object each assigned value is (-1: a local array, else the
    argument's index) and the run-time int indices (Function.indices)."""

    params: dict[int, Node] = field(default_factory=dict)
    objects: dict[int, int] = field(default_factory=dict)
    indices: list[tuple[str, Node, Dim, int]] = field(default_factory=list)


def setitem(interp: Interpreter, target: ast.Subscript, value: Any, poison: Any) -> None:
    """``name[index] = value`` (``poison``: the value of what already failed)."""
    name, old, index = _target(interp, target, poison)
    if old is None or value is poison:
        return
    span = interp.span(target)
    if isinstance(old, ArgumentDict):
        raise UserError(f"assignment into the dict argument {old.label} is not supported: "
                        "the caller's dict would not change", span,
                        f"a new dict: {name} = {{**{name}, ...}}")
    if isinstance(old, list | dict):  # a Python list known at compile time: Python's own
        try:
            old[fold(index)] = value
        except (TypeError, IndexError, KeyError) as exc:
            raise UserError(f"{type(exc).__name__}: {exc}", span) from None
        return
    owner = owner_of(interp, old, name, span)
    rebind(interp, old, update(interp, old, index, to_node(value, span), span), owner, span)


def augmented(interp: Interpreter, stmt: ast.AugAssign, poison: Any) -> bool:
    """``x[i] += v``, and ``x += v`` where x is an array: in place, as NumPy. False where
    the target is a name of no array (a number: Python rebinds it)."""
    target = stmt.target
    if isinstance(target, ast.Name):
        old = interp.load_name(target.id, target)
        if not isinstance(old, Node) or not old.shape:
            return False
        value = interp.eval(stmt.value)
        if value is poison:
            return True
        span = interp.span(stmt)
        owner = owner_of(interp, old, target.id, span)
        result = _same_kind(interp.binop(stmt.op, old, value, stmt), old, stmt.op, span)
        if owner < 0:  # a local array: the new value is the write (no other name sees it)
            rebind(interp, old, result, owner, span)
            return True
        rebind(interp, old, update(interp, old, Ellipsis, result, span), owner, span)
        return True
    if not isinstance(target, ast.Subscript):
        raise UserError("augmented assignment to this kind of target is not supported",
                        interp.span(target), "x[i] += v, or x = x + v")
    name, old, index = _target(interp, target, poison)
    value = interp.eval(stmt.value)
    if old is None or value is poison:
        return True
    span = interp.span(stmt)
    if not isinstance(old, Node):
        raise UserError(f"augmented assignment into {interp.describe(old)} is not supported",
                        span, "x = x + v")
    owner = owner_of(interp, old, name, span)
    current = interp.subscript(old, index, target)
    result = _same_kind(interp.binop(stmt.op, current, value, stmt), old, stmt.op, span)
    rebind(interp, old, update(interp, old, index, result, span), owner, span)
    return True


def _target(interp: Interpreter, target: ast.Subscript, poison: Any) -> tuple[str, Any, Any]:
    """(name, its value, the index): the value None where something already failed."""
    if isinstance(target.value, ast.Name):
        old = interp.load_name(target.value.id, target.value)
    else:
        old = _item_of_container(interp, target.value, poison)
    index = interp.eval(target.slice)
    if old is poison or index is poison:
        return ast.unparse(target.value), None, None
    return ast.unparse(target.value), old, index


def _item_of_container(interp: Interpreter, expr: ast.expr, poison: Any) -> Any:
    """``cache["k"]`` of ``cache["k"][t] = v``: an array held by a dict, list or tuple (a
    dict argument's item, written in place as an argument is); not a view of an array
    (``x[i][j] = v``)."""
    if isinstance(expr, ast.Subscript):
        container = interp.eval(expr.value)
        if container is poison:
            return poison
        if isinstance(container, dict | list | tuple | ArgumentDict):
            key = interp.eval(expr.slice)
            return poison if key is poison else interp.subscript(container, key, expr)
    if isinstance(expr, ast.Attribute):  # self.cache[t] = k: an argument's array
        owner = interp.eval(expr.value)
        if owner is poison or isinstance(owner, ArgumentObject) and expr.attr in owner.items:
            return poison if owner is poison else owner.read(expr.attr)
    raise UserError("assignment into this expression is not supported: only into a "
                    "name's array or an array a dict or list holds", interp.span(expr),
                    "x[i, j] = v, not x[i][j] = v")


def unsupported_target(interp: Interpreter, target: ast.expr) -> UserError:
    """Why ``target = value`` is refused (names and items are assigned elsewhere)."""
    if isinstance(target, ast.Attribute):
        return UserError(f"assignment to the attribute {ast.unparse(target)} is not "
                         "supported: compiled code reads the instance, it does not change it",
                         interp.span(target), "return the new value and assign it after the "
                         "call; an array attribute may be written in place: "
                         f"{ast.unparse(target)}[...] = v")
    return UserError("assignment to this kind of target is not supported",
                     interp.span(target), "assign to names, x[i] = v")


def writes(interp: Interpreter) -> Writes:
    """The interpreter's record of assignments (made at its first assignment)."""
    record = getattr(interp, "writes", None)
    if record is None:
        record = Writes()
        interp.writes = record  # type: ignore[attr-defined]
    return record


def owner_of(interp: Interpreter, old: Node, name: str, span: SourceSpan) -> int:
    """Which object ``old`` is: -1 for an array of this function, else the index of the
    argument it is. Views of other arrays are refused (their base would change too)."""
    known = writes(interp).objects.get(id(old))
    if known is not None:
        return known
    if old.op is Op.PARAM:
        if old.type.weak:
            raise UserError(f"'{name}' is a number: item assignment is not supported", span)
        return int(old.attrs[0])
    base = old
    while base.op in MOVEMENT:
        base = base.srcs[0]
    if base is not old and base.shape:  # np.zeros(...) is a broadcast of a number: fresh
        raise UserError(f"assignment into '{name}', a view of another array (a slice, "
                        "transpose, reshape or broadcast), is not supported: NumPy would "
                        "change that array too", span, VIEW_HINT)
    if not old.shape and old.type.weak:
        raise UserError(f"'{name}' is a number: item assignment is not supported", span)
    return -1


def rebind(interp: Interpreter, old: Node, new: Node, owner: int, span: SourceSpan) -> None:
    """Every name (of every frame, also inside tuples, lists and dicts) that held ``old`` holds
    ``new``: they are one object, which the assignment changed. A name holding a view of
    ``old`` (a slice, transpose, reshape or broadcast of it), whose NumPy view would show
    the write and whose value here would not, is unbound: reading it is refused; a list,
    tuple or dict holding one refuses the write."""
    for frame in interp.frames:
        for key, value in list(frame.scope.items()):
            if value is not old and _views(value, old):
                frame.scope[key] = Unbound(
                    f"'{key}' is a view of an array written after it was taken: in NumPy it "
                    f"shows the write, here it would not; take the view again after the "
                    f"write, or copy it before ({key} = ....copy())")
    viewer = _viewer(interp, old)
    if viewer is not None:
        raise UserError(f"'{viewer}' holds a view of the array this assignment writes: in "
                        f"NumPy that view would show the write; not supported", span,
                        "copy it before the write (....copy()), or take the view after it")
    record = writes(interp)
    record.objects[id(new)] = owner
    if owner >= 0:
        record.params[owner] = new
    for frame in interp.frames:
        for key, value in list(frame.scope.items()):
            frame.scope[key] = _replaced(value, old, new)


def _views(value: Any, old: Node) -> bool:
    """Whether ``value`` is a view of ``old`` (not ``old`` itself)."""
    base = value
    while isinstance(base, Node) and base.op in MOVEMENT and base is not old:
        base = base.srcs[0]
    return base is old and value is not old


def _viewer(interp: Interpreter, old: Node) -> str | None:
    """A name whose list, tuple or dict holds a view of ``old``, if any."""
    stack = [(key, value) for frame in interp.frames for key, value in frame.scope.items()
             if isinstance(value, tuple | list | dict)]
    while stack:
        key, value = stack.pop()
        if isinstance(value, tuple | list | dict):
            stack.extend((key, v) for v in (value.values() if isinstance(value, dict) else value))
        elif _views(value, old):
            return key
    return None


def _replaced(value: Any, old: Node, new: Node) -> Any:
    if value is old:
        return new
    if isinstance(value, tuple):
        return tuple(_replaced(v, old, new) for v in value)
    if isinstance(value, list):
        value[:] = [_replaced(v, old, new) for v in value]
    if isinstance(value, dict):
        value.update((k, _replaced(v, old, new)) for k, v in value.items())
    if isinstance(value, ArgumentDict | ArgumentObject):
        value.replace_items(lambda v: _replaced(v, old, new))
    return value


def _same_kind(result: Any, old: Node, op: ast.operator, span: SourceSpan) -> Node:
    """An in-place ufunc's result cast back with ``same_kind``, as NumPy casts it."""
    node = to_node(result, span)
    if not np.can_cast(node.dtype, old.dtype, "same_kind"):
        ufunc = {"Add": "add", "Sub": "subtract", "Mult": "multiply", "Div": "divide",
                 "FloorDiv": "floor_divide", "Mod": "remainder", "Pow": "power",
                 "BitAnd": "bitwise_and", "BitOr": "bitwise_or", "BitXor": "bitwise_xor",
                 "LShift": "left_shift", "RShift": "right_shift"}
        raise UserError(f"UFuncTypeError: Cannot cast ufunc "
                        f"'{ufunc.get(type(op).__name__, type(op).__name__)}' output from "
                        f"dtype('{node.dtype}') to dtype('{old.dtype}') with casting rule "
                        "'same_kind'", span, "write x = x + v for a result of a wider type")
    return strong(C.cast(node, old.dtype, span))


def update(interp: Interpreter, old: Node, index: Any, value: Node, span: SourceSpan) -> Node:
    """``old`` with ``old[index]`` replaced by ``value`` (cast as __setitem__ casts)."""
    items = list(index) if isinstance(index, tuple) else [index]
    value = _cast(value, old.dtype, span)
    mask = _mask(old, items, value, span)
    if mask is not None:
        return mask
    if scatter.has_arrays(items) or (interp.loop_depth and _has_run_time_int(items)):
        # integer-array indices (frontend/scatter.py), or in a run-time loop's body an int
        # the kernel computes each iteration (``y[t] = v``): a scatter of 0-d indices
        return scatter.update(old, items, value, span,
                              lambda basic: _region(interp, old, basic, span))
    items = _run_time_ints(interp, old, items, span)
    view, region, starts, steps = _region(interp, old, items, span)
    while value.type.ndim > view.type.ndim and C.same(value.shape[0], 1):
        value = C.reshape(value, value.shape[1:], span)  # NumPy drops leading 1s
    placed = checked(B.broadcast_to, value, view.shape, span, span=span)
    placed = C.reshape(placed, region.shape, span)
    if owner_is_local(interp, old) and all(s == Dim.of(0) for s in starts) \
            and all(s == Dim.of(1) for s in steps) and C.same_shape(region.shape, old.shape):
        return Node(Op.CAST, TensorType(old.dtype, old.shape), (placed,), span=span)  # a copy
    return Node(Op.SETITEM, TensorType(old.dtype, old.shape), (old, placed),
                attrs=(tuple(starts), tuple(steps)), span=span)


def _has_run_time_int(items: list[Any]) -> bool:
    return any(isinstance(i, Node) and not i.shape and i.op is not Op.CONST for i in items)


def _region(interp: Interpreter, old: Node, items: list[Any], span: SourceSpan
            ) -> tuple[Node, Node, tuple[Dim, ...], tuple[Dim, ...]]:
    """(the view ``old[items]``, the slice of ``old`` under it, its starts and steps): what
    basic items (ints, slices, None, ...) select, with what the slices need of the call."""
    view, needs = subscript.index(old, tuple(items), span)
    symbols = {s for s, _, _, _ in writes(interp).indices}
    for need in needs:
        if isinstance(need, subscript.Derived):
            interp.derived.append((need.name, need.length, need.step))
        elif isinstance(need, RunTimeSlice):
            interp.run_time.append(need)
        elif not need[0].symbols & symbols:  # an index symbol is in range: it was checked
            interp.requirements.append(need)
    region = view
    while region is not old and region.op is Op.RESHAPE:
        region = region.srcs[0]
    if region is old:
        starts, steps = (Dim.of(0),) * old.type.ndim, (Dim.of(1),) * old.type.ndim
    elif region.op is Op.SLICE and region.srcs[0] is old:
        starts, steps = region.attrs
    else:
        raise RuntimeError(f"assignment: unexpected view {region.op} of the target")
    return view, region, tuple(starts), tuple(steps)


def owner_is_local(interp: Interpreter, old: Node) -> bool:
    return old.op is not Op.PARAM and writes(interp).objects.get(id(old), -1) < 0


def _cast(value: Node, dtype: str, span: SourceSpan) -> Node:
    """``value`` as ``dtype``, as __setitem__ converts it (unsafe casting; a Python int out of
    an integer dtype's range raises NumPy's OverflowError, at the call for an int known
    only then)."""
    if value.op is Op.CONST and value.type.weak and is_int(dtype) \
            and isinstance(value.attrs[0], int) and not isinstance(value.attrs[0], bool):
        info = np.iinfo(dtype)
        if not info.min <= value.attrs[0] <= info.max:
            raise UserError(f"OverflowError: Python integer {value.attrs[0]} out of bounds "
                            f"for {dtype}", span)
    elif value.type.weak and value.dtype == "int64" and not value.shape and is_int(dtype):
        B.check_python_int(value, dtype)
    return strong(C.cast(value, dtype, span))


def _mask(old: Node, items: list[Any], value: Node, span: SourceSpan) -> Node | None:
    """``x[mask] = v`` with a boolean mask of x's shape and a number: np.where."""
    if len(items) != 1 or not isinstance(items[0], Node) or items[0].dtype != "bool" \
            or not items[0].shape:
        return None
    mask = items[0]
    if mask.type.ndim != old.type.ndim:
        raise UserError("assignment with a boolean mask of fewer dimensions than the array "
                        "is not supported", span, "a mask of the array's shape")
    if value.shape:
        raise UserError("assignment of an array through a boolean mask is not supported: "
                        "its size is the number of True values", span,
                        "np.where(mask, values_of_the_array_shape, x)")
    for axis, (d, m) in enumerate(zip(old.shape, mask.shape)):
        message = (f"boolean index did not match indexed array along axis {axis}; size of "
                   "axis is ", d, " but size of corresponding boolean axis is ", m)
        if not C.unify(d, m, message):
            raise UserError(f"IndexError: boolean index did not match indexed array along "
                            f"axis {axis}; size of axis is {d} but size of corresponding "
                            f"boolean axis is {m}", span)
    where = B.elementwise(Op.WHERE, [mask, value, old], span)
    return Node(Op.CAST, TensorType(old.dtype, old.shape), (where,), span=span)


def _run_time_ints(interp: Interpreter, old: Node, items: list[Any],
                   span: SourceSpan) -> list[Any]:
    """Items with each 0-d int known at run time replaced by a symbol the call computes,
    wrapped and checked against its axis (Function.indices)."""
    used = sum(1 for i in items if i is not None and i is not Ellipsis)
    out: list[Any] = []
    axis = 0
    for item in items:
        if isinstance(item, Node) and not item.shape:
            if item.dtype == "bool" or not is_int(item.dtype):
                raise UserError("IndexError: only integers, slices (`:`), ellipsis (`...`), "
                                "numpy.newaxis (`None`) and integer or boolean arrays are "
                                "valid indices", span)
            for n in toposort([item]):
                if n.shape or not (n.op in (Op.CONST, Op.PARAM) or n.op in ELEMENTWISE):
                    raise UserError(f"an index computed from array values "
                                    f"({run_time_origin(item)}) is not supported in an "
                                    "assignment", span,
                                    "int arguments and dimensions, with + - * // %")
            record = writes(interp)
            symbol = f"idx{len(record.indices)}"
            if axis >= old.type.ndim:
                raise UserError(f"too many indices: the array has {old.type.ndim} dimensions",
                                span)
            record.indices.append((symbol, item, old.shape[axis], axis))
            item = Dim.of(symbol)
        out.append(item)
        if item is Ellipsis:
            axis += old.type.ndim - used
        elif item is not None:
            axis += 1
    return out


def finish(interp: Interpreter, outputs: list[Node], facts: C.Assumptions
           ) -> tuple[list[Node], dict[str, Any]]:
    """The function's outputs with each written argument's last value added (hidden, where
    it is not returned), and the Function fields that say where they are stored."""
    record = writes(interp)
    outputs = list(outputs)
    returned = len(outputs)
    inplace = []
    for param, last in sorted(record.params.items()):
        k = next((i for i, o in enumerate(outputs) if o is last), None)
        if k is None:
            outputs.append(last)
            k = len(outputs) - 1
        inplace.append((k, param))
    indices = tuple((s, facts.apply((node,))[0], facts.resolve(size), axis)
                    for s, node, size, axis in record.indices)
    return outputs, {"inplace": tuple(inplace), "hidden": len(outputs) - returned,
                     "indices": indices}
