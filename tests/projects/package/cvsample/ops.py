"""Four marked functions; one calls a helper from another module of the package."""

import numpy as np

import cuvil_aot as cv
from cvsample.helpers import sigmoid

SCALE = 0.5


@cv.optimize
def matmul_relu(x: cv.f32["B", 64], w: cv.f32[64, 32], b: cv.f32[32]):
    return np.maximum(0, x @ w + b)


@cv.optimize(signatures=["f32[B,N]", "f64[B,N]"])
def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


@cv.optimize
def layer_norm(x: cv.f32["B", "D"], g: cv.f32["D"], b: cv.f32["D"]):
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(var + 1e-5) * g + b


@cv.optimize
def gated(x: cv.f32["N"], y: cv.f32["N"]):
    return np.tanh(x * SCALE + y) * sigmoid(y)
