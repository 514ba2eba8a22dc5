"""Sizes the call computes from scalar arguments: a slice whose bounds are run-time ints.

``x[:, : t + 1]`` with ``t: int`` has a length no dimension arithmetic can name: it is
Python's ``len(range(*slice(start, stop, step).indices(n)))``, negative bounds
wrapping once and out-of-range bounds clamping. The frontend (runtime_slices.py)
records one ``RunTimeSlice`` per such slice of an axis, and the slice's start, length
and (run-time) step become dimension symbols of their own; the wrapper computes them
once per call, before any kernel runs (codegen/run_time_sizes.py), so the kernels read
them as any symbolic slice offset, through their ``sym_*`` fields.

The bounds are 0-d IR nodes computed only from scalar parameters, constants and
dimensions (the host computes them as host_scalars.py computes a hoisted value).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from cuvil_aot.compiler.ir.node import Node, toposort
from cuvil_aot.compiler.ir.ops import Op
from cuvil_aot.compiler.ir.types import Dim


@dataclass(frozen=True)
class RunTimeSlice:
    """``slice(start, stop, step).indices(dim)`` of one axis, per call: the symbols
    ``start_symbol`` (the first index, 0 where the slice is empty), ``size_symbol`` (its
    length) and ``step_symbol`` (None where ``step`` is a constant)."""

    dim: Dim = field(compare=False)
    start: Node | None = field(compare=False)
    stop: Node | None = field(compare=False)
    step: Node | int = field(compare=False)
    key: str  # a digest of the above: equal slices share their symbols (and compare equal)

    @staticmethod
    def of(dim: Dim, start: Node | None, stop: Node | None, step: Node | int) -> RunTimeSlice:
        text = f"{dim}|{describe(start)}|{describe(stop)}|{describe(step)}"
        return RunTimeSlice(dim, start, stop, step, hashlib.sha256(text.encode()).hexdigest()[:8])

    @property
    def start_symbol(self) -> str:
        return f"run{self.key}_start"

    @property
    def size_symbol(self) -> str:
        return f"run{self.key}_len"

    @property
    def step_symbol(self) -> str | None:
        return f"run{self.key}_step" if isinstance(self.step, Node) else None

    @property
    def defines(self) -> list[str]:
        """The symbols this slice computes."""
        step = self.step_symbol
        return [self.start_symbol, self.size_symbol] + ([step] if step else [])

    @property
    def uses(self) -> frozenset[str]:
        """The symbols its bounds and its axis' size read."""
        nodes = toposort([b for b in (self.start, self.stop, self.step) if isinstance(b, Node)])
        found = set(self.dim.symbols)
        for n in nodes:
            if n.op is Op.CONST and isinstance(n.attrs[0], Dim):
                found |= n.attrs[0].symbols
        return frozenset(found)

    def __str__(self) -> str:
        bounds = ":".join(describe(b) for b in (self.start, self.stop, self.step))
        return f"{', '.join(self.defines)} = slice({bounds}) of {self.dim}"


def describe(value: Node | int | None) -> str:
    """A bound as text, structurally (equal text: equal value at every call)."""
    if value is None:
        return ""
    if not isinstance(value, Node):
        return str(value)
    if value.op is Op.PARAM:
        return f"%{value.attrs[1]}"
    if value.op is Op.CONST:
        return f"{value.attrs[0]}:{value.dtype}"
    args = ",".join(describe(s) for s in value.srcs)
    return f"{value.op.name.lower()}:{value.dtype}({args})"


Text = tuple[str | Node, ...]
"""A message the call raises: text, and 0-d ints it prints as their values at the call."""


@dataclass(frozen=True)
class CallCheck:
    """``if cond: raise error(message)``: the wrapper raises NumPy's (Python's) exception
    at the call where ``cond`` holds, before any kernel runs; ``cond`` and the message's
    numbers are 0-d, computed from scalar arguments, dimensions and constants
    (frontend/branches.py's raise, frontend/call_checks.py's checks of Python's and
    NumPy's own errors)."""

    cond: Node = field(compare=False)
    error: str  # a builtin exception's name: ValueError; "": no match (a version's condition)
    message: Text = field(compare=False)
    key: str  # a digest of the above: equal checks are made once

    @staticmethod
    def of(cond: Node, error: str, message: str | Text) -> CallCheck:
        parts = (message,) if isinstance(message, str) else tuple(message)
        text = f"{describe(cond)}|{error}|{_text(parts)}"
        return CallCheck(cond, error, parts, hashlib.sha256(text.encode()).hexdigest()[:8])

    @property
    def defines(self) -> list[str]:
        return []

    @property
    def uses(self) -> frozenset[str]:
        numbers = [p for p in self.message if isinstance(p, Node)]
        return frozenset(s for n in toposort([self.cond, *numbers])
                         if n.op is Op.CONST and isinstance(n.attrs[0], Dim)
                         for s in n.attrs[0].symbols)

    def __str__(self) -> str:
        return f"if {describe(self.cond)}: raise {self.error}({_text(self.message)!r})"


def _text(message: Text) -> str:
    return "".join(p if isinstance(p, str) else "{" + describe(p) + "}" for p in message)
