"""Constructors of IR nodes that need no NumPy type rule: casts, reshapes, permutations.

Shared by the frontend's builders and by the passes that rewrite nodes. Each
returns its input unchanged where the op would do nothing (a cast to the same
dtype, a reshape to the same shape, the identity permutation), so graphs built
or rewritten with them hold no no-op nodes.

They raise ``ShapeError`` with a plain message; the frontend attaches spans.

Shapes as NumPy sees them: NumPy checks at the call that two dimensions match, so
while the frontend lowers a function (inside ``assuming()``) a comparison of two
dimensions that may be equal (``A`` and ``B`` of two arguments, ``N`` and ``4*8``)
makes them equal by assumption (``unify``): one symbol is solved for in terms of the
other, every later comparison sees them equal, ``Assumptions.apply`` rewrites the whole
graph with the substitution (so the passes and codegen see one symbol), and the
wrapper checks each ``Assumption`` at the call, in program order, raising NumPy's
ValueError where it fails. Outside ``assuming()`` (the passes) dimensions compare as
written.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import numpy as np

from cuvil_aot.compiler.ir.node import Node, rewrite
from cuvil_aot.compiler.ir.ops import Op
from cuvil_aot.compiler.ir.types import Dim, Shape, TensorType, np_dtype, shape_str
from cuvil_aot.errors import SourceSpan


class ShapeError(Exception):
    """Shapes that no op of this kind accepts."""


def derived_symbol(length: Dim, step: int | Dim) -> str:
    """A stable name for ceil(length / step): a size the call computes (a strided slice,
    a floor division of a size, an inferred -1), as Function.derived records it."""
    digest = hashlib.sha256(f"{length}/{step}".encode()).hexdigest()[:8]
    return f"ceil{step}_{digest}" if isinstance(step, int) else f"ceil_{digest}"


def total(shape: Shape) -> Dim:
    """The element count of ``shape``."""
    n = Dim.of(1)
    for d in shape:
        n = n * d
    return n


def cast(x: Node, dtype: str, span: SourceSpan | None = None) -> Node:
    """``x`` as ``dtype``; a constant is converted now, as NumPy would."""
    if x.dtype == dtype:
        return x
    if x.op is Op.CONST:
        value = x.attrs[0]
        if not isinstance(value, Dim):
            with np.errstate(all="ignore"):  # NumPy casts out-of-range Python floats to inf
                value = np.asarray(value).astype(np_dtype(dtype)).item()
        return Node(Op.CONST, TensorType(dtype, x.shape), attrs=(value,), span=x.span)
    return Node(Op.CAST, TensorType(dtype, x.shape), (x,), span=span or x.span)


def reshape(x: Node, shape: Sequence[Dim | int], span: SourceSpan | None = None) -> Node:
    """Reshape with at most one -1, checked against the element count (a count that
    matches only for some sizes is assumed to, and checked at the call)."""
    dims = [Dim.of(d) for d in shape]
    unknown = [i for i, d in enumerate(dims) if d == Dim.of(-1)]
    if len(unknown) > 1:
        raise ShapeError("can only specify one unknown dimension (-1)")
    size = total(x.shape)
    if unknown:
        known = total(tuple(d for i, d in enumerate(dims) if i != unknown[0]))
        inferred = resolved(size).exact_div(resolved(known))
        if inferred is None:
            raise ShapeError(f"cannot reshape {shape_str(x.shape)} into {shape_str(tuple(dims))}")
        dims[unknown[0]] = inferred
    new = tuple(dims)
    error = ("cannot reshape array of size ", size, " into shape ", *numpy_shape(new))
    if not unify(size, total(new), error, one_symbol=False):
        raise ShapeError(f"cannot reshape array of shape {shape_str(x.shape)} into "
                         f"shape {shape_str(new)}")
    if same_shape(new, x.shape):
        return x
    if x.op is Op.RESHAPE:
        x = x.srcs[0]
        if same_shape(x.shape, new):
            return x
    new = tuple(resolved(d) for d in new)
    return Node(Op.RESHAPE, TensorType(x.dtype, new, x.type.weak), (x,), span=span)


def regrouped(x: Node, shape: Sequence[Dim], span: SourceSpan | None = None) -> Node:
    """``x`` as ``shape``, of x's element count (a pass rewriting reshapes the frontend
    checked, at the call where the counts are symbols): no check; one reshape over the
    source of the reshapes x is, or that source itself where the shapes agree."""
    while x.op is Op.RESHAPE:
        x = x.srcs[0]
    if same_shape(tuple(shape), x.shape):
        return x
    return Node(Op.RESHAPE, TensorType(x.dtype, tuple(shape), x.type.weak), (x,), span=span)


def permute(x: Node, perm: Sequence[int], span: SourceSpan | None = None) -> Node:
    """Axes of ``x`` reordered: axis ``i`` of the result is axis ``perm[i]`` of ``x``."""
    perm = tuple(p % x.type.ndim if x.type.ndim else p for p in perm)
    if sorted(perm) != list(range(x.type.ndim)):
        raise ShapeError(f"axes {tuple(perm)} are not a permutation of {x.type.ndim} axes")
    if perm == tuple(range(x.type.ndim)):
        return x
    shape = tuple(x.shape[p] for p in perm)
    return Node(Op.PERMUTE, TensorType(x.dtype, shape, x.type.weak), (x,), attrs=(perm,), span=span)


def window(x: Node, axis: int, length: int, span: SourceSpan | None = None) -> Node:
    """The view of ``x`` in windows of ``length`` along ``axis`` (Op.WINDOW): that axis
    n - length + 1 long, a last axis of ``length``; the caller checked n >= length."""
    shape = list(x.shape)
    shape[axis] = shape[axis] - length + 1
    return Node(Op.WINDOW, TensorType(x.dtype, (*shape, Dim.of(length)), x.type.weak), (x,),
                attrs=(axis,), span=span)


# Shapes as NumPy sees them: assumed equal now, checked at the call -----------------------

Message = tuple[str | Dim, ...]
"""A run-time error message: text, and dimensions the wrapper prints as their values."""


@dataclass(frozen=True)
class Raises:
    """Why a run-time requirement holds, where NumPy checks it itself: where it fails the
    call raises NumPy's exception (``error``: its builtin name) with ``message``, instead
    of failing to match the signature."""

    error: str
    message: Message


Requirement = tuple[Dim, str | Raises]
"""(expression that must be >= 0 at the call, what it guards or NumPy's error where not)."""


@dataclass(frozen=True)
class Assumption:
    """``left == right``, assumed while lowering and checked by the wrapper at the call.

    Where they differ the call raises NumPy's ``kind`` (ValueError; IndexError for index
    arrays that do not broadcast), ``error``, unless NumPy would
    broadcast the op's operands instead: where every ``(p, q, both)`` of ``fits`` has
    ``p == q`` or ``p == 1`` (or ``q == 1``, where ``both``). The compiled code does not
    broadcast a symbolic dimension (it was built for equal sizes, and a silent wrong
    answer is not an option), so then the signature does not match, with ``refusal`` as
    the reason (a SignatureShapeError where no other signature matches)."""

    left: Dim
    right: Dim
    error: Message
    fits: tuple[tuple[Dim, Dim, bool], ...] = ()
    refusal: Message = ()
    kind: str = "ValueError"


class Assumptions:
    """The assumptions of one function being lowered, and the substitution they imply:
    each assumed equation solved for one symbol (kept fully resolved)."""

    def __init__(self) -> None:
        self.made: list[Assumption] = []
        self.subst: dict[str, Dim] = {}

    def resolve(self, d: Dim) -> Dim:
        if not d.symbols & self.subst.keys():
            return d
        out = Dim.of(0)
        for monomial, coeff in d.terms:
            term = Dim.of(coeff)
            for s in monomial:
                term = term * self.subst.get(s, Dim.of(s))
            out = out + term
        return out

    def solve(self, left: Dim, right: Dim) -> bool:
        """Make ``left == right`` hold by substituting one symbol of one side (of
        ``right`` first, so the names seen first stay); False where none can be solved
        for exactly (``A`` and ``2A`` would mean A = 0: refused, not assumed)."""
        left, right = self.resolve(left), self.resolve(right)
        diff = left - right
        for symbol in sorted(right.symbols - left.symbols) + sorted(left.symbols - right.symbols):
            linear = diff.linear_in(symbol)
            solution = None if linear is None else (-linear[1]).exact_div(linear[0])
            if solution is None:
                continue
            one = Assumptions()
            one.subst[symbol] = solution
            self.subst = {s: one.resolve(d) for s, d in self.subst.items()}
            self.subst[symbol] = solution
            return True
        return False

    def apply(self, roots: tuple[Node, ...]) -> tuple[Node, ...]:
        """The graph of ``roots`` with every dimension (types and attributes) resolved."""
        if not self.subst:
            return roots

        def fix(node: Node) -> Node:
            shape = tuple(self.resolve(d) for d in node.type.shape)
            attrs = tuple(self._attr(a) for a in node.attrs)
            if shape == node.type.shape and all(a is b for a, b in zip(attrs, node.attrs)):
                return node
            return node.replace(type=TensorType(node.dtype, shape, node.type.weak), attrs=attrs)
        return rewrite(roots, fix)

    def _attr(self, value: Any) -> Any:
        if isinstance(value, Dim):
            new = self.resolve(value)
            return value if new == value else new
        if isinstance(value, tuple):
            items = tuple(self._attr(v) for v in value)
            return value if all(a is b for a, b in zip(items, value)) else items
        return value


_ASSUMPTIONS: ContextVar[Assumptions | None] = ContextVar("cuvil_aot_assumptions", default=None)


@contextmanager
def assuming() -> Iterator[Assumptions]:
    """While lowering one function: dimensions that may be equal unify (``unify``)."""
    facts = Assumptions()
    token = _ASSUMPTIONS.set(facts)
    try:
        yield facts
    finally:
        _ASSUMPTIONS.reset(token)


def resolved(d: Dim | int) -> Dim:
    """``d`` under the assumptions made so far."""
    facts = _ASSUMPTIONS.get()
    return Dim.of(d) if facts is None else facts.resolve(Dim.of(d))


def same(a: Dim | int, b: Dim | int) -> bool:
    """Whether ``a == b`` holds for every size the assumptions so far allow."""
    return resolved(a) == resolved(b)


def same_shape(a: Shape, b: Shape) -> bool:
    return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))


def unify(left: Dim, right: Dim, error: Sequence[str | Dim],
          fits: Sequence[tuple[Dim, Dim, bool]] = (), refusal: Sequence[str | Dim] = (),
          one_symbol: bool = True, kind: str = "ValueError") -> bool:
    """Whether ``left == right`` holds, or is now assumed (to be checked at the call,
    ``Assumption``); False where they differ for every size, or no function is being
    lowered, or no symbol of theirs can be solved for and ``one_symbol`` (the op needs
    the two to be one dimension, not only equal at the call as a reshape's counts)."""
    facts = _ASSUMPTIONS.get()
    if same(left, right):
        return True
    if facts is None or (facts.resolve(left) - facts.resolve(right)).is_static:
        return False
    if not facts.solve(left, right) and one_symbol:
        return False
    facts.made.append(Assumption(left, right, tuple(error), tuple(fits), tuple(refusal), kind))
    return True


def numpy_shape(shape: Shape) -> Message:
    """A shape as NumPy's messages print it, ``(3,)`` or ``(4,8)``, its dimensions as
    their values at the call."""
    parts: list[str | Dim] = ["("]
    for i, d in enumerate(shape):
        parts += [("," if i else ""), d]
    parts.append(",)" if len(shape) == 1 else ")")
    return tuple(parts)
