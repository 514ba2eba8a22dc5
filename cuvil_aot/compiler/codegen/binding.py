"""How a wrapper binds the symbolic dimensions of a signature from argument shapes.

Each array dimension either binds a symbol (it is ``c*S + known``), or is
checked against what is already known. The order is fixed at compile time.
"""

from __future__ import annotations

from dataclasses import dataclass

from cuvil_aot.compiler.ir.node import Param
from cuvil_aot.compiler.ir.types import Dim


class UnboundSymbol(Exception):
    pass


@dataclass(frozen=True)
class Bind:
    param: int
    axis: int
    symbol: str
    coeff: int
    rest: Dim


@dataclass(frozen=True)
class Check:
    param: int
    axis: int
    expected: Dim


def plan(params: tuple[Param, ...]) -> tuple[list[Bind | Check], dict[str, tuple[int, int]]]:
    """Steps in order, and for each symbol the (param, axis) it is read from."""
    bound: dict[str, tuple[int, int]] = {}
    pending = [(i, axis, d) for i, p in enumerate(params) if not p.is_scalar
               for axis, d in enumerate(p.type.shape)]
    steps: list[Bind | Check] = []
    while pending:
        progress = False
        rest = []
        for i, axis, d in pending:
            unknown = sorted(d.symbols - set(bound))
            if not unknown:
                steps.append(Check(i, axis, d))
                progress = True
                continue
            linear = d.linear_in(unknown[0]) if len(unknown) == 1 else None
            if linear is None:
                rest.append((i, axis, d))
                continue
            coeff, remainder = linear
            steps.append(Bind(i, axis, unknown[0], coeff, remainder))
            bound[unknown[0]] = (i, axis)
            progress = True
        if not progress:
            names = sorted({s for _, _, d in rest for s in d.symbols} - set(bound))
            raise UnboundSymbol(f"cannot determine the dimension(s) {', '.join(names)} from the "
                                "argument shapes: give one argument a dimension that is just "
                                "that name (or a multiple of it plus known ones)")
        pending = rest
    return steps, bound
