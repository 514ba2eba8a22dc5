"""np.einsum, lowered to the matmul and reduction paths the IR already has.

The subscripts become one label per axis of each operand and of the output (a ``...``
becomes labels of its own, right-aligned across operands as NumPy broadcasts them; an
implicit output is NumPy's: the ellipsis, then the letters seen once, in character
order). Then, with no op of its own:

1. each operand is cast to the result dtype (``np.result_type`` of the operands); an
   axis of static size 1 whose label is longer in another operand is dropped (NumPy
   broadcasts it); a letter repeated in one operand becomes its diagonal: those axes
   moved last, flattened and read with a stride of ``1 + n + n**2 ...``;
2. the operands are contracted left to right, two at a time. Letters of one operand that
   neither the other nor anything after needs are summed first. Letters of both that
   something after needs are batch axes, the others are contracted. A float contraction
   with a free letter is one (batched) MATMUL: each operand permuted and reshaped to
   (batch, free, contracted) or (batch, contracted, free), whichever needs no copy;
   otherwise (integers, which have no GEMM, and a dot product per batch, one fused row
   kernel) it is a broadcasting multiply and a SUM;
3. the last operand's other letters are summed and its axes permuted into the output's
   order. Booleans are computed as int64 and compared with 0 (an OR of ANDs).

Before::

    np.einsum("bhqd,bhkd->bhqk", q, k)       # q: f32[B,H,Q,D], k: f32[B,H,K,D]

After::

    %0 = reshape(%q) : float32[B*H,Q,D]
    %1 = reshape(%k) : float32[B*H,K,D]
    %2 = permute(%1, (0, 2, 1)) : float32[B*H,D,K]     # read through strides, no copy
    %3 = matmul(%0, %2) : float32[B*H,Q,K]
    %4 = reshape(%3) : float32[B,H,Q,K]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from cuvil_aot.compiler.frontend import builder as B
from cuvil_aot.compiler.frontend.handlers import Ctx, Handler
from cuvil_aot.compiler.frontend.user_error import UserError, checked
from cuvil_aot.compiler.frontend.values import apply, strong, to_node
from cuvil_aot.compiler.ir import construct as C
from cuvil_aot.compiler.ir.construct import ShapeError
from cuvil_aot.compiler.ir.node import Node
from cuvil_aot.compiler.ir.ops import Op
from cuvil_aot.compiler.ir.types import Dim, dtype_of, is_float, np_dtype
from cuvil_aot.errors import SourceSpan

Labels = tuple[str, ...]
ELLIPSIS = "..."
HINT = "np.einsum('ij,jk->ik', a, b): a subscripts string of letters, ',', '->' and '...'"


class SubscriptError(Exception):
    """Subscripts NumPy's einsum rejects for these operands (its ValueError)."""


# Subscripts -> labels -------------------------------------------------------------------

@dataclass(frozen=True)
class Term:
    """One comma-separated term: its letters and where its ``...`` sits among them."""

    letters: str
    ellipsis_at: int | None


def parse_term(text: str, where: str) -> Term:
    at = text.find(ELLIPSIS)
    letters = text if at < 0 else text[:at] + text[at + len(ELLIPSIS):]
    if "." in letters:
        raise SubscriptError("einstein sum subscripts string contains a '.' that is not part "
                             f"of an ellipsis ('...') in {where}")
    for ch in letters:
        if not (ch.isascii() and ch.isalpha()):
            raise SubscriptError(f"invalid subscript '{ch}' in einstein sum subscripts "
                                 "string, subscripts must be letters")
    return Term(letters, None if at < 0 else at)


def split_subscripts(subscripts: str, count: int) -> tuple[list[Term], Term | None]:
    """The input terms and the explicit output term (None: implicit)."""
    text = subscripts.replace(" ", "")
    inputs, arrow, output = text.partition("->")
    if any(c in inputs + output for c in "->"):
        raise SubscriptError("einstein sum subscripts string does not contain a proper '->' "
                             "output specification")
    terms = inputs.split(",")
    if len(terms) != count:
        fewer = "more" if len(terms) < count else "fewer"
        raise SubscriptError(f"{fewer} operands provided to einstein sum function than "
                             "specified in the subscripts string")
    parsed = [parse_term(t, f"operand {i}") for i, t in enumerate(terms)]
    return parsed, parse_term(output, "the output") if arrow else None


def ellipsis_labels(count: int, rank: int) -> Labels:
    """The labels of the last ``count`` of ``rank`` broadcast (ellipsis) axes."""
    return tuple(f"{ELLIPSIS}{i}" for i in range(rank - count, rank))


def expand(term: Term, count: int, rank: int) -> Labels:
    letters, at = term.letters, term.ellipsis_at
    if at is None:
        return tuple(letters)
    return (*letters[:at], *ellipsis_labels(count, rank), *letters[at:])


def ellipsis_count(term: Term, ndim: int, index: int) -> int:
    """How many axes of operand ``index`` its ``...`` stands for."""
    extra = ndim - len(term.letters)
    if extra < 0:
        raise SubscriptError("einstein sum subscripts string contains too many subscripts "
                             f"for operand {index}")
    if extra and term.ellipsis_at is None:
        raise SubscriptError("operand has more dimensions than subscripts given in einstein "
                             "sum, but no '...' ellipsis provided to broadcast the extra "
                             "dimensions.")
    return extra


def output_labels(output: Term | None, inputs: Sequence[Term], rank: int) -> Labels:
    letters = "".join(t.letters for t in inputs)
    if output is None:  # NumPy's implicit output
        once = sorted(c for c in set(letters) if letters.count(c) == 1)
        return (*ellipsis_labels(rank, rank), *once)
    for c in output.letters:
        if output.letters.count(c) > 1:
            raise SubscriptError(f"einstein sum subscripts string includes output subscript "
                                 f"'{c}' multiple times")
        if c not in letters:
            raise SubscriptError(f"einstein sum subscripts string included output subscript "
                                 f"'{c}' which never appeared in an input")
    if rank and output.ellipsis_at is None:
        raise SubscriptError("output has more dimensions than subscripts given in einstein "
                             "sum, but no '...' ellipsis provided to broadcast the extra "
                             "dimensions.")
    return expand(output, rank, rank)


def labels_of(subscripts: str, ndims: Sequence[int]) -> tuple[list[Labels], Labels]:
    """Each operand's axis labels and the output's, as NumPy reads ``subscripts``."""
    inputs, output = split_subscripts(subscripts, len(ndims))
    counts = [ellipsis_count(t, n, i) for i, (t, n) in enumerate(zip(inputs, ndims))]
    rank = max(counts, default=0)
    labels = [expand(t, n, rank) for t, n in zip(inputs, counts)]
    return labels, output_labels(output, inputs, rank)


# Operands ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Operand:
    """An array and the label of each of its axes."""

    node: Node
    labels: Labels

    def axes(self, wanted: Sequence[str]) -> tuple[int, ...]:
        return tuple(self.labels.index(label) for label in wanted)


def label_sizes(operands: Sequence[Operand], span: SourceSpan) -> dict[str, Dim]:
    """Each label's size: equal within an operand (a diagonal), broadcast across operands
    as NumPy does (sizes that may differ are assumed equal and checked at the call)."""
    found: dict[str, list[Dim]] = {}
    for op in operands:
        own: dict[str, Dim] = {}
        for label, d in zip(op.labels, op.node.shape):
            if label not in own:
                own[label] = d
                found.setdefault(label, []).append(d)
            elif not C.unify(own[label], d, _diagonal_error(label, own[label], d)):
                raise ShapeError(f"dimensions in single operand for collapsing index "
                                 f"'{label}' don't match ({own[label]} != {d})")
    shapes = [op.node.shape for op in operands]
    return {label: B.broadcast_all([(d,) for d in dims], span, shapes)[0]
            for label, dims in found.items()}


def _diagonal_error(label: str, a: Dim, b: Dim) -> C.Message:
    return (f"dimensions in single operand for collapsing index '{label}' don't match (",
            a, " != ", b, ")")


def without_broadcast_axes(op: Operand, sizes: dict[str, Dim], span: SourceSpan) -> Operand:
    """``op`` without its axes of size 1 that NumPy broadcasts against a longer label."""
    kept = [i for i, (label, d) in enumerate(zip(op.labels, op.node.shape))
            if not (C.same(d, 1) and not C.same(sizes[label], 1))]
    node = C.reshape(op.node, tuple(op.node.shape[i] for i in kept), span)
    return Operand(node, tuple(op.labels[i] for i in kept))


def diagonal(op: Operand, label: str, span: SourceSpan) -> Operand:
    """``op`` with the axes of a repeated ``label`` replaced by their diagonal, last: they
    are moved last and flattened, and element i of the diagonal sits at
    i * (1 + n + ... + n**(r-1)) of the n**r flattened ones."""
    axes = [i for i, lab in enumerate(op.labels) if lab == label]
    rest = [i for i, lab in enumerate(op.labels) if lab != label]
    n = C.resolved(op.node.shape[axes[0]])
    moved = C.permute(op.node, rest + axes, span)
    power, step = Dim.of(1), Dim.of(0)
    for _ in axes:
        step, power = step + power, power * n
    kept = tuple(op.node.shape[i] for i in rest)
    flat = C.reshape(moved, (*kept, power), span)
    ones, zeros = [Dim.of(1)] * len(rest), [Dim.of(0)] * (len(rest) + 1)
    node = B.slice_axes(flat, zeros, [*ones, step], [*kept, n], span)
    return Operand(node, tuple(op.labels[i] for i in rest) + (label,))


def prepared(op: Operand, sizes: dict[str, Dim], span: SourceSpan) -> Operand:
    op = without_broadcast_axes(op, sizes, span)
    for label in dict.fromkeys(op.labels):
        if op.labels.count(label) > 1:
            op = diagonal(op, label, span)
    return op


def summed_to(op: Operand, needed: Sequence[str], dtype: str, span: SourceSpan) -> Operand:
    """``op`` summed over its labels not in ``needed``, in ``dtype`` (NumPy's sum of an
    int32 is an int64: cast back, as einsum accumulates in the operands' dtype)."""
    axes = tuple(i for i, label in enumerate(op.labels) if label not in needed)
    if not axes:
        return op
    total = C.cast(B.reduce(Op.SUM, op.node, axes, False, span), dtype, span)
    return Operand(total, tuple(label for label in op.labels if label in needed))


# Contraction ------------------------------------------------------------------------------

def _merged(op: Operand, groups: Sequence[Sequence[str]], span: SourceSpan) -> Node:
    """``op`` permuted to the groups' labels in order, each group reshaped into one axis
    (an empty group: an axis of 1; the first group, the batch, left out when empty)."""
    node = C.permute(op.node, op.axes([label for g in groups for label in g]), span)
    dims, start = [], 0
    for i, group in enumerate(groups):
        if group or i:
            dims.append(C.total(node.shape[start:start + len(group)]))
        start += len(group)
    return C.reshape(node, tuple(dims), span)


def matrix(op: Operand, batch: Labels, rows: Labels, cols: Labels, span: SourceSpan) -> Node:
    """``op`` as a (batch?, rows, cols) matrix, transposed after the reshape where its axes
    already lie as (batch, cols, rows): a GEMM reads either through strides, a reshape of
    permuted axes would copy."""
    if op.axes(batch + cols + rows) == tuple(range(len(op.labels))):
        flipped = _merged(op, (batch, cols, rows), span)
        ndim = flipped.type.ndim
        return C.permute(flipped, (*range(ndim - 2), ndim - 1, ndim - 2), span)
    return _merged(op, (batch, rows, cols), span)


def _gemm(a: Operand, b: Operand, batch: Labels, left: Labels, inner: Labels,
          right: Labels, span: SourceSpan) -> Node:
    product = checked(B.matmul, matrix(a, batch, left, inner, span),
                      matrix(b, batch, inner, right, span), span, span=span)
    dims = [a.node.shape[i] for i in a.axes(batch + left)] + \
        [b.node.shape[i] for i in b.axes(right)]
    return C.reshape(product, tuple(C.resolved(d) for d in dims), span)


def _multiply_sum(a: Operand, b: Operand, batch: Labels, left: Labels, inner: Labels,
                  right: Labels, dtype: str, span: SourceSpan) -> Node:
    """sum over ``inner`` of a * b, both laid out as (batch, left, right, inner) with 1
    where they lack an axis, so that the product broadcasts."""
    def spread(op: Operand, own: Labels) -> Node:
        node = C.permute(op.node, op.axes(batch + own + inner), span)
        sizes = dict(zip(batch + own + inner, node.shape))
        shape = tuple(sizes.get(lab, Dim.of(1)) for lab in batch + left + right + inner)
        return C.reshape(node, shape, span)
    product = apply(Op.MUL, [spread(a, left), spread(b, right)], span)
    if not inner:
        return product
    axes = tuple(range(product.type.ndim - len(inner), product.type.ndim))
    return C.cast(B.reduce(Op.SUM, product, axes, False, span), dtype, span)


def contract(a: Operand, b: Operand, keep: Labels, dtype: str, span: SourceSpan) -> Operand:
    """``a`` and ``b`` multiplied and summed over every label not in ``keep``; its labels
    are (batch, left, right), each in the order of ``keep``."""
    a = summed_to(a, b.labels + keep, dtype, span)
    b = summed_to(b, a.labels + keep, dtype, span)
    batch = tuple(lab for lab in keep if lab in a.labels and lab in b.labels)
    left = tuple(lab for lab in keep if lab in a.labels and lab not in b.labels)
    right = tuple(lab for lab in keep if lab in b.labels and lab not in a.labels)
    inner = tuple(lab for lab in dict.fromkeys(a.labels) if lab in b.labels and lab not in keep)
    if inner and (left or right) and is_float(dtype):
        node = _gemm(a, b, batch, left, inner, right, span)
    else:
        node = _multiply_sum(a, b, batch, left, inner, right, dtype, span)
    return Operand(node, batch + left + right)


def lowered(operands: list[Operand], output: Labels, dtype: str, span: SourceSpan) -> Node:
    """The einsum of prepared operands, contracted left to right."""
    result = operands[0]
    for i, following in enumerate(operands[1:], start=1):
        later = [lab for op in operands[i + 1:] for lab in op.labels]
        keep = tuple(dict.fromkeys([*output, *later]))
        result = contract(result, following, keep, dtype, span)
    result = summed_to(result, output, dtype, span)
    return C.permute(result.node, result.axes(output), span)


# The handler -------------------------------------------------------------------------------

def result_dtype(nodes: Sequence[Node]) -> str:
    return dtype_of(np.result_type(*(np.empty(0, np_dtype(n.dtype)) for n in nodes)))


def einsum(ctx: Ctx, subscripts: Any, /, *operands: Any, out: Any = None, dtype: Any = None,
           order: str = "K", casting: str = "safe", optimize: Any = False) -> Node:
    """NumPy's einsum; ``order`` and ``optimize`` change no value, so they are accepted."""
    if not isinstance(subscripts, str):
        raise UserError("np.einsum takes a subscripts string first (the sublist form "
                        "einsum(a, [0, 1], ...) is not supported)", ctx.span, HINT)
    if out is not None or dtype is not None:
        raise UserError(f"np.einsum(..., {'out' if out is not None else 'dtype'}=) is not "
                        "supported", ctx.span, "y = np.einsum(...).astype(dtype)")
    if not operands:
        raise UserError("np.einsum needs at least one operand", ctx.span, HINT)
    nodes = [strong(to_node(x, ctx.span)) for x in operands]  # NumPy makes arrays of them
    try:
        inputs, output = labels_of(subscripts, [n.type.ndim for n in nodes])
    except SubscriptError as exc:
        raise UserError(str(exc), ctx.span, HINT) from None
    result = result_dtype(nodes)
    compute = "int64" if result == "bool" else result
    ops = [Operand(C.cast(n, compute, ctx.span), labels) for n, labels in zip(nodes, inputs)]
    sizes = checked(label_sizes, ops, ctx.span, span=ctx.span)
    ops = [prepared(op, sizes, ctx.span) for op in ops]
    node = lowered(ops, output, compute, ctx.span)
    if result == "bool":
        return apply(Op.NE, [node, 0], ctx.span)
    return node


def tensordot(ctx: Ctx, a: Any, b: Any, axes: Any = 2) -> Node:
    """NumPy's tensordot as the einsum it is: ``axes`` an int N (a's last N axes against
    b's first N) or two sequences (or ints) of axes paired in order; the result's axes are
    a's others, then b's."""
    x, y = (strong(to_node(v, ctx.span)) for v in (a, b))
    pairs = _tensordot_axes(axes, x.type.ndim, y.type.ndim, ctx)
    letters = iter("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
    left = [next(letters) for _ in range(x.type.ndim)]
    right = [next(letters) for _ in range(y.type.ndim)]
    for i, j in pairs:
        right[j] = left[i]
    summed = {left[i] for i, _ in pairs}
    out = [c for c in left if c not in summed] + [c for c in right if c not in summed]
    return einsum(ctx, f"{''.join(left)},{''.join(right)}->{''.join(out)}", x, y)


def _tensordot_axes(axes: Any, ndim_a: int, ndim_b: int, ctx: Ctx) -> list[tuple[int, int]]:
    """(axis of a, axis of b) pairs, normalized; NumPy's errors for axes it rejects."""
    if isinstance(axes, int | np.integer) and not isinstance(axes, bool):
        n = int(axes)
        if n < 0 or n > min(ndim_a, ndim_b):
            raise UserError(f"np.tensordot(..., axes={n}) of arrays of {ndim_a} and {ndim_b} "
                            "dimensions", ctx.span, "axes=N with N at most the smaller ndim")
        return [(ndim_a - n + k, k) for k in range(n)]
    try:
        first, second = axes
        first, second = ([int(v)] if isinstance(v, int | np.integer) else [int(i) for i in v]
                         for v in (first, second))
    except (TypeError, ValueError):
        raise UserError("np.tensordot's axes must be an int or two sequences of ints known "
                        "at compile time", ctx.span, "axes=([1, 2], [0, 1])") from None
    if len(first) != len(second):
        raise UserError("ValueError: shape-mismatch for sum", ctx.span,
                        "as many axes of a as of b")
    pairs = []
    for i, j in zip(first, second):
        if not (-ndim_a <= i < ndim_a and -ndim_b <= j < ndim_b):
            raise UserError(f"np.tensordot: axis {i} or {j} out of range", ctx.span)
        pairs.append((i % ndim_a, j % ndim_b))
    if len({i for i, _ in pairs}) < len(pairs) or len({j for _, j in pairs}) < len(pairs):
        raise UserError("np.tensordot with a repeated axis is not supported", ctx.span,
                        "each axis once")
    return pairs


FUNCTIONS: dict[Any, Handler] = {np.einsum: einsum, np.tensordot: tensordot}
