"""bench/transformer_models.py's models in PyTorch (CPU, float32), run eagerly or through
``torch.compile``: the same math with torch.nn.functional's fused ops (linear, layer_norm,
gelu, scaled_dot_product_attention)."""

import torch
import torch.nn.functional as F

torch.set_grad_enabled(False)

D, HEADS, HEAD = 768, 12, 64


def _split(x):
    b, t, _ = x.shape
    return x.view(b, t, HEADS, HEAD).transpose(1, 2)


def _merge(x):
    b, _, t, _ = x.shape
    return x.transpose(1, 2).reshape(b, t, D)


def _bert(x, mask, wq, bq, wk, bk, wv, bv, wo, bo, g1, b1, wi, bi, wf, bf, g2, b2, approx):
    q, k, v = _split(F.linear(x, wq, bq)), _split(F.linear(x, wk, bk)), _split(F.linear(x, wv, bv))
    bias = ((1.0 - mask) * -10000.0)[:, None, None, :]
    a = _merge(F.scaled_dot_product_attention(q, k, v, attn_mask=bias))
    a = F.layer_norm(x + F.linear(a, wo, bo), (D,), g1, b1, eps=1e-12)
    f = F.linear(F.gelu(F.linear(a, wi, bi), approximate=approx), wf, bf)
    return F.layer_norm(a + f, (D,), g2, b2, eps=1e-12)


def bert_layer(x, mask, *w):
    return _bert(x, mask, *w, approx="none")


def bert_layer_tanh(x, mask, *w):
    return _bert(x, mask, *w, approx="tanh")


def bert_stack(x, mask, *weights):
    for i in range(0, len(weights), 16):
        x = bert_layer(x, mask, *weights[i:i + 16])
    return x


def _ln(x, g, b):
    return F.layer_norm(x, (D,), g, b, eps=1e-5)


def _qkv(x, ln1_g, ln1_b, w_attn, b_attn):
    q, k, v = (_ln(x, ln1_g, ln1_b) @ w_attn + b_attn).split(D, dim=-1)
    return _split(q), _split(k), _split(v)


def _rest(x, a, w_proj, b_proj, ln2_g, ln2_b, w_fc, b_fc, w_out, b_out):
    x = x + _merge(a) @ w_proj + b_proj
    return x + F.gelu(_ln(x, ln2_g, ln2_b) @ w_fc + b_fc, approximate="tanh") @ w_out + b_out


def gpt2_block(x, ln1_g, ln1_b, w_attn, b_attn, *rest):
    q, k, v = _qkv(x, ln1_g, ln1_b, w_attn, b_attn)
    return _rest(x, F.scaled_dot_product_attention(q, k, v, is_causal=True), *rest)


def gpt2_decode(x, k_past, v_past, ln1_g, ln1_b, w_attn, b_attn, *rest):
    q, k, v = _qkv(x, ln1_g, ln1_b, w_attn, b_attn)
    k_all = torch.cat([k_past, k], dim=2)
    v_all = torch.cat([v_past, v], dim=2)
    a = F.scaled_dot_product_attention(q, k_all, v_all)
    return _rest(x, a, *rest), k_all, v_all


def gpt2_decode_inplace(x, k_cache, v_cache, t, ln1_g, ln1_b, w_attn, b_attn, *rest):
    q, k, v = _qkv(x, ln1_g, ln1_b, w_attn, b_attn)
    k_cache[:, :, t] = k[:, :, 0]
    v_cache[:, :, t] = v[:, :, 0]
    a = F.scaled_dot_product_attention(q, k_cache[:, :, :t + 1], v_cache[:, :, :t + 1])
    return _rest(x, a, *rest)


def build(model: str, compiled: bool):
    fn = globals()[model]
    return torch.compile(fn, dynamic=False) if compiled else fn
