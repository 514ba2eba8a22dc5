"""Hugging Face's GPT-2 block (bench/hf_gpt2.py: transformers' modeling_gpt2.py, eager
attention, the legacy tuple cache) ported to NumPy line by line, as users port it:
``Conv1D`` weights, ``layer_past=None`` a ``(key, value)`` tuple, ``attention_mask=None``,
``use_cache is True``, ``outputs = (attn_output, present)`` grown by ``outputs +=
(attn_weights,)`` and sliced ``outputs[1:]``, the causal mask a bool buffer sliced by the
lengths. The block compiles whole; it is checked against its Python on float64 copies of
random weights and inputs, every output of every nesting, for each way of calling it
(hypothesis)."""

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

GPT2 = (Path(__file__).resolve().parent.parent / "bench" / "hf_gpt2.py").read_text()

# transformers' GPT2Model.forward, its blocks a list of known length, past_key_values a
# tuple of (key, value) per block or None, np.arange from the cache's length, presents
# gathered in a tuple
MODEL = '''

KV = tuple[cv.f32["B", "H", "P", "D"], cv.f32["B", "H", "P", "D"]]


class GPT2Model:
    wte: cv.f32["V", "E"]
    wpe: cv.f32["NP", "E"]
    h: [GPT2Block] * 2
    ln_f: LayerNorm

    def __init__(self, wte, wpe, h, ln_f):
        self.wte, self.wpe, self.h, self.ln_f = wte, wpe, h, ln_f

    @cv.optimize
    def forward(self, input_ids: cv.i64["B", "T"], past_key_values: tuple[KV, KV] | None = None,
                attention_mask: cv.f32["B", "S"] = None, use_cache: bool = True):
        input_shape = input_ids.shape
        batch_size = input_ids.shape[0]
        if past_key_values is None:
            past_length = 0
            past_key_values = tuple([None] * len(self.h))
        else:
            past_length = past_key_values[0][0].shape[-2]
        position_ids = np.arange(past_length, input_shape[-1] + past_length, dtype=np.int64)
        position_ids = position_ids[None, :]
        if attention_mask is not None:
            attention_mask = attention_mask.reshape(batch_size, -1)
            attention_mask = attention_mask[:, None, None, :]
            attention_mask = (1.0 - attention_mask) * np.finfo(np.float32).min
        hidden_states = self.wte[input_ids] + self.wpe[position_ids]
        output_shape = input_shape + (hidden_states.shape[-1],)
        presents = () if use_cache else None
        for block, layer_past in zip(self.h, past_key_values):
            outputs = block.forward(hidden_states, layer_past=layer_past,
                                    attention_mask=attention_mask, use_cache=use_cache)
            hidden_states = outputs[0]
            if use_cache is True:
                presents = presents + (outputs[1],)
        hidden_states = self.ln_f(hidden_states)
        return hidden_states.reshape(output_shape), presents
'''


@pytest.fixture(scope="module")
def m(tmp_path_factory: pytest.TempPathFactory) -> Any:
    return compile_source(tmp_path_factory.mktemp("hf_gpt2"), GPT2)


@pytest.fixture(scope="module")
def model_module(tmp_path_factory: pytest.TempPathFactory) -> Any:
    # only the model marked: its float64 reference then runs the blocks in Python
    return compile_source(tmp_path_factory.mktemp("hf_gpt2_model"),
                          GPT2.replace("    @cv.optimize\n", "") + MODEL)


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


@settings(max_examples=6, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), b=st.integers(1, 2), t=st.integers(1, 3),
       masked=st.booleans())
def test_the_model_over_two_steps(model_module: Any, seed: int, b: int, t: int,
                                  masked: bool) -> None:
    """A prompt of t tokens, then one token against the cache the first call returned
    (random weights of a drawn seed: two blocks' worth is too much for hypothesis's draws)."""
    mod, rng = model_module, np.random.default_rng(seed)
    e, heads, vocab = 8, 2, 11

    def w(*shape: int) -> np.ndarray:
        return (rng.standard_normal(shape) / shape[0] ** 0.5).astype(np.float32)

    def block() -> Any:
        return mod.GPT2Block(mod.LayerNorm(1 + w(e), w(e)),
                             mod.GPT2Attention(mod.Conv1D(w(e, 3 * e), w(3 * e)),
                                               mod.Conv1D(w(e, e), w(e)), heads, 16),
                             mod.LayerNorm(1 + w(e), w(e)),
                             mod.GPT2MLP(mod.Conv1D(w(e, 4 * e), w(4 * e)),
                                         mod.Conv1D(w(4 * e, e), w(e))))

    model = mod.GPT2Model(w(vocab, e), w(16, e), [block(), block()],
                          mod.LayerNorm(1 + w(e), w(e)))
    ids = rng.integers(0, vocab, (b, t))
    first = model.forward(ids)
    assert_same_nesting(first, mod.GPT2Model.forward.py_func(to64(model), ids))
    mask = np.maximum(rng.random((b, t + 1)) < 0.8, np.eye(1, t + 1, t)).astype(np.float32) \
        if masked else None
    step = rng.integers(0, vocab, (b, 1))
    assert_same_nesting(model.forward(step, first[1], mask),
                        mod.GPT2Model.forward.py_func(to64(model), step, to64(first[1]), mask))
    assert model.forward(step, use_cache=False)[1] is None


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
