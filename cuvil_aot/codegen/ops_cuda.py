"""CUDA lowering of each computing op: the C table of ops_c, overridden where CUDA differs.

CUDA C++ takes C's operators, casts and literals as they are, and
cuvil_aot/cuda_kernel.h gives the device the same NumPy-semantics helpers
(``cv_maximumf``, ``cv_floordivi64``, ...) under the same names. What differs:
transcendentals call CUDA's accurate libdevice functions (``expf``, not the
CPU's vectorized ``cv_expf`` polynomials and not the ``__expf`` intrinsics),
and float16 is stored as ``__half`` (``cv_f16`` in the header), computed in
float as on the CPU.
"""

from __future__ import annotations

from cuvil_aot.codegen import ops_c
from cuvil_aot.ir.ops import Op

_MATH = {Op.EXP: "exp", Op.EXPM1: "expm1", Op.LOG: "log", Op.LOG1P: "log1p", Op.TANH: "tanh",
         Op.SIN: "sin", Op.COS: "cos"}


def render(op: Op, dtype: str, args: list[str]) -> str:
    """CUDA expression for ``op`` computing in ``dtype`` on operand expressions ``args``."""
    fam = ops_c.FAMILY[dtype]
    if op in _MATH and fam in ("f", "d"):
        return f"{_MATH[op]}{'f' if fam == 'f' else ''}({args[0]})"
    return ops_c.render(op, dtype, args)
