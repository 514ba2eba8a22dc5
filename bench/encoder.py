"""A 6-layer BERT-style encoder as one user module (the first-build issue's second module):
384 wide, 12 heads of 32, FFN 1536, post-LayerNorm; two marked functions (the layer and
the pooling) and a plain loop over the layers. Self-contained: bench/build_time.py
imports it from a fresh directory."""

import math

import numpy as np

import cuvil_aot as cv

HIDDEN, HEADS, FFN = 384, 12, 1536


def layer_norm(x, g, b):
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(var + 1e-12) * g + b


def heads(x):
    b, t, _ = x.shape
    return x.reshape(b, t, HEADS, HIDDEN // HEADS).transpose(0, 2, 1, 3)


@cv.optimize(signatures=["f32[B,T,384], f32[B,T], f32[384,384], f32[384], f32[384,384], "
                         "f32[384], f32[384,384], f32[384], f32[384,384], f32[384], f32[384], "
                         "f32[384], f32[1536,384], f32[1536], f32[384,1536], f32[384], "
                         "f32[384], f32[384]"])
def encoder_layer(x, mask, wq, bq, wk, bk, wv, bv, wo, bo, g1, b1, wi, bi, wf, bf, g2, b2):
    q, k, v = heads(x @ wq.T + bq), heads(x @ wk.T + bk), heads(x @ wv.T + bv)
    s = q @ k.transpose(0, 1, 3, 2) / math.sqrt(HIDDEN // HEADS)
    s = s + (1.0 - mask[:, None, None, :]) * -10000.0
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    p = p / p.sum(axis=-1, keepdims=True)
    ctx = (p @ v).transpose(0, 2, 1, 3).reshape(x.shape)
    a = layer_norm(x + ctx @ wo.T + bo, g1, b1)
    h = a @ wi.T + bi
    h = 0.5 * h * (1.0 + np.tanh(0.7978845608028654 * (h + 0.044715 * h ** 3)))
    return layer_norm(a + h @ wf.T + bf, g2, b2)


@cv.optimize(signatures=["f32[B,T,384], f32[B,T]"])
def mean_pool(x, mask):
    m = mask[:, :, None]
    return (x * m).sum(axis=1) / np.maximum(m.sum(axis=1), 1e-9)


def encode(x, mask, layers):
    for weights in layers:
        x = encoder_layer(x, mask, *weights)
    return mean_pool(x, mask)
