"""Grouped-query attention without copies of the repeated K and V heads
(passes/grouped_query.py): ``repeat_kv`` as LLaMA writes it (``np.broadcast_to`` then a
reshape; in Hugging Face's layout and Meta's, whose heads are repeated before they are
transposed) and as ``np.repeat``, with an additive mask, a causal mask, a decode step's one
query row, K and V grown by ``np.concatenate`` and strided views of the arguments, against
NumPy in float64 on random shapes, outputs poisoned. The matmuls run per K/V head
(batches B·KV, n·T rows), no kernel copies the repeats, and a matmul whose operand
repeats heads in another order (``np.tile``) keeps its copy."""

from __future__ import annotations

import numpy as np
from conftest import check
from hypothesis import given, settings
from hypothesis import strategies as st

from cuvil_aot.compiler import pipeline
from cuvil_aot.compiler.ir.group import Kind
from cuvil_aot.compiler.ir.ops import Op

SOURCE = '''
import numpy as np
import cuvil_aot as cv

def repeat_kv(x, n_rep):
    b, kv, s, d = x.shape
    x = np.broadcast_to(x[:, :, None, :, :], (b, kv, n_rep, s, d))
    return x.reshape(b, kv * n_rep, s, d)

def softmax(x):
    e = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return e / np.sum(e, axis=-1, keepdims=True)

@cv.optimize
def llama(q: cv.f32["B", "H", "T", "D"], k: cv.f32["B", "KV", "S", "D"],
          v: cv.f32["B", "KV", "S", "D"], mask: cv.f32["B", 1, "T", "S"]):
    n = q.shape[1] // k.shape[1]
    s = np.matmul(q, repeat_kv(k, n).transpose(0, 1, 3, 2)) * q.shape[-1] ** -0.5
    return np.matmul(softmax(s + mask), repeat_kv(v, n))

@cv.optimize
def repeated(q: cv.f32["B", "H", "T", "D"], k: cv.f32["B", "KV", "S", "D"],
             v: cv.f32["B", "KV", "S", "D"]):
    n = q.shape[1] // k.shape[1]
    t, s = q.shape[2], k.shape[2]
    causal = np.triu(np.full((t, s), -1e9, np.float32), k=s - t + 1)
    scores = q @ np.repeat(k, n, axis=1).transpose(0, 1, 3, 2) / q.shape[-1] ** 0.5
    return softmax(scores + causal) @ np.repeat(v, n, axis=1)

@cv.optimize
def with_cache(q: cv.f32["B", "H", "T", "D"], k: cv.f32["B", "KV", "T", "D"],
               past: cv.f32["B", "KV", "P", "D"]):
    keys = np.concatenate([past, k], axis=2)
    n = q.shape[1] // k.shape[1]
    p = softmax(np.matmul(q, repeat_kv(keys, n).transpose(0, 1, 3, 2)) * 0.125)
    return np.matmul(p, repeat_kv(keys, n)), keys

def repeat_kv_meta(x, n_rep):
    bs, slen, n_kv_heads, head_dim = x.shape
    x = np.broadcast_to(x[:, :, :, None, :], (bs, slen, n_kv_heads, n_rep, head_dim))
    return x.reshape(bs, slen, n_kv_heads * n_rep, head_dim)

@cv.optimize
def meta(xq: cv.f32["B", "T", "H", "D"], keys: cv.f32["B", "S", "KV", "D"],
         values: cv.f32["B", "S", "KV", "D"], mask: cv.f32["T", "S"]):
    n = xq.shape[2] // keys.shape[2]
    xq = xq.transpose(0, 2, 1, 3)
    keys = repeat_kv_meta(keys, n).transpose(0, 2, 1, 3)
    values = repeat_kv_meta(values, n).transpose(0, 2, 1, 3)
    scores = np.matmul(xq, keys.transpose(0, 1, 3, 2)) / xq.shape[-1] ** 0.5 + mask
    return np.matmul(softmax(scores), values).transpose(0, 2, 1, 3)

@cv.optimize
def tiled(q: cv.f32["B", "H", "T", "D"], k: cv.f32["B", "KV", "S", "D"]):
    return q @ np.tile(k, (1, q.shape[1] // k.shape[1], 1, 1)).transpose(0, 1, 3, 2)
'''


def _shapes(draw, t_max: int = 9):
    b, kv, n = draw(st.integers(1, 3)), draw(st.integers(1, 3)), draw(st.integers(1, 4))
    t, s, d = draw(st.integers(1, t_max)), draw(st.integers(1, 40)), draw(st.integers(1, 24))
    return b, kv, n, t, s, d


shapes = st.composite(_shapes)()


def _randn(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


@settings(max_examples=25, deadline=None)
@given(shape=shapes, seed=st.integers(0, 2**32 - 1))
def test_repeat_kv_with_a_mask(compiled, shape, seed):
    b, kv, n, t, s, d = shape
    rng = np.random.default_rng(seed)
    mask = np.where(rng.random((b, 1, t, s)) < 0.2, -1e9, 0.0).astype(np.float32)
    mask[..., 0] = 0.0  # every row keeps a key
    check(compiled.llama, _randn(rng, b, kv * n, t, d), _randn(rng, b, kv, s, d),
          _randn(rng, b, kv, s, d), mask, scale=4)


@settings(max_examples=25, deadline=None)
@given(shape=shapes, seed=st.integers(0, 2**32 - 1))
def test_np_repeat_with_a_causal_mask(compiled, shape, seed):
    b, kv, n, t, s, d = shape
    rng = np.random.default_rng(seed)
    s = max(s, t)
    check(compiled.repeated, _randn(rng, b, kv * n, t, d), _randn(rng, b, kv, s, d),
          _randn(rng, b, kv, s, d), scale=4)


@settings(max_examples=20, deadline=None)
@given(shape=shapes, seed=st.integers(0, 2**32 - 1))
def test_a_decode_step_on_views(compiled, shape, seed):
    """One query row against a cache grown by np.concatenate; q and the past as strided
    views (every other head, every other position)."""
    b, kv, n, _, s, d = shape
    rng = np.random.default_rng(seed)
    q = _randn(rng, b, 2 * kv * n, 1, d)[:, ::2]
    past = _randn(rng, b, kv, 2 * s, d)[:, :, ::2]
    check(compiled.with_cache, q, _randn(rng, b, kv, 1, d), past, scale=4)


@settings(max_examples=20, deadline=None)
@given(shape=shapes, seed=st.integers(0, 2**32 - 1))
def test_meta_layout_heads_repeated_before_the_transpose(compiled, shape, seed):
    """Meta's LLaMA: (B, S, KV, D) repeated on axis 2, then the heads transposed; a causal
    mask over the last T of S positions."""
    b, kv, n, t, s, d = shape
    rng = np.random.default_rng(seed)
    s = max(s, t)
    mask = np.triu(np.full((t, s), -1e9, np.float32), k=s - t + 1)
    check(compiled.meta, _randn(rng, b, t, kv * n, d), _randn(rng, b, s, kv, d),
          _randn(rng, b, s, kv, d), mask, scale=4)


def test_the_matmuls_run_per_kv_head(compiled):
    """llama's and meta's two matmuls have B·KV batches of n·T rows, and no kernel of
    either stores the repeated heads; tiled's repeat (head h reads K/V head h % KV) keeps
    its copy."""
    _, _, functions = pipeline.compile_ir(compiled, pipeline.Options())
    for name in ("llama", "meta"):
        fn = functions[name][0][1]
        gemms = [g for g in fn.groups if g.kind is Kind.GEMM]
        assert len(gemms) == 2
        for g in gemms:
            assert str(g.space.shape[0]) == "B*KV", g.space.shape
        assert not [g for g in fn.groups if any(_repeat(n) for n in _nodes(g))]
    tiled = functions["tiled"][0][1]
    assert any(str(g.space.shape[0]) != "B*KV" for g in tiled.groups if g.kind is Kind.GEMM)
    assert any(_repeat(n) for g in tiled.groups for n in _nodes(g))


def _repeat(node) -> bool:
    """A broadcast of K or V heads to (B, KV, n, S, D) or (B, n, KV, S, D): a repeat."""
    return node.op is Op.BROADCAST and len(node.shape) == 5

def _nodes(group):
    seen, todo = set(), list(group.roots)
    while todo:
        n = todo.pop()
        if id(n) not in seen:
            seen.add(id(n))
            yield n
            todo.extend(n.srcs)
