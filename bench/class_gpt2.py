"""A GPT-2-small block written as classes, nanoGPT's layout: ``Linear``, ``LayerNorm``,
``Attention`` (``n_head`` an attribute), ``MLP`` and ``Block`` instances holding Hugging
Face's (in, out) weights; only ``Block.__call__`` is marked (bench/class_models.py)."""

import math

import numpy as np

import cuvil_aot as cv


class Linear:
    w: cv.f32["I", "O"]
    b: cv.f32["O"]

    def __init__(self, w, b):
        self.w, self.b = w, b

    def __call__(self, x):
        return x @ self.w + self.b


class LayerNorm:
    g: cv.f32["D"]
    b: cv.f32["D"]
    eps = 1e-5

    def __init__(self, g, b):
        self.g, self.b = g, b

    def __call__(self, x):
        mu = x.mean(axis=-1, keepdims=True)
        var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
        return (x - mu) / np.sqrt(var + self.eps) * self.g + self.b


def gelu(x):
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


class Attention:
    c_attn: Linear
    c_proj: Linear
    n_head: int

    def __init__(self, c_attn, c_proj, n_head):
        self.c_attn, self.c_proj, self.n_head = c_attn, c_proj, n_head

    def heads(self, x):
        b, t, c = x.shape
        return x.reshape(b, t, self.n_head, c // self.n_head).transpose(0, 2, 1, 3)

    def __call__(self, x):
        b, t, c = x.shape
        q, k, v = map(self.heads, np.split(self.c_attn(x), 3, axis=-1))
        causal = np.triu(np.full((t, t), -1e9, dtype=np.float32), k=1)
        att = softmax(q @ k.transpose(0, 1, 3, 2) * (1.0 / q.shape[-1] ** 0.5) + causal)
        return self.c_proj((att @ v).transpose(0, 2, 1, 3).reshape(b, t, c))


class MLP:
    c_fc: Linear
    c_proj: Linear

    def __init__(self, c_fc, c_proj):
        self.c_fc, self.c_proj = c_fc, c_proj

    def __call__(self, x):
        return self.c_proj(gelu(self.c_fc(x)))


class Block:
    ln_1: LayerNorm
    attn: Attention
    ln_2: LayerNorm
    mlp: MLP

    def __init__(self, ln_1, attn, ln_2, mlp):
        self.ln_1, self.attn, self.ln_2, self.mlp = ln_1, attn, ln_2, mlp

    @cv.optimize
    def __call__(self, x: cv.f32["B", "T", "C"]):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))
