"""SciPy's special functions that inference code calls: ``scipy.special.erf`` (BERT's exact
GELU, ``0.5 * x * (1 + erf(x / np.sqrt(2)))``), a ufunc of float32 to float32 and of
everything else to float64. Found by identity in ``scipy.special`` as the user's module
imported it: SciPy is never imported here, nor needed where no code calls it."""

from __future__ import annotations

import sys
from typing import Any

from cuvil_aot.compiler.frontend.handlers import Handler, unary
from cuvil_aot.compiler.ir.ops import Op

_OPS = {"erf": Op.ERF}


def handler(fn: Any) -> Handler | None:
    """The handler of ``fn`` where it is one of ``_OPS``' functions of scipy.special."""
    special = sys.modules.get("scipy.special")
    name = getattr(fn, "__name__", None)
    if special is None or name not in _OPS or getattr(special, name, None) is not fn:
        return None
    return unary(fn, _OPS[name])
