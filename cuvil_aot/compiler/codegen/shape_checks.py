"""Shape arithmetic the argument checks can trust: overflow-checked, sizes as NumPy's.

Symbols are bound from the shapes of several arguments, so a dimension such as ``N*M``
or ``16*H`` can exceed int64 for arrays that exist (two broadcast views of 2**32
elements give N*M = 2**64, which wraps to 0). The match function therefore computes
every dimension with ``__builtin_*_overflow`` (``checked``), and checks every array
shape of the function (arguments, views, intermediates, outputs) the way NumPy checks
a new array: the product of its nonzero dimensions times the item size must fit in
npy_intp (``size_checks``), else NumPy's ValueError. Once they pass, the plain int64
arithmetic in the rest of the wrapper (sizes, strides, offsets, loop counts,
allocations) cannot overflow: each of its products is a sub-product of a checked one.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from cuvil_aot.compiler.codegen import ops_c
from cuvil_aot.compiler.codegen.compiled import Compiled
from cuvil_aot.compiler.codegen.writer import Writer
from cuvil_aot.compiler.ir.construct import Message
from cuvil_aot.compiler.ir.node import toposort
from cuvil_aot.compiler.ir.types import Dim, Shape, shape_str

TOO_BIG = ("array is too big; `arr.size * arr.dtype.itemsize` is larger than the maximum "
           "possible size.")
INTP_MAX = 2**63 - 1


def can_overflow(d: Dim) -> bool:
    """Whether computing ``d`` takes a product or a sum (not one symbol or a constant)."""
    return len(d.terms) > 1 or any(len(m) + (c != 1) > 1 for m, c in d.terms)


def checked(d: Dim, flag: str = "ovf") -> str:
    """``d`` as a C int64 expression that sets the local ``flag`` where it overflows."""
    parts = []
    for m, c in d.terms:
        factors = ([f"(int64_t){c}"] if c != 1 or not m else []) + [f"S_{s}" for s in m]
        expr = factors[0]
        for f in factors[1:]:
            expr = f"cv_mul({expr}, {f}, &{flag})"
        parts.append(expr)
    expr = parts[0] if parts else "0"
    for p in parts[1:]:
        expr = f"cv_add({expr}, {p}, &{flag})"
    return expr


def values(dims: list[Dim] | tuple[Dim, ...]) -> tuple[str, list[str]]:
    """A printf fragment naming the symbols of ``dims`` with their values, and its
    arguments: (" with M = %lld, N = %lld", ["(long long)S_M", "(long long)S_N"])."""
    symbols = sorted({s for d in dims for s in d.symbols})
    text = " with " + ", ".join(f"{s} = %lld" for s in symbols) if symbols else ""
    return text, [f"(long long)S_{s}" for s in symbols]


@dataclass(frozen=True)
class Extent:
    """An array shape as its size is checked: its symbolic dims and its static bytes."""

    shape: Shape
    dims: tuple[Dim, ...]  # the dims that are not static, in order
    nbytes: int  # item size times the nonzero static dims

    def covers(self, other: Extent) -> bool:
        """Whether this array fitting implies that ``other`` fits (for any symbols)."""
        return Counter(other.dims) <= Counter(self.dims) and other.nbytes <= self.nbytes


def _extent(shape: Shape, itemsize: int) -> Extent:
    nbytes = itemsize
    for d in shape:
        if d.is_static and d.value:
            nbytes *= d.value
    return Extent(shape, tuple(d for d in shape if not d.is_static), min(nbytes, INTP_MAX))


def size_checks(comp: Compiled) -> list[Extent]:
    """The shapes whose size the match function checks: every node's (its dtype's item
    size) and every loop space's (1 byte an element), less those implied by another
    (an argument's, which NumPy checked, or a larger one's)."""
    fn = comp.fn
    params = [_extent(p.shape, ops_c.ITEMSIZE[p.dtype]) for p in fn.param_nodes]
    param_ids = {id(p) for p in fn.param_nodes}
    others = [_extent(n.shape, ops_c.ITEMSIZE[n.dtype]) for n in toposort(fn.outputs)
              if id(n) not in param_ids and n.shape]
    others += [_extent(k.group.space.shape, 1) for k in comp.kernels]
    others = [e for e in others if e.dims]  # static shapes do not depend on the call
    others.sort(key=lambda e: (-len(e.dims), -e.nbytes))
    kept: list[Extent] = []
    for e in others:
        if not any(c.covers(e) for c in params + kept):
            kept.append(e)
    return kept


def shape_text(e: Extent) -> str:
    return "shape " + shape_str(e.shape)


def assumption_checks(w: Writer, comp: Compiled) -> None:
    """The dimensions the body assumed equal (``construct.Assumption``), in program order,
    once the symbols are bound: where they differ, NumPy's error (the match function
    returns -1); where NumPy would broadcast the operands instead (a size-1 dimension), no
    match, with the refusal as the reason."""
    for a in comp.fn.assumptions:
        with w.block(""):
            w.line("int bad = 0;")
            w.line(f"const int64_t L = {checked(a.left, 'bad')}, R = {checked(a.right, 'bad')};")
            with w.block("if (bad || L != R)"):
                if a.fits:
                    with w.block(f"if (!bad && {_numpy_broadcasts(a.fits)})"):
                        w.line(f"snprintf(why, nwhy, {printf_args(a.refusal)});")
                        w.line("*shape_err = 1;")
                        w.line("return 0;")
                w.line(f"PyErr_Format(PyExc_{a.kind}, {printf_args(a.error)});")
                w.line("return -1;")


def _numpy_broadcasts(fits: tuple[tuple[Dim, Dim, bool], ...]) -> str:
    """A C condition: NumPy broadcasts the op (``Assumption.fits``)."""
    terms = []
    for p, q, both in fits:
        p_c, q_c = checked(p, "bad"), checked(q, "bad")
        terms.append(f"({p_c} == {q_c} || {p_c} == 1{f' || {q_c} == 1' if both else ''})")
    return "(" + " && ".join(terms) + ")"


def printf_args(message: Message) -> str:
    """A printf format (a C string literal) and its arguments: text as it is, static
    dimensions as numbers, symbolic ones as ``%lld`` of their values."""
    fmt, args = "", []
    for part in message:
        if isinstance(part, str):
            fmt += part.replace("%", "%%")
        elif part.is_static:
            fmt += str(part.value)
        else:
            fmt += "%lld"
            args.append(f"(long long){checked(part, 'bad')}")
    text = fmt.replace("\\", "\\\\").replace('"', '\\"').replace("\n", " ")
    return '"' + text + '"' + "".join(f", {x}" for x in args)
