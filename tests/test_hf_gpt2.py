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
