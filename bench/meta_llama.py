"""Meta's llama/model.py as users port it to NumPy: classes (an ``Attention`` holding its
KV cache, written in place at ``start_pos``), a causal mask only where more than one token
comes (``mask = None; if seqlen > 1: ...``), ``repeat_kv`` by ``np.broadcast_to`` with
``if n_rep == 1: return x``, rotary pairs by strided slices. cuvil_aot compiles
``TransformerBlock.forward`` into versions, one per answer to those two conditions
(frontend/versions.py). bench/class_llama.py times it; tests/test_method_models.py
compiles this file and checks it against NumPy in float64."""
import math

import numpy as np

import cuvil_aot as cv


def precompute_freqs(dim, end, theta=10000.0):
    freqs = 1.0 / (theta ** (np.arange(0, dim, 2)[: (dim // 2)].astype(np.float32) / dim))
    t = np.arange(end, dtype=np.float32)
    freqs = np.outer(t, freqs)
    return np.cos(freqs), np.sin(freqs)


def apply_rotary(x, cos, sin):
    # x: (B, T, H, D) as pairs (even, odd)
    xr = x[..., 0::2]
    xi = x[..., 1::2]
    c = cos[None, :, None, :]
    s = sin[None, :, None, :]
    out = np.stack([xr * c - xi * s, xr * s + xi * c], axis=-1)
    return out.reshape(x.shape)


def repeat_kv(x, n_rep):
    bs, slen, n_kv_heads, head_dim = x.shape
    if n_rep == 1:
        return x
    return np.broadcast_to(x[:, :, :, None, :], (bs, slen, n_kv_heads, n_rep, head_dim)).reshape(
        bs, slen, n_kv_heads * n_rep, head_dim)


class RMSNorm:
    weight: cv.f32["D"]
    eps: float

    def __init__(self, weight, eps=1e-6):
        self.weight, self.eps = weight, eps

    def __call__(self, x):
        return x * (1.0 / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + self.eps)) * self.weight


class Attention:
    wq: cv.f32["QD", "D"]
    wk: cv.f32["KD", "D"]
    wv: cv.f32["KD", "D"]
    wo: cv.f32["D", "QD"]
    cache_k: cv.f32["MB", "MS", "KVH", "HD"]
    cache_v: cv.f32["MB", "MS", "KVH", "HD"]
    n_heads: int
    n_kv_heads: int

    def __init__(self, wq, wk, wv, wo, cache_k, cache_v, n_heads, n_kv_heads):
        self.wq, self.wk, self.wv, self.wo = wq, wk, wv, wo
        self.cache_k, self.cache_v = cache_k, cache_v
        self.n_heads, self.n_kv_heads = n_heads, n_kv_heads

    def forward(self, x, start_pos, cos, sin, mask: np.ndarray | None):
        bsz, seqlen, _ = x.shape
        head_dim = self.wq.shape[0] // self.n_heads
        n_rep = self.n_heads // self.n_kv_heads
        xq = (x @ self.wq.T).reshape(bsz, seqlen, self.n_heads, head_dim)
        xk = (x @ self.wk.T).reshape(bsz, seqlen, self.n_kv_heads, head_dim)
        xv = (x @ self.wv.T).reshape(bsz, seqlen, self.n_kv_heads, head_dim)
        xq, xk = apply_rotary(xq, cos, sin), apply_rotary(xk, cos, sin)
        self.cache_k[:bsz, start_pos: start_pos + seqlen] = xk
        self.cache_v[:bsz, start_pos: start_pos + seqlen] = xv
        keys = repeat_kv(self.cache_k[:bsz, : start_pos + seqlen], n_rep)
        values = repeat_kv(self.cache_v[:bsz, : start_pos + seqlen], n_rep)
        xq = xq.transpose(0, 2, 1, 3)
        keys = keys.transpose(0, 2, 1, 3)
        values = values.transpose(0, 2, 1, 3)
        scores = xq @ keys.transpose(0, 1, 3, 2) / math.sqrt(head_dim)
        if mask is not None:
            scores = scores + mask
        scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
        scores = scores / scores.sum(axis=-1, keepdims=True)
        out = (scores @ values).transpose(0, 2, 1, 3).reshape(bsz, seqlen, -1)
        return out @ self.wo.T


class FeedForward:
    w1: cv.f32["H", "D"]
    w2: cv.f32["D", "H"]
    w3: cv.f32["H", "D"]

    def __init__(self, w1, w2, w3):
        self.w1, self.w2, self.w3 = w1, w2, w3

    def __call__(self, x):
        a = x @ self.w1.T
        return ((a / (1.0 + np.exp(-a))) * (x @ self.w3.T)) @ self.w2.T


class TransformerBlock:
    attention: Attention
    feed_forward: FeedForward
    attention_norm: RMSNorm
    ffn_norm: RMSNorm

    def __init__(self, attention, feed_forward, attention_norm, ffn_norm):
        self.attention, self.feed_forward = attention, feed_forward
        self.attention_norm, self.ffn_norm = attention_norm, ffn_norm

    @cv.optimize
    def forward(self, x: cv.f32["B", "T", "D"], start_pos: int, cos: cv.f32["T", "HD2"],
                sin: cv.f32["T", "HD2"]):
        seqlen = x.shape[1]
        mask = None
        if seqlen > 1:
            mask = np.full((seqlen, seqlen), float("-inf"), dtype=np.float32)
            mask = np.triu(mask, k=1)
            mask = np.hstack([np.zeros((seqlen, start_pos), dtype=np.float32), mask])
        h = x + self.attention.forward(self.attention_norm(x), start_pos, cos, sin, mask)
        return h + self.feed_forward(self.ffn_norm(h))
