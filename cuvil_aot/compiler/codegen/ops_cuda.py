"""CUDA lowering of each computing op: the C table of ops_c, overridden where CUDA differs.

CUDA C++ takes C's operators, casts and literals as they are. What differs:
transcendentals call CUDA's accurate libdevice functions (``expf``, not the
CPU's vectorized polynomials of vmath.h and not the ``__expf`` intrinsics);
the NumPy-semantics helpers (maximum with NaN, floor division, remainder,
sign, integer power) are the device functions of cuvil_aot/cuda_kernel.h,
named here so that the CPU's helper names can change on their own; float32
division is cuda_divide.h's ``cv_divf`` (within one ulp of IEEE's, no branch); float16 is
stored as ``__half`` (``cv_f16`` in that header) and computed in float.
"""

from __future__ import annotations

from cuvil_aot.compiler.codegen.ops_c import (
    FLOATS,
    INTEGERS,
    LIBM,
    CLanguage,
    Lowering,
    call,
    float_suffix,
)
from cuvil_aot.compiler.ir.ops import Op

_LIBDEVICE = {Op.EXP: "exp", Op.EXPM1: "expm1", Op.LOG: "log", Op.LOG1P: "log1p",
              Op.TANH: "tanh", Op.ERF: "erf", Op.SIN: "sin", Op.COS: "cos", **LIBM}
_FLOAT_HELPERS = {Op.MAXIMUM: "maximum", Op.MINIMUM: "minimum", Op.FLOORDIV: "floordiv",
                  Op.MOD: "remainder", Op.SIGN: "sign"}
_INT_HELPERS = {Op.FLOORDIV: "floordiv", Op.MOD: "remainder", Op.POW: "power"}


def on_families(families: tuple[str, ...], lowering: Lowering, otherwise: Lowering) -> Lowering:
    """``lowering`` for the dtype families ``families``, ``otherwise`` for the rest."""
    return lambda fam, args: lowering(fam, args) if fam in families else otherwise(fam, args)


class CudaLanguage(CLanguage):
    """The C table with libdevice's math and cuda_kernel.h's helpers in place of the CPU's."""

    def lowerings(self) -> dict[Op, Lowering]:
        table = super().lowerings()
        for op, name in _LIBDEVICE.items():
            table[op] = on_families(FLOATS, self.libdevice(name), table[op])
        for op, helper in _FLOAT_HELPERS.items():
            table[op] = on_families(FLOATS, self.helper(helper), table[op])
        for op, helper in _INT_HELPERS.items():
            table[op] = on_families(INTEGERS, self.helper(helper), table[op])
        table[Op.DIV] = on_families(("f",), self.helper("div"), table[Op.DIV])
        return table

    @staticmethod
    def libdevice(name: str) -> Lowering:
        return lambda fam, args: call(f"{name}{float_suffix(fam)}", args)

    @staticmethod
    def helper(name: str) -> Lowering:
        """A device function of cuda_kernel.h, one per family: ``cv_maximumf``."""
        return lambda fam, args: call(f"cv_{name}{fam}", args)


CUDA = CudaLanguage()


def render(op: Op, dtype: str, args: list[str]) -> str:
    """CUDA expression for ``op`` computing in ``dtype`` on operand expressions ``args``."""
    return CUDA.render(op, dtype, args)
