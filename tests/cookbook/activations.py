"""Activations and their feed-forward blocks: GELU (tanh and erf), SiLU/SwiGLU, softplus,
log-softmax, logsumexp."""

# ruff: noqa: F722 - dims like "3H" read to pyflakes as broken forward annotations

import math

import numpy as np

import cuvil_aot as cv


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def silu(x):
    return x * sigmoid(x)


def erf(x):
    # Abramowitz & Stegun 7.1.26 (max error 1.5e-7): NumPy has no erf
    a1, a2, a3, a4, a5 = 0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429
    p = 0.3275911
    sign = np.sign(x)
    x = np.abs(x)
    t = 1.0 / (1.0 + p * x)
    y = 1.0 - (((((a5 * t + a4) * t) + a3) * t + a2) * t + a1) * t * np.exp(-x * x)
    return sign * y


@cv.optimize
def gelu_tanh(x: cv.f32["B", "D"]):
    return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))


@cv.optimize
def gelu_erf(x: cv.f32["B", "D"]):
    return 0.5 * x * (1.0 + erf(x / math.sqrt(2.0)))


@cv.optimize
def gelu_sigmoid_approx(x: cv.f32["B", "D"]):
    return x * sigmoid(1.702 * x)


@cv.optimize
def ffn_gelu(x: cv.f32["B", "T", "D"], w1: cv.f32["D", "F"], b1: cv.f32["F"],
             w2: cv.f32["F", "D"], b2: cv.f32["D"]):
    h = x @ w1 + b1
    h = 0.5 * h * (1.0 + np.tanh(0.7978845608028654 * (h + 0.044715 * h * h * h)))
    return h @ w2 + b2 + x


@cv.optimize
def swiglu_mlp(x: cv.f32["N", "D"], w_gate: cv.f32["D", "F"], w_up: cv.f32["D", "F"],
               w_down: cv.f32["F", "D"]):
    return (silu(x @ w_gate) * (x @ w_up)) @ w_down


@cv.optimize
def swiglu_fused_weight(x: cv.f32["N", "D"], w12: cv.f32["D", "2F"], w3: cv.f32["F", "D"]):
    gate, up = np.split(x @ w12, 2, axis=-1)
    return (gate / (1 + np.exp(-gate)) * up) @ w3


@cv.optimize
def softplus_mish(x: cv.f32["B", "D"]):
    softplus = np.maximum(x, 0) + np.log1p(np.exp(-np.abs(x)))
    return softplus, x * np.tanh(softplus)


@cv.optimize
def leaky_relu_hardswish(x: cv.f32["B", "D"]):
    leaky = np.where(x > 0, x, 0.01 * x)
    hswish = x * np.clip(x + 3, 0, 6) / 6
    return leaky, hswish


@cv.optimize
def log_softmax(logits: cv.f32["B", "C"]):
    shifted = logits - logits.max(axis=-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


@cv.optimize
def logsumexp(x: cv.f32["B", "N"]):
    m = np.max(x, axis=-1)
    return m + np.log(np.sum(np.exp(x - m[:, None]), axis=-1))


@cv.optimize
def softmax_f16_in_f32(x: cv.f16["B", "N"]):
    z = x.astype(np.float32)
    z = np.exp(z - z.max(axis=-1, keepdims=True))
    return (z / z.sum(axis=-1, keepdims=True)).astype(np.float16)
