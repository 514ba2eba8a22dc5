"""A LLaMA-style decoder block written in plain NumPy as users write it (bench/llama_block.py):
RMSNorm, rotary embeddings by halves (``rotate_half`` with np.concatenate), grouped-query
attention (8 query heads over 2 K/V heads, np.repeat), a causal mask from np.triu, SwiGLU.
Width 512, head 64, FFN 1408. ``llama_block_sqrt`` is the same block scaled by
``np.sqrt(64.0)``, an np.float64 that makes NumPy (and so cuvil_aot, which warns of it)
compute the attention and everything after it in float64."""

from __future__ import annotations

import math

import numpy as np

import cuvil_aot as cv

HIDDEN, HEADS, KV_HEADS, HEAD, FFN = 512, 8, 2, 64, 1408

SIGNATURE = ("f32[B,T,512], f32[T,64], f32[T,64], f32[512,512], f32[128,512], f32[128,512], "
             "f32[512,512], f32[512], f32[512], f32[1408,512], f32[1408,512], f32[512,1408]")


def rms_norm(x, w, eps=1e-6):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * w


def rotate_half(x):
    h = x.shape[-1] // 2
    return np.concatenate([-x[..., h:], x[..., :h]], axis=-1)


def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def block(x, cos, sin, wq, wk, wv, wo, g1, g2, w1, w3, w2, scale):
    b, t, _ = x.shape
    h = rms_norm(x, g1)
    q = (h @ wq.T).reshape(b, t, HEADS, HEAD).transpose(0, 2, 1, 3)
    k = (h @ wk.T).reshape(b, t, KV_HEADS, HEAD).transpose(0, 2, 1, 3)
    v = (h @ wv.T).reshape(b, t, KV_HEADS, HEAD).transpose(0, 2, 1, 3)
    q = q * cos + rotate_half(q) * sin
    k = k * cos + rotate_half(k) * sin
    k = np.repeat(k, HEADS // KV_HEADS, axis=1)
    v = np.repeat(v, HEADS // KV_HEADS, axis=1)
    s = q @ k.transpose(0, 1, 3, 2) / scale
    mask = np.triu(np.full((t, t), -np.inf, dtype=np.float32), 1)
    a = (softmax(s + mask) @ v).transpose(0, 2, 1, 3).reshape(b, t, HIDDEN)
    x = x + a @ wo.T
    h = rms_norm(x, g2)
    gate = h @ w1.T
    return x + (gate / (1.0 + np.exp(-gate)) * (h @ w3.T)) @ w2.T


@cv.optimize(signatures=[SIGNATURE])
def llama_block(x, cos, sin, wq, wk, wv, wo, g1, g2, w1, w3, w2):
    return block(x, cos, sin, wq, wk, wv, wo, g1, g2, w1, w3, w2, math.sqrt(HEAD))


@cv.optimize(signatures=[SIGNATURE])
def llama_block_sqrt(x, cos, sin, wq, wk, wv, wo, g1, g2, w1, w3, w2):
    return block(x, cos, sin, wq, wk, wv, wo, g1, g2, w1, w3, w2, np.sqrt(64.0))
