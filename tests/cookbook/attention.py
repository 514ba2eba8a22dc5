"""Attention: the scale spelled every usual way, multi-head split/merge, causal and
padding masks, einsum scores, ALiBi, KV caches (written in place, also in a loop)."""

# ruff: noqa: F722 - dims like "3H" read to pyflakes as broken forward annotations

import math

import numpy as np

import cuvil_aot as cv

N_HEADS = 4


def softmax(x, axis=-1):
    x = x - np.max(x, axis=axis, keepdims=True)
    e = np.exp(x)
    return e / np.sum(e, axis=axis, keepdims=True)


@cv.optimize
def sdpa_np_sqrt(q: cv.f32["B", "T", "D"], k: cv.f32["B", "S", "D"],
                 v: cv.f32["B", "S", "D"]):
    d = q.shape[-1]
    scores = q @ k.transpose(0, 2, 1) / np.sqrt(d)
    return softmax(scores) @ v


@cv.optimize
def sdpa_pow_scale(q: cv.f32["B", "T", "D"], k: cv.f32["B", "S", "D"],
                   v: cv.f32["B", "S", "D"]):
    scale = q.shape[-1] ** -0.5
    scores = np.matmul(q, np.swapaxes(k, -1, -2)) * scale
    return np.matmul(softmax(scores, axis=-1), v)


@cv.optimize
def sdpa_single_sequence(q: cv.f32["T", "D"], k: cv.f32["S", "D"], v: cv.f32["S", "D"]):
    d = q.shape[-1]
    scores = (q @ k.T) * (1 / d ** 0.5)
    scores = scores - scores.max(axis=1, keepdims=True)
    weights = np.exp(scores)
    weights /= weights.sum(axis=1, keepdims=True)
    return weights @ v


@cv.optimize
def sdpa_math_sqrt(q: cv.f32["B", "T", "D"], k: cv.f32["B", "S", "D"],
                   v: cv.f32["B", "S", "D"]):
    d = q.shape[-1]
    attn = softmax(q @ k.transpose(0, 2, 1) / math.sqrt(d))
    return attn @ v, attn


@cv.optimize
def einsum_attention(q: cv.f32["B", "H", "T", "D"], k: cv.f32["B", "H", "S", "D"],
                     v: cv.f32["B", "H", "S", "D"]):
    scale = 1.0 / np.sqrt(q.shape[-1])
    scores = np.einsum("bhqd,bhkd->bhqk", q, k) * scale
    probs = softmax(scores)
    return np.einsum("bhqk,bhkd->bhqd", probs, v)


@cv.optimize
def multi_head_attention(x: cv.f32["B", "T", "D"], w_qkv: cv.f32["D", "3D"],
                         w_o: cv.f32["D", "D"]):
    b, t, d = x.shape
    hd = d // N_HEADS
    qkv = x @ w_qkv
    q, k, v = np.split(qkv, 3, axis=-1)
    # (B, T, D) -> (B, H, T, hd)
    q = q.reshape(b, t, N_HEADS, hd).transpose(0, 2, 1, 3)
    k = k.reshape(b, t, N_HEADS, hd).transpose(0, 2, 1, 3)
    v = v.reshape(b, t, N_HEADS, hd).transpose(0, 2, 1, 3)
    scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(hd)
    out = softmax(scores) @ v
    out = out.transpose(0, 2, 1, 3).reshape(b, t, d)
    return out @ w_o


@cv.optimize
def mha_heads_folded(x: cv.f32["B", "T", "D"], wq: cv.f32["D", "D"], wk: cv.f32["D", "D"],
                     wv: cv.f32["D", "D"]):
    b, t, d = x.shape
    hd = d // N_HEADS

    def split_heads(y):  # (B, T, D) -> (B*H, T, hd): batched 3-D matmuls only
        return y.reshape(b, t, N_HEADS, hd).transpose(0, 2, 1, 3).reshape(b * N_HEADS, t, hd)

    q, k, v = split_heads(x @ wq), split_heads(x @ wk), split_heads(x @ wv)
    attn = softmax(q @ k.transpose(0, 2, 1) * hd ** -0.5)
    out = attn @ v
    return out.reshape(b, N_HEADS, t, hd).transpose(0, 2, 1, 3).reshape(b, t, d)


@cv.optimize
def causal_attention_triu(q: cv.f32["B", "T", "D"], k: cv.f32["B", "T", "D"],
                          v: cv.f32["B", "T", "D"]):
    t, d = q.shape[1], q.shape[2]
    scores = q @ k.transpose(0, 2, 1) / np.sqrt(d)
    mask = np.triu(np.ones((t, t)), 1)  # 1 above the diagonal: future positions
    scores = scores - 1e9 * mask
    return softmax(scores) @ v


@cv.optimize
def causal_attention_arange(q: cv.f32["B", "T", "D"], k: cv.f32["B", "T", "D"],
                            v: cv.f32["B", "T", "D"]):
    t = q.shape[1]
    scores = q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[-1])
    causal = np.arange(t)[:, None] >= np.arange(t)[None, :]
    scores = np.where(causal, scores, -np.inf)
    return softmax(scores) @ v


@cv.optimize
def causal_attention_tril(q: cv.f32["B", "T", "D"], k: cv.f32["B", "T", "D"],
                          v: cv.f32["B", "T", "D"]):
    t = q.shape[1]
    scores = q @ k.transpose(0, 2, 1) * q.shape[-1] ** -0.5
    keep = np.tril(np.ones((t, t), dtype=bool))
    scores = np.where(keep, scores, np.finfo(np.float32).min)
    return softmax(scores) @ v


@cv.optimize
def padded_attention(q: cv.f32["B", "T", "D"], k: cv.f32["B", "S", "D"],
                     v: cv.f32["B", "S", "D"], attention_mask: cv.i64["B", "S"]):
    # attention_mask: 1 for real tokens, 0 for padding (as a tokenizer returns it)
    bias = (1.0 - attention_mask[:, None, :].astype(np.float32)) * -10000.0
    scores = q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[-1]) + bias
    return softmax(scores) @ v


@cv.optimize
def alibi_attention(q: cv.f32["B", "H", "T", "D"], k: cv.f32["B", "H", "T", "D"],
                    slopes: cv.f32["H"]):
    t = q.shape[2]
    distance = np.arange(t)[None, :] - np.arange(t)[:, None]  # key - query
    bias = slopes[:, None, None] * distance[None, :, :]
    scores = q @ np.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1]) + bias
    return softmax(scores)


@cv.optimize
def decode_step_kv_concat(q: cv.f32["B", "D"], k_new: cv.f32["B", "D"],
                          v_new: cv.f32["B", "D"], k_cache: cv.f32["B", "S", "D"],
                          v_cache: cv.f32["B", "S", "D"]):
    k = np.concatenate([k_cache, k_new[:, None, :]], axis=1)
    v = np.concatenate([v_cache, v_new[:, None, :]], axis=1)
    scores = np.einsum("bd,bsd->bs", q, k) / np.sqrt(q.shape[-1])
    p = softmax(scores)
    out = np.einsum("bs,bsd->bd", p, v)
    return out, k, v


@cv.optimize
def kv_cache_write(k_cache: cv.f32["B", "S", "D"], v_cache: cv.f32["B", "S", "D"],
                   k: cv.f32["B", "D"], v: cv.f32["B", "D"], t: int):
    k_cache[:, t] = k
    v_cache[:, t] = v
    return k_cache, v_cache


@cv.optimize
def decode_attend_prefix(q: cv.f32["B", "D"], k_cache: cv.f32["B", "S", "D"],
                         v_cache: cv.f32["B", "S", "D"], t: int):
    k = k_cache[:, : t + 1]
    v = v_cache[:, : t + 1]
    scores = (k @ q[:, :, None])[..., 0] / np.sqrt(q.shape[-1])
    p = softmax(scores)
    return (p[:, :, None] * v).sum(axis=1)


@cv.optimize
def kv_cache_append_loop(k: cv.f32["B", "T", "D"], v: cv.f32["B", "T", "D"],
                         k_cache: cv.f32["B", "S", "D"], v_cache: cv.f32["B", "S", "D"],
                         start: int):
    for i in range(k.shape[1]):
        k_cache[:, start + i] = k[:, i]
        v_cache[:, start + i] = v[:, i]
    return k_cache, v_cache
