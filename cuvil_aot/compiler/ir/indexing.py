"""Affine index maps: how a node is indexed from the loop variables of a kernel.

A kernel loops over variables i_0..i_{L-1}. A node of rank n evaluated inside
it is indexed by a map: for each of its n axes an affine expression
``sum_l coeff_l * i_l + const`` (coefficients and constants are dimensions, so
symbolic slice offsets fit). Movement ops transform maps exactly
(``through``), which lets codegen evaluate any view of any expression without
copies, and lets fusion recognise a per-row value (a reduction broadcast back
along the reduced axes) by comparing maps.
"""

from __future__ import annotations

from dataclasses import dataclass

from cuvil_aot.compiler.ir.node import Node
from cuvil_aot.compiler.ir.ops import Op
from cuvil_aot.compiler.ir.types import Dim, Shape

ZERO = Dim.of(0)
ONE = Dim.of(1)


@dataclass(frozen=True, slots=True)
class Affine:
    coeffs: tuple[Dim, ...]
    const: Dim = ZERO

    def scaled(self, k: Dim) -> Affine:
        return Affine(tuple(c * k for c in self.coeffs), self.const * k)

    def plus(self, k: Dim) -> Affine:
        return Affine(self.coeffs, self.const + k)

    def uses(self, var: int) -> bool:
        return self.coeffs[var] != ZERO


IndexMap = tuple[Affine, ...]


def var_map(nloops: int, axes: tuple[int, ...]) -> IndexMap:
    """The map indexing a node's axis k by loop variable axes[k]."""
    return tuple(Affine(tuple(ONE if v == a else ZERO for v in range(nloops))) for a in axes)


def identity(nloops: int) -> IndexMap:
    return var_map(nloops, tuple(range(nloops)))


def zero(nloops: int) -> Affine:
    return Affine((ZERO,) * nloops)


def is_unit_reshape(src: Shape, dst: Shape) -> bool:
    """True when a reshape only inserts or removes axes of static size 1."""
    return [d for d in src if d != ONE] == [d for d in dst if d != ONE]


def through(node: Node, m: IndexMap, nloops: int) -> IndexMap | None:
    """The map of node.srcs[0] when ``node`` (a movement op) is indexed by ``m``.

    None for a reshape that regroups elements: only a contiguous buffer can
    be indexed through it (see ``codegen``).
    """
    src = node.srcs[0]
    if node.op is Op.PERMUTE:
        out: list[Affine | None] = [None] * len(m)
        for k, p in enumerate(node.attrs[0]):
            out[p] = m[k]
        return tuple(a for a in out if a is not None)
    if node.op is Op.SLICE:
        starts, steps = node.attrs
        return tuple(a.scaled(st).plus(s0) for a, s0, st in zip(m, starts, steps))
    if node.op is Op.BROADCAST:
        off = len(m) - len(src.shape)
        return tuple(zero(nloops) if d == ONE and node.shape[k + off] != ONE else m[k + off]
                     for k, d in enumerate(src.shape))
    if node.op is Op.RESHAPE:
        if not is_unit_reshape(src.shape, node.shape):
            return None
        kept = iter(a for a, d in zip(m, node.shape) if d != ONE)
        return tuple(zero(nloops) if d == ONE else next(kept) for d in src.shape)
    raise ValueError(f"not a movement op: {node.op}")


def gather_map(node: Node, m: IndexMap, nloops: int) -> IndexMap:
    """The affine part of the table access of a gather (Op.GATHER) indexed by ``m``: 0 on
    the gathered axes, whose positions the index arrays give (codegen adds index * stride
    for each). No in-place read has this map, so a table never merges with its reader."""
    axis, k, n = node.attrs[0], len(node.srcs) - 1, len(node.srcs[1].shape)
    return m[:axis] + (zero(nloops),) * k + m[axis + n:]


def contiguous_strides(shape: Shape) -> tuple[Dim, ...]:
    """Element strides of a C-contiguous array of ``shape``."""
    strides: list[Dim] = []
    acc = ONE
    for d in reversed(shape):
        strides.append(acc)
        acc = acc * d
    return tuple(reversed(strides))
