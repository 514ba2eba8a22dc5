"""Hugging Face's GPT-2 block (transformers' modeling_gpt2.py: eager attention, the legacy
tuple cache) ported to NumPy line by line, as users port it: ``Conv1D`` weights,
``layer_past=None`` a ``(key, value)`` tuple, ``attention_mask=None``, ``use_cache is
True``, ``outputs = (attn_output, present)`` grown by ``outputs += (attn_weights,)`` and
sliced ``outputs[1:]``, the causal mask a bool buffer sliced by the lengths. The block
compiles whole; it is checked against its Python on float64 copies of random weights and
inputs, every output of every nesting, for each way of calling it (hypothesis)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import assert_close, compile_source
from hypothesis import given, settings
from hypothesis import strategies as st
from test_elementwise import view_of
from test_methods import to64, weights

GPT2 = '''
import numpy as np
import cuvil_aot as cv


import numpy as np
import cuvil_aot as cv


def softmax(x, axis=-1):
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


def gelu_new(x):
    return 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * np.power(x, 3.0))))


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
        if use_cache is True:
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
        if use_cache:
            outputs = (hidden_states,) + outputs
        else:
            outputs = (hidden_states,) + outputs[1:]
        return outputs  # hidden_states, present, (attentions, cross_attentions)
'''


@pytest.fixture(scope="module")
def m(tmp_path_factory: pytest.TempPathFactory) -> Any:
    return compile_source(tmp_path_factory.mktemp("hf_gpt2"), GPT2)


def gpt2_block(m: Any, draw: Any, e: int, heads: int, positions: int) -> Any:
    def conv(i: int, o: int) -> Any:
        return m.Conv1D(weights(draw, (i, o)), weights(draw, (o,)))

    def norm() -> Any:
        return m.LayerNorm(1 + weights(draw, (e,)), weights(draw, (e,)))

    return m.GPT2Block(norm(), m.GPT2Attention(conv(e, 3 * e), conv(e, e), heads, positions),
                       norm(), m.GPT2MLP(conv(e, 4 * e), conv(4 * e, e)))


def assert_same_nesting(got: Any, ref: Any) -> None:
    if isinstance(ref, tuple):
        assert type(got) is tuple and len(got) == len(ref), (got, ref)
        for g, r in zip(got, ref):
            assert_same_nesting(g, r)
    elif ref is None:
        assert got is None
    else:
        assert_close(got, ref, np.float32, 4.0)  # two LayerNorms, a softmax: deeper rounding


@settings(max_examples=12, deadline=None)
@given(data=st.data(), b=st.integers(1, 2), t=st.integers(1, 4), p=st.integers(0, 3),
       heads=st.sampled_from([1, 2]), past=st.booleans(), masked=st.booleans(),
       use_cache=st.booleans(), output_attentions=st.booleans())
def test_the_block_called_every_way(m: Any, data: st.DataObject, b: int, t: int, p: int,
                                    heads: int, past: bool, masked: bool, use_cache: bool,
                                    output_attentions: bool) -> None:
    e, d = 4 * heads, 4
    blk = gpt2_block(m, data.draw, e, heads, positions=8)
    x = data.draw(view_of((b, t, e), "float32", special=False))
    kwargs: dict[str, Any] = {"use_cache": use_cache, "output_attentions": output_attentions}
    if past:
        kwargs["layer_past"] = tuple(data.draw(view_of((b, heads, p, d), "float32",
                                                       special=False)) for _ in range(2))
    if masked:
        keep = data.draw(st.integers(1, p * past + t))
        kwargs["attention_mask"] = np.where(np.arange(p * past + t) < keep, 0.0, -1e4).astype(
            np.float32) * np.ones((b, 1, 1, 1), np.float32)
    ref = m.GPT2Block.forward.py_func(to64(blk), to64(x), **to64(kwargs))
    assert_same_nesting(blk.forward(x, **kwargs), ref)


def test_a_longer_cache_than_the_mask_buffer_raises_as_numpy_does(m: Any) -> None:
    rng = np.random.default_rng(1)
    w = {n: (rng.standard_normal(s) / 2).astype(np.float32) for n, s in
         (("a", (4, 12)), ("ab", (12,)), ("p", (4, 4)), ("pb", (4,)), ("f", (4, 16)),
          ("fb", (16,)), ("g", (16, 4)), ("gb", (4,)), ("n", (4,)))}
    blk = m.GPT2Block(m.LayerNorm(w["n"], w["pb"]),
                      m.GPT2Attention(m.Conv1D(w["a"], w["ab"]), m.Conv1D(w["p"], w["pb"]), 1, 4),
                      m.LayerNorm(w["n"], w["pb"]),
                      m.GPT2MLP(m.Conv1D(w["f"], w["fb"]), m.Conv1D(w["g"], w["gb"])))
    x = rng.standard_normal((1, 3, 4)).astype(np.float32)
    past = tuple(rng.standard_normal((1, 1, 3, 4)).astype(np.float32) for _ in range(2))
    with pytest.raises(ValueError) as python:
        m.GPT2Block.forward.py_func(blk, x, past)
    with pytest.raises(type(python.value)):
        blk.forward(x, past)


@pytest.mark.gpu
def test_the_block_on_device_arrays(tmp_path: Path) -> None:
    from gpu_harness import Framework, device_arch

    mod = compile_source(tmp_path, GPT2, cuda_archs=(device_arch(),))
    fw, rng = Framework("torch"), np.random.default_rng(2)
    e, heads, b, t, p = 32, 4, 2, 3, 5

    def w(*shape: int) -> np.ndarray:
        return (rng.standard_normal(shape) / shape[0] ** 0.5).astype(np.float32)

    host = [w(e, 3 * e), w(3 * e), w(e, e), w(e), w(e, 4 * e), w(4 * e), w(4 * e, e), w(e),
            1 + w(e), w(e)]

    def block(a: list[Any]) -> Any:
        return mod.GPT2Block(mod.LayerNorm(a[8], a[9]),
                             mod.GPT2Attention(mod.Conv1D(a[0], a[1]), mod.Conv1D(a[2], a[3]),
                                               heads, 16),
                             mod.LayerNorm(a[8], a[9]),
                             mod.GPT2MLP(mod.Conv1D(a[4], a[5]), mod.Conv1D(a[6], a[7])))

    on_device = block([fw.put(a) for a in host])
    on_device.attn.bias = fw.put(on_device.attn.bias)
    x = rng.standard_normal((b, t, e)).astype(np.float32)
    past = tuple(rng.standard_normal((b, heads, p, e // heads)).astype(np.float32)
                 for _ in range(2))
    ref = mod.GPT2Block.forward.py_func(to64(block(host)), to64(x), to64(past), None, True, True)
    got = on_device.forward(fw.put(x), tuple(map(fw.put, past)), None, True, True)
    assert len(got) == 3 and len(got[1]) == 2
    for g, r in zip((got[0], *got[1], got[2]), (ref[0], *ref[1], ref[2])):
        assert_close(fw.get(g), r, np.float32, 4.0)
