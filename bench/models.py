"""Benchmark-only cuvil_aot models (the rest come from examples/models.py)."""

import numpy as np

import cuvil_aot as cv


@cv.optimize
def add(x: cv.f32["N"], y: cv.f32["N"]):
    """One ufunc's worth of work: the call-overhead case (vs ``np.add``)."""
    return x + y


@cv.optimize
def matmul_relu(x: cv.f32["B", "K"], w: cv.f32["K", "N"], b: cv.f32["N"]):
    """examples.models.matmul_relu with symbolic K and N (it fixes 128 and 64)."""
    return np.maximum(0, x @ w + b)
