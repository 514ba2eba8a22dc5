"""SciPy's special functions that inference code calls: ``scipy.special.erf`` (BERT's exact
GELU, ``0.5 * x * (1 + erf(x / np.sqrt(2)))``), a ufunc of float32 to float32 and of
everything else to float64; ``softmax``, ``log_softmax`` and ``expit``, whose SciPy code
goes through its array-API helpers, compiled from their NumPy forms here (SciPy's formulas
and dtypes), inlined as the user's Python is. Found by identity in ``scipy.special`` as the
user's module imported it: SciPy is never imported here, nor needed where no code calls it."""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from cuvil_aot.compiler.frontend.handlers import Handler, unary
from cuvil_aot.compiler.ir.ops import Op

_OPS = {"erf": Op.ERF}


def _name_in(fn: Any, names: dict[str, Any]) -> str | None:
    """``fn``'s name where it is scipy.special's function of that name among ``names``."""
    special = sys.modules.get("scipy.special")
    name = getattr(fn, "__name__", None)
    found = special is not None and name in names and getattr(special, name, None) is fn
    return name if found else None


def handler(fn: Any) -> Handler | None:
    """The handler of ``fn`` where it is one of ``_OPS``' functions of scipy.special."""
    name = _name_in(fn, _OPS)
    return unary(fn, _OPS[name]) if name else None


def softmax(x: Any, axis: Any = None) -> Any:
    x_max = np.max(x, axis=axis, keepdims=True)
    exp_x_shifted = np.exp(x - x_max)
    return exp_x_shifted / np.sum(exp_x_shifted, axis=axis, keepdims=True)


def log_softmax(x: Any, axis: Any = None) -> Any:
    x_max = np.max(x, axis=axis, keepdims=True)
    x_max = np.where(np.isfinite(x_max), x_max, 0)  # an all -inf or inf slice
    tmp = x - x_max
    return tmp - np.log(np.sum(np.exp(tmp), axis=axis, keepdims=True))


def expit(x: Any) -> Any:
    x = np.asarray(x)
    x = x if x.dtype == np.float32 else x.astype(np.float64)  # SciPy's loops: f and d
    return 1 / (1 + np.exp(-x))


_FORMS = {"softmax": softmax, "log_softmax": log_softmax, "expit": expit}


def python_form(fn: Any) -> Any:
    """The NumPy form of ``fn`` where it is one of ``_FORMS``' functions of scipy.special."""
    name = _name_in(fn, _FORMS)
    return _FORMS[name] if name else None
