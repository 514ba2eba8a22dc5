"""A ``for`` loop whose trip count is known only at run time (frontend/loops.py).

``for t in range(xs.shape[1]): h = np.tanh(xs[:, t, :] @ w_xh + h @ w_hh)`` is one
``LoopBody``: a sub-function of one iteration whose parameters are the loop index (a
run-time int, ``%_loop0_t``, read by the kernels as an int argument), the carried
values (``h``: fixed dtype and shape) and the values it reads from outside the loop
(captured), and whose outputs are the carried values' next values. In the function's
graph each carried value after the loop is an ``Op.LOOP_OUT`` node: srcs (initial
values..., captured values...), attrs (body, j). The trip count, start and step are
symbols the call computes once (``RunTimeRange``, with ``range()``'s semantics: a zero
step raises ValueError), the body's kernels run in a C loop, the carried values
double-buffered (codegen/run_time_loops.py), or one buffer written in place where the body
assigns into it (``y[t] = v``: the body function's ``inplace``).

Before (IR of the function, the body apart)::

    %0 = loop_out(%h0, %xs, %w_xh, %w_hh, (loop0, 0)) : float32[B,H]
    # loop0_start, loop0_step, loop0_n = range(0:int64, S:int64, 1:int64)
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from cuvil_aot.compiler.ir.node import Function, Node, toposort
from cuvil_aot.compiler.ir.ops import Op
from cuvil_aot.compiler.ir.run_time import describe
from cuvil_aot.compiler.ir.types import Dim


@dataclass(frozen=True)
class HostWhile:
    """The trip count of ``while cond: ...`` where the condition reads only numbers the
    body updates from numbers (``while n > 1: n //= 2``): the wrapper runs the loop on
    those numbers alone, once per call. ``state``: the body's parameters of those numbers,
    ``inits``: their values before the loop (known before the kernels), ``updates``: their
    values after one iteration and ``cond``: the condition, both of ``state``."""

    state: tuple[Node, ...]
    inits: tuple[Node, ...]
    updates: tuple[Node, ...]
    cond: Node

    def __str__(self) -> str:
        state = ", ".join(f"{describe(p)} = {describe(i)} -> {describe(u)}"
                          for p, i, u in zip(self.state, self.inits, self.updates))
        return f"while {describe(self.cond)}: {state}"


@dataclass(frozen=True)
class RunTimeRange:
    """``range(start, stop, step)`` of a run-time loop, per call: the symbols
    ``start_symbol``, ``step_symbol`` and ``size_symbol`` (the trip count, >= 0); for a
    while loop, ``range(0, trips, 1)`` with the trips counted by ``host_while``."""

    start: Node = field(compare=False)
    stop: Node = field(compare=False)
    step: Node = field(compare=False)
    key: str  # a digest of the bounds: equal ranges share their symbols
    host_while: HostWhile | None = field(default=None, compare=False)

    @staticmethod
    def of(start: Node, stop: Node, step: Node) -> RunTimeRange:
        text = "|".join(describe(b) for b in (start, stop, step))
        return RunTimeRange(start, stop, step, hashlib.sha256(text.encode()).hexdigest()[:8])

    @staticmethod
    def counting(host_while: HostWhile, zero: Node, one: Node) -> RunTimeRange:
        text = str(host_while)
        return RunTimeRange(zero, zero, one, hashlib.sha256(text.encode()).hexdigest()[:8],
                            host_while)

    @property
    def start_symbol(self) -> str:
        return f"loop{self.key}_start"

    @property
    def step_symbol(self) -> str:
        return f"loop{self.key}_step"

    @property
    def size_symbol(self) -> str:
        return f"loop{self.key}_n"

    @property
    def defines(self) -> list[str]:
        return [self.start_symbol, self.step_symbol, self.size_symbol]

    @property
    def uses(self) -> frozenset[str]:
        found: set[str] = set()
        roots = [self.start, self.stop, self.step]
        if self.host_while is not None:
            roots += [*self.host_while.inits, *self.host_while.updates, self.host_while.cond]
        for n in toposort(roots):
            if n.op is Op.CONST and isinstance(n.attrs[0], Dim):
                found |= n.attrs[0].symbols
        return frozenset(found)

    def __str__(self) -> str:
        if self.host_while is not None:
            return f"{', '.join(self.defines)} = range(0, trips of {self.host_while}, 1)"
        bounds = ", ".join(describe(b) for b in (self.start, self.stop, self.step))
        return f"{', '.join(self.defines)} = range({bounds})"


@dataclass(frozen=True, eq=False)
class LoopBody:
    """One iteration of a run-time loop: ``fn``'s parameters are the index (a weak int64
    0-d parameter), the ``ncarried`` carried values, then the captured values; its outputs
    are the carried values' next values. ``names``: the carried variables' names."""

    fn: Function
    range: RunTimeRange
    ncarried: int
    names: tuple[str, ...]
    number: int  # the loop's number in its function (loop0, loop1, ...)

    @property
    def index(self) -> Node:
        return self.fn.param_nodes[0]

    @property
    def carried(self) -> tuple[Node, ...]:
        return self.fn.param_nodes[1:1 + self.ncarried]

    @property
    def captured(self) -> tuple[Node, ...]:
        return self.fn.param_nodes[1 + self.ncarried:]

    def __str__(self) -> str:
        return f"loop{self.number}"


def body_of(node: Node) -> LoopBody:
    """The loop a LOOP_OUT node is a result of."""
    body = node.attrs[0]
    assert isinstance(body, LoopBody)
    return body
