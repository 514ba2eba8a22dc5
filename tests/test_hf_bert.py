"""Hugging Face's BERT encoder (bench/hf_bert.py: transformers' modeling_bert.py, eager
attention) ported to NumPy line by line, as users port it: ``transpose_for_scores``,
``attention_mask=None``, ``head_mask`` indexed per layer or None, the activation an
attribute holding a function, ``apply_chunking_to_forward`` called with a bound method, the
outputs a tuple of what is not None, and config flags (``is_decoder``,
``position_embedding_type``, ``chunk_size_feed_forward``) that ``__init__`` sets on each
instance to its class's values: constants of the compiled code, an instance set otherwise
refused at the call. The encoder compiles whole; it is checked against its Python on
float64 copies of random weights and inputs, every output, for each way of calling it
(hypothesis)."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from unittest.mock import patch

import numpy as np
import pytest
from conftest import assert_close, compile_source
from hypothesis import given, settings
from hypothesis import strategies as st
from test_hf_gpt2 import assert_same_nesting
from test_methods import to64

import cuvil_aot as cv

pytest.importorskip("scipy")
BERT = (Path(__file__).resolve().parent.parent / "bench" / "hf_bert.py").read_text()


@pytest.fixture(scope="module")
def m(tmp_path_factory: pytest.TempPathFactory) -> Any:
    return compile_source(tmp_path_factory.mktemp("hf_bert"), BERT)


def encoder(m: Any, rng: np.random.Generator, e: int, heads: int,
            put: Any = lambda a: a) -> Any:
    """Two layers of random weights (``put`` on each: a device's copy)."""
    def w(*shape: int) -> Any:
        return put((rng.standard_normal(shape) / shape[-1] ** 0.5).astype(np.float32))

    def linear(o: int, i: int) -> Any:
        return m.Linear(w(o, i), w(o))

    def norm() -> Any:
        return m.LayerNorm(w(e) + 1, w(e))

    def layer() -> Any:
        attention = m.BertAttention(
            m.BertSelfAttention(linear(e, e), linear(e, e), linear(e, e), heads),
            m.BertSelfOutput(linear(e, e), norm()))
        return m.BertLayer(attention, m.BertIntermediate(linear(4 * e, e)),
                           m.BertOutput(linear(e, 4 * e), norm()))

    return m.BertEncoder([layer(), layer()])


@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), b=st.integers(1, 2), t=st.integers(1, 5),
       heads=st.sampled_from([1, 2]), masked=st.booleans(), head_masked=st.booleans(),
       output_attentions=st.booleans(), output_hidden_states=st.booleans())
def test_the_encoder_called_every_way(m: Any, seed: int, b: int, t: int, heads: int,
                                      masked: bool, head_masked: bool, output_attentions: bool,
                                      output_hidden_states: bool) -> None:
    rng = np.random.default_rng(seed)
    e = 4 * heads
    enc = encoder(m, rng, e, heads)
    x = rng.standard_normal((b, t, e)).astype(np.float32)
    kwargs: dict[str, Any] = {"output_attentions": output_attentions,
                              "output_hidden_states": output_hidden_states}
    if masked:  # get_extended_attention_mask's: (1 - mask) * finfo.min, at least one kept
        keep = np.maximum(rng.random((b, t)) < 0.7, np.eye(1, t, 0, dtype=bool))
        kwargs["attention_mask"] = ((1.0 - keep[:, None, None, :])
                                    * np.finfo(np.float32).min).astype(np.float32)
    if head_masked:
        kwargs["head_mask"] = (rng.random((2, 1, heads, 1, 1)) < 0.6).astype(np.float32) \
            * np.ones((2, b, heads, t, t), np.float32)
    ref = m.BertEncoder.forward.py_func(to64(enc), x.astype(np.float64), **to64(kwargs))
    assert_same_nesting(enc.forward(x, **kwargs), ref)


@settings(max_examples=8, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), b=st.integers(1, 2), t=st.integers(1, 5),
       masked=st.booleans(), typed=st.booleans())
def test_the_model_from_token_ids(m: Any, seed: int, b: int, t: int, masked: bool,
                                  typed: bool) -> None:
    """BertModel.forward: the embeddings (position ids and token types from buffers sliced
    by the length, ``hasattr``), the extended mask, the encoder's marked forward inlined,
    the pooler."""
    rng = np.random.default_rng(seed)
    e, heads, vocab, positions = 8, 2, 13, 7

    def w(*shape: int) -> np.ndarray:
        return (rng.standard_normal(shape) / shape[-1] ** 0.5).astype(np.float32)

    embeddings = m.BertEmbeddings(m.Embedding(w(vocab, e)), m.Embedding(w(positions, e)),
                                  m.Embedding(w(2, e)), m.LayerNorm(w(e) + 1, w(e)))
    model = m.BertModel(embeddings, encoder(m, rng, e, heads), m.BertPooler(m.Linear(w(e, e),
                                                                                      w(e))))
    ids = rng.integers(0, vocab, (b, t))
    kwargs: dict[str, Any] = {}
    if masked:
        kwargs["attention_mask"] = np.maximum(rng.random((b, t)) < 0.7,
                                              np.eye(1, t, 0, dtype=bool)).astype(np.int64)
    if typed:
        kwargs["token_type_ids"] = rng.integers(0, 2, (b, t))
    with patch.object(m.BertEncoder, "forward", m.BertEncoder.forward.py_func):  # all Python
        ref = m.BertModel.forward.py_func(to64(model), ids, **kwargs)
    assert_same_nesting(model.forward(ids, **kwargs), ref)


def test_an_instance_set_otherwise_than_its_class_is_refused(m: Any) -> None:
    enc = encoder(m, np.random.default_rng(0), 8, 2)
    x = np.ones((1, 3, 8), np.float32)
    compiled = m.BertEncoder.forward.compiled  # the extension's entry: no fallback

    def call(enc: Any, x: np.ndarray) -> Any:
        return compiled(enc, x, None, None, False, False)

    call(enc, x)  # __init__ set is_decoder = False, as the class has it: fine
    enc.layer[1].is_decoder = True
    with pytest.raises(cv.SignatureError, match=r"argument 'self.layer\[1\]': the instance's "
                       r"own attribute 'is_decoder' \(True\) hides its class's \(False\)"):
        call(enc, x)
    enc.layer[1].is_decoder = False
    enc.layer[0].intermediate.intermediate_act_fn = np.tanh
    with pytest.raises(cv.SignatureError, match=r"'intermediate_act_fn' \(<ufunc 'tanh'>\)"):
        call(enc, x)


@pytest.mark.gpu
def test_the_encoder_on_device_arrays(tmp_path: Path) -> None:
    from gpu_harness import Framework, device_arch

    mod = compile_source(tmp_path, BERT, cuda_archs=(device_arch(),))
    fw, b, t, heads = Framework("torch"), 2, 5, 2
    host, dev = (encoder(mod, np.random.default_rng(3), 8, heads, put)
                 for put in (lambda a: a, fw.put))
    rng = np.random.default_rng(4)
    x = rng.standard_normal((b, t, 8)).astype(np.float32)
    mask = ((rng.random((b, 1, 1, t)) < 0.3) * np.finfo(np.float32).min).astype(np.float32)
    mask[..., 0] = 0.0  # a token kept in every row
    ref = mod.BertEncoder.forward.py_func(to64(host), to64(x), to64(mask), None, True, True)
    got = dev.forward(fw.put(x), fw.put(mask), None, True, True)
    assert len(got) == len(ref) == 3 and len(got[1]) == 3 and len(got[2]) == 2
    for g, r in zip((got[0], *got[1], *got[2]), (ref[0], *ref[1], *ref[2])):
        assert_close(fw.get(g), r, np.float32, 4.0)


def test_a_call_no_version_takes_says_each_reason_once(m: Any) -> None:
    """24 versions (masks None or not, head_mask's heads 1 or H, the two flags): the error
    lists each distinct reason once, with a signature that gave it shown by what sets it
    apart from the others, not 24 lines of 46 parameters."""
    enc = encoder(m, np.random.default_rng(0), 8, 2)
    with pytest.raises(cv.SignatureError) as info:
        enc.forward(np.ones((1, 3, 8), np.float32), np.ones((1, 1, 1, 3)))  # float64 mask
    lines = str(info.value).splitlines()
    assert lines[0] == "BertEncoder.forward(): no signature matches the arguments:"
    assert len(lines) == 3 and all(" and 11 more: argument 'attention_mask': expected" in line
                                   for line in lines[1:])
    assert lines[1].startswith("  (..., attention_mask: f32[B, 1, 1, T], head_mask: ")
