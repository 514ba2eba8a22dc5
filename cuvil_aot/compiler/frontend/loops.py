"""Loops whose trip count is known only at run time: one IR loop (ir/loop.py).

The interpreter unrolls every loop over a constant range. ``for t in range(xs.shape[1])``
over a symbolic dimension, or ``range(n)`` of an int parameter, is interpreted once
instead, with stand-ins: the index is a run-time int (``%_loop0_t``, usable as any int
argument: ``xs[:, t, :]`` is a gather of it), each variable the body assigns that exists
before the loop is a carried value (a parameter of the dtype and shape it has before
the loop; a different dtype or shape after one iteration is refused; a Python number
stays weak, NEP 50, read through a weak cast of its 0-d buffer), and what the body
reads from outside is captured. What the body computes from outside values only (a
loop-invariant ``w * 2``) is computed once, before the loop. After the loop each carried
variable is an ``Op.LOOP_OUT`` node; the loop variable and the names only the body
assigns cannot be read (they would need the last iteration's value). The checks at the
call the body records (a division by an argument that is zero: call_checks.py) are made
only where the loop has a trip, as Python runs its body only then.

An array the body assigns into (``y[t] = v``, ``k_cache[:, pos + t] = k``, ``x += v``) is
carried and written in place: the body's record of assignments (assign.py, its own) makes
it the body function's ``inplace`` pair, one buffer across iterations
(codegen/run_time_loops.py), an index the body computes a scatter of 0-d indices checked
each iteration; after the loop every name of the array, and the caller for an argument,
holds the loop's result (assign.rebind).

A run-time loop inside another's body is the same, one level down: a LOOP_OUT in the
outer body function, its bounds computed once per call (so not from the outer loop's
variable or carried values: ``for j in range(i)`` is refused).

Refused: ``break``, ``continue`` and ``return`` in the body, bounds computed from array
data, slices whose bounds depend on the loop index
(``xs[:, t:t + 2]``; ``xs[:, t]`` works), and of assignments into arrays: through another
name the body reads, into a name the body then rebinds, and from a function it calls.
"""

from __future__ import annotations

import ast
import dataclasses
from collections.abc import Callable
from typing import Any

from cuvil_aot.compiler.frontend import assign, call_checks, ufunc_out, while_trips
from cuvil_aot.compiler.frontend.user_error import UserError
from cuvil_aot.compiler.frontend.values import (
    Unbound,
    apply,
    is_symbolic,
    run_time_origin,
    to_node,
)
from cuvil_aot.compiler.ir.loop import LoopBody, RunTimeRange
from cuvil_aot.compiler.ir.node import Function, Node, Param, toposort
from cuvil_aot.compiler.ir.ops import ELEMENTWISE, Op
from cuvil_aot.compiler.ir.run_time import RunTimeSlice
from cuvil_aot.compiler.ir.types import Dim, TensorType
from cuvil_aot.errors import SourceSpan

CARRY_HINT = "give it its final dtype and shape before the loop: h = np.zeros((B, H), x.dtype)"
NESTED_HINT = ("bounds from int arguments and dimensions (for j in range(n)), a constant trip "
               "count for the inner loop (it unrolls), or mask: for j in range(n): "
               "... np.where(j < i, ...)")


def run_time_range(call: ast.expr, evaluate: Callable[[ast.expr], Any]) -> list[Any] | None:
    """The arguments of ``range(...)`` (a loop's iterable) when one is known only at run
    time."""
    if not isinstance(call, ast.Call) or call.keywords or \
            any(isinstance(a, ast.Starred) for a in call.args) or evaluate(call.func) is not range:
        return None
    args = [evaluate(a) for a in call.args]
    if any(isinstance(v, Node) and not v.shape or is_symbolic(v) for v in args):
        return args
    return None


def run_loop(interp: Any, stmt: ast.For, args: list[Any] | None, poison: Any,
             test: ast.expr | None = None) -> None:
    """Interpret a run-time loop once, as ir/loop.py's LoopBody, and bind what it carries:
    ``for`` over range(*args), or ``while test`` (args None), its trips counted on the
    numbers the condition reads (while_trips.py)."""
    span = interp.span(stmt)
    _refuse_forms(interp, stmt)
    if args is not None and any(a is poison for a in args):
        return
    bounds = None if args is None else _bounds(args, interp.span(stmt.iter))
    scope = interp.frames[-1].scope
    target = stmt.target
    assert isinstance(target, ast.Name)
    owners = _owners(interp, stmt, poison, span)
    written = set(owners)
    assigned = _assigned(stmt.body) - {target.id}
    carried = sorted(n for n in assigned | written
                     if n in scope and not isinstance(scope[n], Unbound))
    number = interp.loop_count
    interp.loop_count += 1
    mark = len(interp.run_time)
    found = _carry(interp, stmt, carried, number, poison, span, test)
    temps = set() if found is None else _changed(carried, found[0], found[3], span)
    temps &= _written_first(stmt.body)
    if temps:  # overwritten before it is read, with another dtype or shape: a temporary
        carried = [n for n in carried if n not in temps]
        del interp.run_time[mark:]  # what the first reading recorded
        found = _carry(interp, stmt, carried, number, poison, span, test)
    if found is None:
        for name in sorted(assigned) + [target.id]:
            scope[name] = poison
        return
    types, inits, body, outs, cond, record = found
    _check_carried(carried, types, outs, span)
    inplace = _in_place(carried, outs, record, span)
    written = {carried[j] for j, _ in inplace}
    if bounds is None:
        assert test is not None
        bounds = while_trips.trips(cond, body[1:1 + len(carried)], inits,
                                   [to_node(o, span) for o in outs], interp.span(test))
    _check_outer_independent(interp, bounds, span)
    loop = _body(body, carried, types, outs, bounds, number, span, inplace)
    captured_outer = loop[1]
    srcs = tuple(_init(i, t) for i, t in zip(inits, types)) + captured_outer
    for j, name in enumerate(carried):
        scope[name] = Node(Op.LOOP_OUT, types[j], srcs, attrs=(loop[0], j), span=span)
        if name in written:  # the same array, written: its other names (and the caller) see it
            assign.rebind(interp, inits[j], scope[name], owners[name], span)
    trips = to_node(Dim.of(loop[0].range.size_symbol), span)
    call_checks.guard(interp.run_time, mark, apply(Op.GT, [trips, 0], span))  # a first trip
    interp.run_time.append(loop[0].range)
    scope[target.id] = Unbound(f"'{target.id}' is the variable of a run-time loop: its value "
                               "after the loop is not supported")
    for name in sorted(assigned - set(carried)):
        why = "not before it" if name not in temps else "with another dtype or shape"
        scope[name] = Unbound(f"'{name}' is assigned in a run-time loop {why}: its value "
                              "after the loop is not supported")


def _carry(interp: Any, stmt: ast.For, carried: list[str], number: int, poison: Any,
           span: SourceSpan, test: ast.expr | None
           ) -> tuple[list[TensorType], list[Node], tuple[Node, ...], list[Any], Any,
                      assign.Writes] | None:
    """The body interpreted with ``carried`` as its carried values: (their types, initial
    values, the body's parameters, their values after one iteration, ``test``'s truth
    before it, its assignments into arrays); None on an error."""
    scope = interp.frames[-1].scope
    inits = []
    for name in carried:
        value = scope[name]
        if value is poison:
            return None
        if not isinstance(value, Node | Dim | bool | int | float):
            raise UserError(f"'{name}' is {interp.describe(value)}, which a run-time loop "
                            "cannot carry: only arrays and numbers can be reassigned in "
                            "its body", span)
        inits.append(to_node(value, span))
    types = [TensorType(i.dtype, i.shape) for i in inits]
    result: tuple[tuple[Node, ...], list[Any], Any, assign.Writes] | None = None
    if any(i.type.weak for i in inits):  # a Python number: its dtype after one iteration
        probe = [TensorType(t.dtype, t.shape, i.type.weak) for t, i in zip(types, inits)]
        result = _interpret(interp, stmt, carried, probe, number, poison, True, None)
        if result is not None:
            types = [_retyped(t, o, span) if i.type.weak else t
                     for t, o, i in zip(types, result[1], inits)]
    if result is not None or not any(i.type.weak for i in inits):
        result = _interpret(interp, stmt, carried, types, number, poison, False, test)
    if result is None:
        return None
    return types, inits, result[0], result[1], result[2], result[3]


def _written_first(body: list[ast.stmt]) -> set[str]:
    """Names a statement of ``body`` assigns before any reads them (per statement, in
    order: a statement that reads and assigns a name reads it first)."""
    stored: set[str] = set()
    read: set[str] = set()
    for stmt in body:
        names = [n for n in ast.walk(stmt) if isinstance(n, ast.Name)]
        loads = {n.id for n in names if isinstance(n.ctx, ast.Load)}
        if isinstance(stmt, ast.AugAssign) and isinstance(stmt.target, ast.Name):
            loads.add(stmt.target.id)
        read |= loads - stored
        stored |= {n.id for n in names if isinstance(n.ctx, ast.Store)}
    return stored - read


def _changed(carried: list[str], types: list[TensorType], outs: list[Any],
             span: SourceSpan) -> set[str]:
    """The carried names whose dtype or shape one iteration changes."""
    changed = set()
    for name, t, out in zip(carried, types, outs):
        node = to_node(out, span) if isinstance(out, Node | Dim | bool | int | float) else None
        if node is None or (node.dtype, node.shape) != (t.dtype, t.shape):
            changed.add(name)
    return changed


def _refuse_forms(interp: Any, stmt: ast.For) -> None:
    if not isinstance(stmt.target, ast.Name):
        raise UserError("a run-time loop needs one name as its variable", interp.span(stmt.target),
                        "for t in range(n):")
    stack: list[ast.AST] = list(stmt.body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.FunctionDef | ast.Lambda | ast.AsyncFunctionDef):
            continue
        if isinstance(node, ast.Break | ast.Continue | ast.Return):
            word = type(node).__name__.lower()
            raise UserError(f"'{word}' inside a loop whose trip count is known only at run "
                            "time is not supported", interp.span(node),
                            "compute every iteration and select with np.where")
        stack.extend(ast.iter_child_nodes(node))


def _written(body: list[ast.stmt]) -> set[str]:
    """Names the body assigns into (``y[t] = v``, ``y[t] += v``) or updates in place
    (``y += v``: in place where y is an array)."""
    names: set[str] = set()
    stack: list[ast.AST] = list(body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.FunctionDef | ast.Lambda | ast.AsyncFunctionDef):
            continue
        if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store) \
                and isinstance(node.value, ast.Name):
            names.add(node.value.id)
        if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        if isinstance(node, ast.Call):  # np.exp(y, out=y)
            names |= ufunc_out.written_names(node)
        stack.extend(ast.iter_child_nodes(node))
    return names


def _owners(interp: Any, stmt: ast.For, poison: Any, span: SourceSpan) -> dict[str, int]:
    """For each array the body may write in place, the object it is (assign.owner_of: -1 an
    array of this function, else the argument's index); views are refused there, and
    another name of the same array that the body reads (it would not see the writes)."""
    scope = interp.frames[-1].scope
    loads = {n.id for s in stmt.body for n in ast.walk(s)
             if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    owners = {}
    for name in sorted(_written(stmt.body)):
        value = scope.get(name)
        if not isinstance(value, Node) or not value.shape or value is poison:
            continue
        owners[name] = assign.owner_of(interp, value, name, span)
        for other in sorted(loads - {name}):
            held = scope.get(other)
            if isinstance(held, dict):
                held = tuple(held.values())
            if held is value or (isinstance(held, tuple | list) and any(v is value for v in held)):
                raise UserError(f"'{other}' holds the array '{name}' that a run-time loop "
                                "writes into, and the loop reads it: not supported",
                                span, f"read it as '{name}' inside the loop")
    return owners


def _in_place(carried: list[str], outs: list[Any], record: assign.Writes,
              span: SourceSpan) -> tuple[tuple[int, int], ...]:
    """The body's (output, parameter) pairs of carried arrays it writes in place (one
    buffer across iterations, as NumPy's one array); a name rebound after its array was
    written is refused (the next iteration would write another object)."""
    pairs = []
    for param, last in sorted(record.params.items()):
        j = param - 1
        if outs[j] is not last:
            raise UserError(f"'{carried[j]}' is assigned into and then rebound in one "
                            "run-time loop: not supported", span,
                            f"write into '{carried[j]}' only (y[...] = value), or only rebind it")
        pairs.append((j, param))
    return tuple(pairs)


def _assigned(body: list[ast.stmt]) -> set[str]:
    names: set[str] = set()
    stack: list[ast.AST] = list(body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.FunctionDef):
            names.add(node.name)
            continue
        if isinstance(node, ast.Lambda | ast.AsyncFunctionDef):
            continue
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        stack.extend(ast.iter_child_nodes(node))
    return names


def _bounds(args: list[Any], span: SourceSpan) -> RunTimeRange:
    """range()'s arguments as int64 0-d nodes the wrapper computes once per call."""
    if not 1 <= len(args) <= 3:
        raise UserError(f"range expected 1 to 3 arguments, got {len(args)}", span)
    nodes = []
    for value in args:
        node = to_node(value, span)
        if node.shape or not (node.dtype.startswith(("int", "uint")) or node.dtype == "bool"):
            what = f"an array {node.type}" if node.shape else f"a {node.dtype} number"
            raise UserError(f"range() needs ints, got {what}", span)
        for n in toposort([node]):
            if not (n.op is Op.CONST or (n.op is Op.PARAM and n.type.weak)
                    or (n.op in ELEMENTWISE and not n.shape)):
                raise UserError(f"range() of {run_time_origin(node)}: the bounds of a run-time "
                                "loop must be computed from int arguments and dimensions, not "
                                "from array data", span, "pass the count as an int argument")
        if node.dtype != "int64":
            node = Node(Op.CAST, TensorType("int64", ()), (node,), span=span)
        nodes.append(node)
    if len(nodes) == 1:
        nodes.insert(0, to_node(0, span))
    if len(nodes) == 2:
        nodes.append(to_node(1, span))
    return RunTimeRange.of(nodes[0], nodes[1], nodes[2])


def _interpret(interp: Any, stmt: ast.For, carried: list[str], types: list[TensorType],
               number: int, poison: Any, probe: bool, test: ast.expr | None
               ) -> tuple[tuple[Node, ...], list[Any], Any, assign.Writes] | None:
    """Runs the body once on stand-ins: (parameters, carried values after it, ``test``'s
    truth before it, the body's own record of assignments into arrays: a carried array
    written is its parameter's); a probe (weak stand-ins for Python numbers, to learn
    their dtype) leaves no trace."""
    target = stmt.target
    assert isinstance(target, ast.Name)
    index = Node(Op.PARAM, TensorType("int64", (), weak=True),
                 attrs=(0, f"_loop{number}_{target.id}"))
    params = [Node(Op.PARAM, _buffer(t), attrs=(1 + j, f"_loop{number}_{name}"))
              for j, (name, t) in enumerate(zip(carried, types))]
    frame = interp.frames[-1]
    scope = dict(frame.scope)
    scope.update(zip(carried, (_stand_in(p, t) for p, t in zip(params, types))))
    scope[target.id] = index
    lists = [(v, len(v)) for v in frame.scope.values() if isinstance(v, list)]
    marks = [len(interp.requirements), len(interp.derived), len(interp.run_time)]
    diagnostics, interp.diagnostics = interp.diagnostics, []
    outer = assign.writes(interp)
    interp.writes = record = assign.Writes()
    before = [dict(f.scope) for f in interp.frames]
    interp.frames.append(dataclasses.replace(frame, scope=scope))
    interp.loop_depth += 1
    interp.loop_params.append({id(index)} | {id(p) for p in params})
    cond = None
    try:
        if test is not None:
            cond = interp.eval(test)
            cond = cond if cond is poison else interp.truth(cond, test)
        interp.run_block(stmt.body)
    finally:
        interp.loop_depth -= 1
        interp.loop_params.pop()
        interp.frames.pop()
        interp.writes = outer
        found, interp.diagnostics = interp.diagnostics, diagnostics
        changed = [len(f.scope) != len(b) or any(f.scope.get(k) is not v for k, v in b.items())
                   for f, b in zip(interp.frames, before)]
        for f, b in zip(interp.frames, before):
            f.scope.clear()
            f.scope.update(b)
    if any(changed):  # a function called in the body wrote an array of outside the loop
        raise UserError("assignment inside a run-time loop into an array that is not a name "
                        "of the loop's own code (an argument of a function it calls) is not "
                        "supported", interp.span(stmt), "assign in the loop's body itself")
    for items, size in lists:
        if len(items) != size:
            del items[size:]
            raise UserError("appending to a list in a run-time loop is not supported: its "
                            "length would be known only at run time", interp.span(stmt),
                            "a range() of a constant (it unrolls), or carry an array")
    outs = [scope[name] for name in carried]
    if found or cond is poison or any(o is poison for o in outs):
        diagnostics.extend(found)
        return None
    if probe:
        del interp.requirements[marks[0]:]
        del interp.derived[marks[1]:]
        del interp.run_time[marks[2]:]
        return (index, *params), outs, cond, record
    ids = {id(index)} | {id(p) for p in params}
    slices = [r for r in interp.run_time[marks[2]:] if isinstance(r, RunTimeSlice)]
    for r in slices:
        if any(id(n) in ids for b in (r.start, r.stop, r.step) if isinstance(b, Node)
               for n in toposort([b])):
            raise UserError("a slice whose bounds depend on a run-time loop's variable or "
                            "carried values is not supported", interp.span(stmt),
                            "index with the variable itself: xs[:, t]")
    return (index, *params), outs, cond, record


def _check_outer_independent(interp: Any, bounds: RunTimeRange, span: SourceSpan) -> None:
    """An inner loop's bounds are computed by the call, once: not from an enclosing loop's
    variable or carried values."""
    roots = [bounds.start, bounds.stop, bounds.step]
    if bounds.host_while is not None:
        roots += bounds.host_while.inits
    outer = set().union(*interp.loop_params)
    if any(id(n) in outer for n in toposort(roots)):
        raise UserError("a run-time loop inside another whose bounds depend on the outer "
                        "loop's variable or carried values is not supported: the call "
                        "computes the bounds once", span, NESTED_HINT)


def _retyped(t: TensorType, out: Any, span: SourceSpan) -> TensorType:
    """A Python number's carried type: the dtype one iteration gives it, and whether it is
    still a Python number then (weak, NEP 50: ``s = s * 0.5`` leaves ``x * s`` float32)."""
    if not isinstance(out, Node | Dim | bool | int | float):
        return t
    node = to_node(out, span)
    if node.shape != t.shape:
        return t
    return TensorType(node.dtype, t.shape, node.type.weak)


def _buffer(t: TensorType) -> TensorType:
    """A carried value's buffer: a Python number lives in a 0-d array of its dtype."""
    return TensorType(t.dtype, t.shape)


def _stand_in(param: Node, t: TensorType) -> Node:
    """What the body reads for a carried value: its parameter, or for a Python number a
    weak view of it, so that ``x * s`` keeps x's dtype as NumPy would (a weak parameter
    would be read as an argument of the call, not from the buffer)."""
    return Node(Op.CAST, t, (param,), span=param.span) if t.weak else param


def _check_carried(carried: list[str], types: list[TensorType], outs: list[Any],
                   span: SourceSpan) -> None:
    for name, t, out in zip(carried, types, outs):
        node = to_node(out, span) if not isinstance(out, Node) else out
        if node.dtype != t.dtype or node.shape != t.shape:
            raise UserError(f"'{name}' changes from {t} to {TensorType(node.dtype, node.shape)} "
                            "in one iteration of a run-time loop: a carried value keeps its "
                            "dtype and shape", span, CARRY_HINT)


def _is_host(node: Node, host: set[int]) -> bool:
    return node.op is Op.CONST or (node.op is Op.PARAM and node.type.weak) or (
        node.op in ELEMENTWISE and not node.shape and all(id(s) in host for s in node.srcs))


def _body(params: tuple[Node, ...], carried: list[str], types: list[TensorType],
          outs: list[Any], bounds: RunTimeRange, number: int, span: SourceSpan,
          inplace: tuple[tuple[int, int], ...]) -> tuple[LoopBody, tuple[Node, ...]]:
    """The body function: what depends on the stand-ins, reading outside values through
    captured parameters (numbers the wrapper computes stay as they are)."""
    nodes = [to_node(o, span) for o in outs]
    dep: set[int] = {id(p) for p in params}
    host: set[int] = set()
    new: dict[int, Node] = {id(p): p for p in params}
    captured: dict[int, Node] = {}
    outer: list[Node] = []

    def outside(n: Node) -> Node:
        if id(n) in host:
            return n
        if id(n) not in captured:
            k = len(params) + len(outer)
            captured[id(n)] = Node(Op.PARAM, TensorType(n.dtype, n.shape),
                                   attrs=(k, f"_loop{number}_in{len(outer)}"), span=n.span)
            outer.append(n)
        return captured[id(n)]

    for node in toposort(nodes):
        if id(node) in new:
            continue
        if any(id(s) in dep for s in node.srcs):
            dep.add(id(node))
            srcs = tuple(new[id(s)] if id(s) in dep else outside(s) for s in node.srcs)
            same = all(a is b for a, b in zip(srcs, node.srcs))
            new[id(node)] = node if same else node.replace(srcs=srcs)
        elif _is_host(node, host):
            host.add(id(node))
    results = []
    for node, t in zip(nodes, map(_buffer, types)):
        node = new[id(node)] if id(node) in dep else outside(node)
        if node.op in (Op.PARAM, Op.CONST) or node.type != t:
            node = Node(Op.CAST, t, (node,), span=node.span)
        results.append(node)
    body_params = tuple(Param(str(p.attrs[1]), p.type, p.type.weak) for p in params) + tuple(
        Param(str(captured[id(n)].attrs[1]), captured[id(n)].type, False) for n in outer)
    fn = Function(f"loop{number}", body_params,
                  params + tuple(captured[id(n)] for n in outer), tuple(results),
                  tuple(range(len(results))),
                  inplace=inplace)
    return LoopBody(fn, bounds, len(carried), tuple(carried), number), tuple(outer)


def _init(init: Node, t: TensorType) -> Node:
    """A carried value's initial value, of its type (the copies before the loop read it)."""
    t = _buffer(t)
    if init.type == t and init.op is not Op.CONST:
        return init
    return Node(Op.CAST, t, (init,), span=init.span)
