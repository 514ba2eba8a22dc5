# mypy: disable-error-code="untyped-decorator, no-any-return"
# (optimize returns a Dispatcher typed Any; NumPy's stubs type these expressions Any.)
"""Ready-compiled building blocks: call them directly, or call them from your own marked
functions, where they are inlined and fused with the code around them.

The wheel of cuvil_aot ships this module compiled (``build_backend/``), so calls
compile nothing. Rows are the last axis; each function takes float32 or float64
arrays of rank 2 (``[B, N]``) or, where it makes sense, any of ranks 1 to 3.
Weights of ``linear*`` are ``[K, N]`` (``x @ w``; for a PyTorch weight pass ``w.T``).
"""

from typing import Any

import numpy as np
import numpy.typing as npt

import cuvil_aot as cv

Array = npt.NDArray[Any]
"""Annotations for type checkers only: the signatures come from ``signatures=``."""

_SQRT_2_OVER_PI = 0.7978845608028654
_ROWS = ["f32[B,N]", "f64[B,N]", "f32[B,T,N]", "f64[B,T,N]"]
_ANY_RANK = ["f32[N]", "f64[N]", *_ROWS]
_NORM = [f"{t}[B,N], {t}[N], {t}[N], float" for t in ("f32", "f64")]
_RMS = [f"{t}[B,N], {t}[N], float" for t in ("f32", "f64")]
_LINEAR = [f"{t}[B,K], {t}[K,N], {t}[N]" for t in ("f32", "f64")]


@cv.optimize(signatures=_ROWS)
def softmax(x: Array) -> Array:
    """exp(x) / sum(exp(x)) over the last axis, computed stably (max subtracted)."""
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


@cv.optimize(signatures=_ROWS)
def log_softmax(x: Array) -> Array:
    """log(softmax(x)) over the last axis, without forming softmax."""
    shifted = x - x.max(axis=-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


@cv.optimize(signatures=_NORM)
def layer_norm(x: Array, weight: Array, bias: Array, eps: float) -> Array:
    """(x - mean) / sqrt(var + eps) * weight + bias over the last axis (eps: e.g. 1e-5)."""
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * weight + bias


@cv.optimize(signatures=_RMS)
def rms_norm(x: Array, weight: Array, eps: float) -> Array:
    """x / sqrt(mean(x**2) + eps) * weight over the last axis (eps: e.g. 1e-6)."""
    return x / np.sqrt((x * x).mean(axis=-1, keepdims=True) + eps) * weight


@cv.optimize(signatures=_ANY_RANK)
def gelu(x: Array) -> Array:
    """GELU, tanh approximation (as PyTorch's ``approximate="tanh"``)."""
    return 0.5 * x * (1.0 + np.tanh(_SQRT_2_OVER_PI * (x + 0.044715 * x * x * x)))


@cv.optimize(signatures=_ANY_RANK)
def silu(x: Array) -> Array:
    """x * sigmoid(x) (also called swish)."""
    return x / (1.0 + np.exp(-x))


@cv.optimize(signatures=_LINEAR)
def linear(x: Array, w: Array, b: Array) -> Array:
    """x @ w + b: one GEMM, the bias added in its epilogue."""
    return x @ w + b


@cv.optimize(signatures=_LINEAR)
def linear_relu(x: Array, w: Array, b: Array) -> Array:
    """max(x @ w + b, 0): one GEMM with a bias+ReLU epilogue."""
    return np.maximum(x @ w + b, 0)


@cv.optimize(signatures=_LINEAR)
def linear_gelu(x: Array, w: Array, b: Array) -> Array:
    """gelu(x @ w + b): one GEMM with a bias+GELU epilogue."""
    return gelu(x @ w + b)


@cv.optimize(signatures=_LINEAR)
def linear_silu(x: Array, w: Array, b: Array) -> Array:
    """silu(x @ w + b): one GEMM with a bias+SiLU epilogue."""
    return silu(x @ w + b)
