"""Hugging Face's LLaMA decoder layer (bench/hf_llama.py: transformers' modeling_llama.py,
eager attention) ported to NumPy line by line: RMSNorm, rotary embeddings from an
``inv_freq`` buffer and position ids, grouped-query attention through ``repeat_kv``, the heads
split by ``(*input_shape, -1, self.head_dim)`` (a -1 over an instance's int: inferred at the
call), a past ``(key, value)`` or None, a mask or None, the outputs grown by what is asked.
Checked against its Python on float64 copies of random weights and inputs, every output,
each way of calling it (hypothesis)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import assert_close, compile_source
from hypothesis import given, settings
from hypothesis import strategies as st
from test_hf_gpt2 import assert_same_nesting
from test_methods import to64

LLAMA = (Path(__file__).resolve().parent.parent / "bench" / "hf_llama.py").read_text()


@pytest.fixture(scope="module")
def m(tmp_path_factory: pytest.TempPathFactory) -> Any:
    return compile_source(tmp_path_factory.mktemp("hf_llama"), LLAMA)


def layer(m: Any, rng: np.random.Generator, e: int, heads: int, kv_heads: int,
          put: Any = lambda a: a) -> Any:
    """A layer of random weights (``put`` on each: a device's copy)."""
    def w(*shape: int) -> Any:
        return put((rng.standard_normal(shape) / shape[-1] ** 0.5).astype(np.float32))

    d, inner = e // heads, 2 * e
    attention = m.LlamaAttention(m.Linear(w(heads * d, e)), m.Linear(w(kv_heads * d, e)),
                                 m.Linear(w(kv_heads * d, e)), m.Linear(w(e, heads * d)), heads,
                                 kv_heads)
    return m.LlamaDecoderLayer(attention, m.LlamaMLP(m.Linear(w(inner, e)),
                                                     m.Linear(w(inner, e)),
                                                     m.Linear(w(e, inner))),
                               m.LlamaRMSNorm(w(e) + 1), m.LlamaRMSNorm(w(e) + 1),
                               rotary(m, d, put))


def rotary(m: Any, d: int, put: Any) -> Any:
    r = m.LlamaRotaryEmbedding(d)
    r.inv_freq = put(r.inv_freq)
    return r


@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), b=st.integers(1, 2), t=st.integers(1, 4),
       p=st.integers(1, 4), heads=st.sampled_from([(2, 2), (4, 2), (2, 1)]),
       past=st.booleans(), masked=st.booleans(), output_attentions=st.booleans(),
       use_cache=st.booleans())
def test_the_layer_called_every_way(m: Any, seed: int, b: int, t: int, p: int,
                                    heads: tuple[int, int], past: bool, masked: bool,
                                    output_attentions: bool, use_cache: bool) -> None:
    rng = np.random.default_rng(seed)
    n_heads, kv_heads = heads
    e, p = 4 * n_heads, p if past else 0
    lay = layer(m, rng, e, n_heads, kv_heads)
    x = rng.standard_normal((b, t, e)).astype(np.float32)
    positions = np.arange(p, p + t)[None].repeat(b, 0)
    mask = np.triu(np.full((t, p + t), np.finfo(np.float32).min, np.float32), p + 1)[
        None, None].repeat(b, 0) if masked else None
    cache = tuple(rng.standard_normal((b, kv_heads, p, e // n_heads)).astype(np.float32)
                  for _ in range(2)) if past else None
    args = (x, positions, mask, cache, output_attentions, use_cache)
    ref = m.LlamaDecoderLayer.forward.py_func(to64(lay), *to64(args))
    assert_same_nesting(lay.forward(*args), ref)


@pytest.mark.gpu
def test_the_layer_on_device_arrays(tmp_path: Path) -> None:
    from gpu_harness import Framework, device_arch

    mod = compile_source(tmp_path, LLAMA, cuda_archs=(device_arch(),))
    fw, b, t, p = Framework("torch"), 2, 3, 4
    host, dev = (layer(mod, np.random.default_rng(5), 16, 4, 2, put)
                 for put in (lambda a: a, fw.put))
    rng = np.random.default_rng(6)
    x = rng.standard_normal((b, t, 16)).astype(np.float32)
    positions = np.arange(p, p + t)[None].repeat(b, 0)
    mask = np.triu(np.full((t, p + t), np.finfo(np.float32).min, np.float32), p + 1)[
        None, None].repeat(b, 0)
    cache = tuple(rng.standard_normal((b, 2, p, 4)).astype(np.float32) for _ in range(2))
    ref = mod.LlamaDecoderLayer.forward.py_func(to64(host), to64(x), positions, to64(mask),
                                                to64(cache), True, True)
    got = dev.forward(fw.put(x), fw.put(positions), fw.put(mask), tuple(map(fw.put, cache)),
                      True, True)
    assert len(got) == 3 and len(got[2]) == 2
    for g, r in zip((got[0], got[1], *got[2]), (ref[0], ref[1], *ref[2])):
        assert_close(fw.get(g), r, np.float32, 4.0)
