"""Hugging Face's GPT-2 block (transformers' modeling_gpt2.py: eager attention, the legacy
tuple cache) ported to NumPy line by line, as users port it: ``Conv1D`` with (in, out)
weights, ``layer_past=None`` a ``(key, value)`` tuple, ``use_cache is True``, outputs
nested, sliced and grown, the causal mask a bool buffer of ``max_positions`` sliced by the
lengths. Only ``GPT2Block.forward`` is marked (bench/class_hf_gpt2.py,
tests/test_hf_gpt2.py)."""

import math

import numpy as np

import cuvil_aot as cv


def softmax(x, axis=-1):
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


def gelu_new(x):  # transformers' NewGELUActivation: math.sqrt, a Python float (NEP 50)
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * np.power(x, 3.0))))


class Conv1D:
    weight: cv.f32["NX", "NF"]
    bias: cv.f32["NF"]

    def __init__(self, weight, bias):
        self.weight, self.bias = weight, bias

    def __call__(self, x):
        size_out = x.shape[:-1] + (self.weight.shape[1],)
        x = self.bias + x.reshape(-1, x.shape[-1]) @ self.weight
        return x.reshape(size_out)


class LayerNorm:
    weight: cv.f32["E"]
    bias: cv.f32["E"]
    eps: float

    def __init__(self, weight, bias, eps=1e-5):
        self.weight, self.bias, self.eps = weight, bias, eps

    def __call__(self, x):
        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)
        return (x - mean) / np.sqrt(var + self.eps) * self.weight + self.bias


class GPT2Attention:
    c_attn: Conv1D
    c_proj: Conv1D
    bias: cv.bool_[1, 1, "M", "M"]
    num_heads: int
    head_dim: int
    split_size: int

    def __init__(self, c_attn, c_proj, num_heads, max_positions):
        self.c_attn, self.c_proj = c_attn, c_proj
        self.bias = np.tril(np.ones((max_positions, max_positions), dtype=bool)).reshape(
            1, 1, max_positions, max_positions)
        self.num_heads = num_heads
        self.split_size = c_proj.weight.shape[0]
        self.head_dim = self.split_size // num_heads

    def _split_heads(self, tensor, num_heads, attn_head_size):
        new_shape = tensor.shape[:-1] + (num_heads, attn_head_size)
        tensor = tensor.reshape(new_shape)
        return tensor.transpose(0, 2, 1, 3)

    def _merge_heads(self, tensor, num_heads, attn_head_size):
        tensor = tensor.transpose(0, 2, 1, 3)
        new_shape = tensor.shape[:-2] + (num_heads * attn_head_size,)
        return tensor.reshape(new_shape)

    def _attn(self, query, key, value, attention_mask=None, head_mask=None):
        attn_weights = query @ key.swapaxes(-1, -2)
        attn_weights = attn_weights / np.full([], value.shape[-1] ** 0.5, dtype=attn_weights.dtype)
        query_length, key_length = query.shape[-2], key.shape[-2]
        causal_mask = self.bias[:, :, key_length - query_length: key_length, :key_length]
        mask_value = np.finfo(attn_weights.dtype).min
        attn_weights = np.where(causal_mask, attn_weights, mask_value)
        if attention_mask is not None:
            attn_weights = attn_weights + attention_mask
        attn_weights = softmax(attn_weights, axis=-1)
        if head_mask is not None:
            attn_weights = attn_weights * head_mask
        attn_output = attn_weights @ value
        return attn_output, attn_weights

    def forward(self, hidden_states, layer_past=None, attention_mask=None, use_cache=False,
                output_attentions=False):
        query, key, value = np.split(self.c_attn(hidden_states), 3, axis=2)
        query = self._split_heads(query, self.num_heads, self.head_dim)
        key = self._split_heads(key, self.num_heads, self.head_dim)
        value = self._split_heads(value, self.num_heads, self.head_dim)
        if layer_past is not None:
            past_key, past_value = layer_past
            key = np.concatenate((past_key, key), axis=-2)
            value = np.concatenate((past_value, value), axis=-2)
        if use_cache is True:  # noqa: SIM108 - as transformers writes it
            present = (key, value)
        else:
            present = None
        attn_output, attn_weights = self._attn(query, key, value, attention_mask)
        attn_output = self._merge_heads(attn_output, self.num_heads, self.head_dim)
        attn_output = self.c_proj(attn_output)
        outputs = (attn_output, present)
        if output_attentions:
            outputs += (attn_weights,)
        return outputs


class GPT2MLP:
    c_fc: Conv1D
    c_proj: Conv1D

    def __init__(self, c_fc, c_proj):
        self.c_fc, self.c_proj = c_fc, c_proj

    def __call__(self, hidden_states):
        hidden_states = self.c_fc(hidden_states)
        hidden_states = gelu_new(hidden_states)
        hidden_states = self.c_proj(hidden_states)
        return hidden_states


class GPT2Block:
    ln_1: LayerNorm
    attn: GPT2Attention
    ln_2: LayerNorm
    mlp: GPT2MLP

    def __init__(self, ln_1, attn, ln_2, mlp):
        self.ln_1, self.attn, self.ln_2, self.mlp = ln_1, attn, ln_2, mlp

    @cv.optimize
    def forward(self, hidden_states: cv.f32["B", "T", "E"],
                layer_past: tuple[cv.f32["B", "H", "P", "D"], cv.f32["B", "H", "P", "D"]] = None,
                attention_mask: cv.f32["B", 1, 1, "S"] = None,
                use_cache: bool = False, output_attentions: bool = False):
        residual = hidden_states
        hidden_states = self.ln_1(hidden_states)
        attn_outputs = self.attn.forward(hidden_states, layer_past=layer_past,
                                         attention_mask=attention_mask, use_cache=use_cache,
                                         output_attentions=output_attentions)
        attn_output = attn_outputs[0]  # output_attn: a, present, (attentions)
        outputs = attn_outputs[1:]
        hidden_states = attn_output + residual
        residual = hidden_states
        hidden_states = self.ln_2(hidden_states)
        feed_forward_hidden_states = self.mlp(hidden_states)
        hidden_states = residual + feed_forward_hidden_states
        if use_cache:  # noqa: SIM108 - as transformers writes it
            outputs = (hidden_states,) + outputs
        else:
            outputs = (hidden_states,) + outputs[1:]
        return outputs  # hidden_states, present, (attentions, cross_attentions)
