"""Embeddings: gathers, position tables, rotary embeddings."""

# ruff: noqa: F722 - dims like "3H" read to pyflakes as broken forward annotations

import numpy as np

import cuvil_aot as cv


def layer_norm(x, gamma, beta, eps=1e-12):
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * gamma + beta


def rotate_half(x):
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]
    return np.concatenate([-x2, x1], axis=-1)


@cv.optimize
def bert_embeddings(input_ids: cv.i64["B", "T"], token_type_ids: cv.i64["B", "T"],
                    word_table: cv.f32["V", "D"], type_table: cv.f32[2, "D"],
                    pos_table: cv.f32["P", "D"], gamma: cv.f32["D"], beta: cv.f32["D"]):
    t = input_ids.shape[1]
    x = word_table[input_ids] + type_table[token_type_ids] + pos_table[:t]
    return layer_norm(x, gamma, beta)


@cv.optimize
def scaled_embedding_take(ids: cv.i32["B", "T"], table: cv.f32["V", "D"]):
    return np.take(table, ids, axis=0) * np.sqrt(table.shape[1])


@cv.optimize
def position_embedding_add(x: cv.f32["B", "T", "D"], pos_table: cv.f32["P", "D"]):
    t = x.shape[1]
    positions = np.arange(t)
    return x + pos_table[positions][None, :, :]


@cv.optimize
def positions_from_padding_mask(attention_mask: cv.i64["B", "T"],
                                pos_table: cv.f32["P", "D"]):
    # left padding: positions count real tokens only (as HF generate does)
    position_ids = np.cumsum(attention_mask, axis=-1) - 1
    position_ids = np.where(attention_mask == 0, 1, position_ids)
    return pos_table[position_ids]


@cv.optimize
def sinusoidal_position_encoding(x: cv.f32["T", "D"]):
    t, d = x.shape
    position = np.arange(t)[:, None]
    div_term = np.exp(np.arange(0, d, 2) * (-np.log(10000.0) / d))
    pe = np.zeros((t, d), dtype=np.float32)
    pe[:, 0::2] = np.sin(position * div_term)
    pe[:, 1::2] = np.cos(position * div_term)
    return x + pe


@cv.optimize
def rotary_embedding(q: cv.f32["B", "T", "D"], k: cv.f32["B", "T", "D"],
                     cos: cv.f32["T", "D"], sin: cv.f32["T", "D"]):
    q_rot = q * cos + rotate_half(q) * sin
    k_rot = k * cos + rotate_half(k) * sin
    return q_rot, k_rot


@cv.optimize
def rotary_embedding_interleaved(x: cv.f32["B", "T", "2H"], cos: cv.f32["T", "H"],
                                 sin: cv.f32["T", "H"]):
    x_even, x_odd = x[..., ::2], x[..., 1::2]
    out_even = x_even * cos - x_odd * sin
    out_odd = x_even * sin + x_odd * cos
    return np.stack([out_even, out_odd], axis=-1).reshape(x.shape)


@cv.optimize
def rotary_tables(positions: cv.i64["T"], inv_freq: cv.f32["H"]):
    freqs = np.outer(positions, inv_freq)
    emb = np.concatenate([freqs, freqs], axis=-1)
    return np.cos(emb), np.sin(emb)
