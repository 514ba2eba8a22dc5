"""Fusion groups: the kernels a function is partitioned into."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

from cuvil_aot.compiler.ir.indexing import IndexMap, identity, var_map
from cuvil_aot.compiler.ir.node import Node
from cuvil_aot.compiler.ir.types import Dim, Shape


class Kind(enum.Enum):
    ELEMENTWISE = "elementwise"  # one loop nest over `shape`
    ROW = "row"  # per row of the kept axes: reduction stages, then the roots
    GEMM = "gemm"  # a sum of matmuls with the roots computed in its epilogue
    SCAN = "scan"  # per row of the kept axes, one sequential pass along the row (ops.SCANS)
    LOOP = "loop"  # a run-time loop: `loop` (ir/loop.py) and its body's groups, run n times


@dataclass(frozen=True, slots=True)
class Dest:
    """Where a root is stored: its own buffer, a slice of a concatenation's, a region of
    an assignment's (``region``: (starts, steps) per axis, as Op.SETITEM's attrs), or the
    positions a scatter's index arrays name (``scatter``: the Op.SCATTER node)."""

    buffer: Node
    axis: int = -1
    offset: Dim = Dim.of(0)
    region: tuple[tuple[Dim, ...], tuple[Dim, ...]] | None = None
    scatter: Node | None = None


@dataclass(frozen=True, slots=True)
class LoopSpace:
    shape: Shape
    reduce_axes: tuple[int, ...] = ()

    @property
    def kept_axes(self) -> tuple[int, ...]:
        return tuple(a for a in range(len(self.shape)) if a not in self.reduce_axes)

    @property
    def kept_shape(self) -> Shape:
        return tuple(self.shape[a] for a in self.kept_axes)

    def natural_map(self, node: Node) -> IndexMap | None:
        """How a root of this loop space is indexed: all loops, or the kept ones only."""
        if node.shape == self.shape:
            return identity(len(self.shape))
        if self.reduce_axes and node.shape == self.kept_shape:
            return var_map(len(self.shape), self.kept_axes)
        return None


@dataclass(frozen=True, slots=True)
class Group:
    kind: Kind
    space: LoopSpace
    roots: tuple[Node, ...]
    dests: tuple[Dest, ...]
    stages: tuple[Node, ...] = ()  # ROW: reductions computed per row, in order
    terms: tuple[Node, ...] = ()  # GEMM: the MATMUL nodes summed into the accumulator
    accumulators: tuple[Node, ...] = ()  # GEMM: the first term and each add joining a term
    loop: Any = None  # LOOP: the LoopBody, its fn fused (roots: its LOOP_OUT nodes)
