"""CUDA lowering of each computing op: the C table of ops_c, overridden where CUDA differs.

CUDA C++ takes C's operators, casts and literals as they are. What differs:
transcendentals call CUDA's accurate libdevice functions (``expf``, not the
CPU's vectorized polynomials of vmath.h and not the ``__expf`` intrinsics);
the NumPy-semantics helpers (maximum with NaN, floor division, remainder,
sign, integer power) are the device functions of cuvil_aot/cuda_kernel.h,
named here so that the CPU's helper names can change on their own; float16 is
stored as ``__half`` (``cv_f16`` in that header) and computed in float.
"""

from __future__ import annotations

from cuvil_aot.codegen import ops_c
from cuvil_aot.ir.ops import Op

_MATH = {Op.EXP: "exp", Op.EXPM1: "expm1", Op.LOG: "log", Op.LOG1P: "log1p", Op.TANH: "tanh",
         Op.SIN: "sin", Op.COS: "cos"}
_FLOAT_HELPERS = {Op.MAXIMUM: "maximum", Op.MINIMUM: "minimum", Op.FLOORDIV: "floordiv",
                  Op.MOD: "remainder", Op.SIGN: "sign"}
_INT_HELPERS = {Op.FLOORDIV: "floordiv", Op.MOD: "remainder", Op.POW: "power"}


def render(op: Op, dtype: str, args: list[str]) -> str:
    """CUDA expression for ``op`` computing in ``dtype`` on operand expressions ``args``."""
    fam = ops_c.FAMILY[dtype]
    is_float = fam in ("f", "d")
    if op in _MATH and is_float:
        return f"{_MATH[op]}{'f' if fam == 'f' else ''}({args[0]})"
    helpers = _FLOAT_HELPERS if is_float else _INT_HELPERS if fam != "b" else {}
    if op in helpers:
        return f"cv_{helpers[op]}{fam}({', '.join(args)})"
    return ops_c.render(op, dtype, args)
