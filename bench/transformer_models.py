"""Transformer workloads written in plain NumPy, as users port them from PyTorch state dicts:
linear layers are ``x @ w.T + b`` on (out, in) weights, heads are split and merged with
``reshape`` / ``transpose``.

- ``bert_layer``: a BERT-base encoder layer (post-LayerNorm, additive padding mask, erf
  GELU built from an erf polynomial because NumPy has no ``erf``); ``bert_layer_tanh`` the
  same with tanh GELU.
- ``gpt2_block``: a GPT-2-small block (pre-LayerNorm, causal mask, tanh GELU) on a prompt.
- ``gpt2_decode``: the same block for one new token against a KV cache of past keys and
  values, appended with ``np.concatenate``; returns the new cache.
"""

import math

import numpy as np

import cuvil_aot as cv

HIDDEN = 768
HEADS = 12
HEAD = HIDDEN // HEADS
FFN = 3072
EPS = 1e-12


def layer_norm(x, g, b, eps=EPS):
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * g + b


def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def erf(x):
    # Abramowitz & Stegun 7.1.26 (|error| < 1.5e-7), the usual NumPy stand-in for erf.
    s = np.sign(x)
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    y = 1.0 - (((((1.061405429 * t - 1.453152027) * t) + 1.421413741) * t - 0.284496736) * t
               + 0.254829592) * t * np.exp(-a * a)
    return s * y


def gelu_erf(x):
    return 0.5 * x * (1.0 + erf(x / math.sqrt(2.0)))


def gelu_tanh(x):
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


def split_heads(x):
    b, t, _ = x.shape
    return x.reshape(b, t, HEADS, HEAD).transpose(0, 2, 1, 3)


def merge_heads(x):
    b, _, t, _ = x.shape
    return x.transpose(0, 2, 1, 3).reshape(b, t, HIDDEN)


def attention(q, k, v, bias):
    scores = q @ k.transpose(0, 1, 3, 2) * (1.0 / q.shape[-1] ** 0.5) + bias
    return softmax(scores) @ v


def _bert(x, mask, wq, bq, wk, bk, wv, bv, wo, bo, g1, b1, wi, bi, wf, bf, g2, b2, gelu):
    q = split_heads(x @ wq.T + bq)
    k = split_heads(x @ wk.T + bk)
    v = split_heads(x @ wv.T + bv)
    bias = (1.0 - mask[:, None, None, :]) * -10000.0
    a = layer_norm(x + merge_heads(attention(q, k, v, bias)) @ wo.T + bo, g1, b1)
    return layer_norm(a + gelu(a @ wi.T + bi) @ wf.T + bf, g2, b2)


BERT = ("f32[B,T,768], f32[B,T], f32[768,768], f32[768], f32[768,768], f32[768], "
        "f32[768,768], f32[768], f32[768,768], f32[768], f32[768], f32[768], "
        "f32[3072,768], f32[3072], f32[768,3072], f32[768], f32[768], f32[768]")


@cv.optimize(signatures=[BERT])
def bert_layer(x, mask, wq, bq, wk, bk, wv, bv, wo, bo, g1, b1, wi, bi, wf, bf, g2, b2):
    return _bert(x, mask, wq, bq, wk, bk, wv, bv, wo, bo, g1, b1, wi, bi, wf, bf, g2, b2,
                 gelu_erf)


@cv.optimize(signatures=[BERT])
def bert_layer_tanh(x, mask, wq, bq, wk, bk, wv, bv, wo, bo, g1, b1, wi, bi, wf, bf, g2, b2):
    return _bert(x, mask, wq, bq, wk, bk, wv, bv, wo, bo, g1, b1, wi, bi, wf, bf, g2, b2,
                 gelu_tanh)


def _gpt2_attention_input(x, ln1_g, ln1_b, w_attn, b_attn):
    q, k, v = np.split(layer_norm(x, ln1_g, ln1_b, 1e-5) @ w_attn + b_attn, 3, axis=-1)
    return split_heads(q), split_heads(k), split_heads(v)


def _gpt2_rest(x, a, w_proj, b_proj, ln2_g, ln2_b, w_fc, b_fc, w_out, b_out):
    x = x + merge_heads(a) @ w_proj + b_proj
    return x + gelu_tanh(layer_norm(x, ln2_g, ln2_b, 1e-5) @ w_fc + b_fc) @ w_out + b_out


GPT2 = ("f32[768], f32[768], f32[768,2304], f32[2304], f32[768,768], f32[768], "
        "f32[768], f32[768], f32[768,3072], f32[3072], f32[3072,768], f32[768]")


@cv.optimize(signatures=["f32[B,T,768], " + GPT2])
def gpt2_block(x, ln1_g, ln1_b, w_attn, b_attn, w_proj, b_proj, ln2_g, ln2_b, w_fc, b_fc,
               w_out, b_out):
    """GPT-2 weights are (in, out) (Hugging Face's Conv1D): ``x @ w + b``."""
    q, k, v = _gpt2_attention_input(x, ln1_g, ln1_b, w_attn, b_attn)
    t = x.shape[1]
    causal = np.triu(np.full((t, t), -1e9, dtype=np.float32), k=1)
    a = attention(q, k, v, causal)
    return _gpt2_rest(x, a, w_proj, b_proj, ln2_g, ln2_b, w_fc, b_fc, w_out, b_out)


@cv.optimize(signatures=["f32[B,1,768], f32[B,12,P,64], f32[B,12,P,64], " + GPT2])
def gpt2_decode(x, k_past, v_past, ln1_g, ln1_b, w_attn, b_attn, w_proj, b_proj, ln2_g,
                ln2_b, w_fc, b_fc, w_out, b_out):
    """One new token per sequence; returns its output and the caches grown by one."""
    q, k, v = _gpt2_attention_input(x, ln1_g, ln1_b, w_attn, b_attn)
    k_all = np.concatenate([k_past, k], axis=2)
    v_all = np.concatenate([v_past, v], axis=2)
    a = attention(q, k_all, v_all, 0.0)
    out = _gpt2_rest(x, a, w_proj, b_proj, ln2_g, ln2_b, w_fc, b_fc, w_out, b_out)
    return out, k_all, v_all


def _stack(layer, x, mask, weights):
    for i in range(0, len(weights), 16):
        x = layer(x, mask, *weights[i:i + 16])
    return x


def bert_stack(x, mask, *weights):
    """BERT layers from a Python loop (16 weights a layer), each a ``bert_layer`` call: the
    call path counts. ``bert_stack.py_func`` runs the same loop over NumPy's original."""
    return _stack(bert_layer, x, mask, weights)


def _bert_stack_numpy(x, mask, *weights):
    return _stack(bert_layer.py_func, x, mask, weights)


bert_stack.py_func = _bert_stack_numpy


@cv.optimize(signatures=["f32[B,1,768], f32[B,12,S,64], f32[B,12,S,64], int, " + GPT2])
def gpt2_decode_inplace(x, k_cache, v_cache, t, ln1_g, ln1_b, w_attn, b_attn, w_proj,
                        b_proj, ln2_g, ln2_b, w_fc, b_fc, w_out, b_out):
    """The decode step as servers write it: the new key and value go into preallocated
    caches at position t (the caller's arrays are written), attention reads positions
    0..t."""
    q, k, v = _gpt2_attention_input(x, ln1_g, ln1_b, w_attn, b_attn)
    k_cache[:, :, t] = k[:, :, 0]
    v_cache[:, :, t] = v[:, :, 0]
    a = attention(q, k_cache[:, :, :t + 1], v_cache[:, :, :t + 1], 0.0)
    return _gpt2_rest(x, a, w_proj, b_proj, ln2_g, ln2_b, w_fc, b_fc, w_out, b_out)
