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


def unit_free(m: IndexMap, extents: Shape) -> IndexMap:
    """``m`` with the loop variables of extent 1 dropped (they are always 0): two maps of
    one element compare equal however their paths spelled a size-1 axis."""
    units = [v for v, d in enumerate(extents) if d == ONE]
    if not units:
        return m
    return tuple(Affine(tuple(ZERO if v in units else c for v, c in enumerate(a.coeffs)),
                        a.const) for a in m)


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
    if node.op is Op.WINDOW:  # source index i + j: the window's and the offset's maps added
        axis, offset = node.attrs[0], m[-1]
        start = Affine(tuple(a + b for a, b in zip(m[axis].coeffs, offset.coeffs)),
                       m[axis].const + offset.const)
        return m[:axis] + (start,) + m[axis + 1:-1]
    if node.op is Op.RESHAPE:
        groups = split_groups(src.shape, node.shape)
        if groups is None:
            return None
        return tuple(_joined(m, node.shape, group, nloops) for group in groups)
    raise ValueError(f"not a movement op: {node.op}")


def split_groups(src: Shape, dst: Shape) -> list[list[int]] | None:
    """For each axis of ``src``, the consecutive axes of ``dst`` it is split into (a reshape
    that only splits axes or adds and removes 1s), or None when the reshape merges axes.

    ``(B, T, 768) -> (B, T, 12, 64)`` gives ``[[0], [1], [2, 3]]``: axis 2 is read at
    ``64 * i2 + i3``, an affine map, so such a reshape is a view of any strided operand."""
    groups, k = [], 0
    for d in src:
        group, size = [], ONE
        while size != d:
            if k == len(dst):
                return None
            group.append(k)
            size, k = size * dst[k], k + 1
        groups.append(group)
    return groups if all(d == ONE for d in dst[k:]) else None


def _joined(m: IndexMap, dst: Shape, group: list[int], nloops: int) -> Affine:
    """The source index of one split axis: the row-major combination of its parts."""
    out, scale = zero(nloops), ONE
    for k in reversed(group):
        if dst[k] != ONE:
            part = m[k].scaled(scale)
            out = Affine(tuple(a + b for a, b in zip(out.coeffs, part.coeffs)),
                         out.const + part.const)
        scale = scale * dst[k]
    return out


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
