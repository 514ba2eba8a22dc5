"""Bundled example: small inference building blocks written in plain NumPy."""

import numpy as np

import cuvil_aot as cv

EPS = 1e-5


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


@cv.optimize
def matmul_relu(x: cv.f32["B", 128], w: cv.f32[128, 64], b: cv.f32[64]):
    return np.maximum(0, x @ w + b)


@cv.optimize(signatures=["f32[B,I], f32[B,H], f32[B,H], f32[I,4H], f32[H,4H], f32[4H]"])
def lstm_step(x, h, c, wx, wh, b):
    gates = x @ wx + h @ wh + b
    n = h.shape[1]
    i, f = sigmoid(gates[:, :n]), sigmoid(gates[:, n:2 * n])
    g, o = np.tanh(gates[:, 2 * n:3 * n]), sigmoid(gates[:, 3 * n:])
    c2 = f * c + i * g
    return o * np.tanh(c2), c2


@cv.optimize
def softmax(x: cv.f32["B", "N"]):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


@cv.optimize
def layer_norm(x: cv.f32["B", "D"], g: cv.f32["D"], b: cv.f32["D"]):
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(var + EPS) * g + b


@cv.optimize
def resnet_head(fmap: cv.f32["B", 512, 7, 7], w: cv.f32[512, 1000], b: cv.f32[1000]):
    pooled = fmap.mean(axis=(2, 3))
    logits = pooled @ w + b
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def gelu(x):
    return 0.5 * x * (1.0 + np.tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)))


@cv.optimize
def ffn_block(x: cv.f32["T", 768], g: cv.f32[768], beta: cv.f32[768], w1: cv.f32[768, 3072],
              b1: cv.f32[3072], w2: cv.f32[3072, 768], b2: cv.f32[768]):
    mu = x.mean(axis=-1, keepdims=True)
    var = x.var(axis=-1, keepdims=True)
    h = (x - mu) / np.sqrt(var + EPS) * g + beta
    return x + gelu(h @ w1 + b1) @ w2 + b2


@cv.optimize
def elementwise_chain(x: cv.f32["N"], y: cv.f32["N"]):
    return np.tanh(x * 0.5 + y) * sigmoid(y) - np.abs(x) * 0.25
