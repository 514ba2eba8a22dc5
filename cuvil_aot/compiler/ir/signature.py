"""A signature: the typed parameters one compiled version of a function accepts.

The frontend builds signatures from annotations or strings (frontend/signature.py); the
wrapper (codegen/) checks arguments against them and names them in its error messages.
"""

from __future__ import annotations

from dataclasses import dataclass

from cuvil_aot.compiler.ir.node import Param
from cuvil_aot.marks import ARRAY_DTYPES

_SHORT_NAMES = {d.np_dtype: d.short for d in ARRAY_DTYPES}
_SCALAR_NAMES = {"float64": "float", "int64": "int", "bool": "bool"}


@dataclass(frozen=True)
class Signature:
    params: tuple[Param, ...]

    def __str__(self) -> str:
        return ", ".join(f"{p.name}: {render_type(p)}" for p in self.params)


def render_type(p: Param) -> str:
    """A parameter's type as the user writes it: ``f32[B, 128]``, ``float``."""
    if p.is_scalar:
        return _SCALAR_NAMES[p.type.dtype]
    return f"{_SHORT_NAMES[p.type.dtype]}[{', '.join(str(d) for d in p.type.shape)}]"
