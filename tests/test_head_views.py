"""Attention heads as views, not copies: a reshape that splits an axis is an affine view
of any operand, a reshape that merges axes of a computed value reads its (contiguous)
buffer in place, ``k.transpose(0, 1, 3, 2)`` folds into a GEMM operand's strides, and a
row reduction over a size-1 axis stays in its consumer's kernel. Each pattern is checked
against NumPy in float64 on random shapes, and its kernel count pinned."""

from __future__ import annotations

import numpy as np
from conftest import check
from hypothesis import given, settings
from hypothesis import strategies as st

from cuvil_aot.compiler import pipeline
from cuvil_aot.compiler.ir.group import Kind

SOURCE = '''
import numpy as np
import cuvil_aot as cv

H = 4

def split_heads(x):
    b, t, d = x.shape
    return x.reshape(b, t, H, d // H).transpose(0, 2, 1, 3)

def merge_heads(x):
    b, h, t, e = x.shape
    return x.transpose(0, 2, 1, 3).reshape(b, t, h * e)

def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)

@cv.optimize(signatures=["f32[B,T,16], f32[16,16], f32[16,16], f32[16,16], f32[16,16]",
                         "f64[B,T,8], f64[8,8], f64[8,8], f64[8,8], f64[8,8]"])
def attention(x, wq, wk, wv, wo):
    q, k, v = split_heads(x @ wq), split_heads(x @ wk), split_heads(x @ wv)
    s = q @ k.transpose(0, 1, 3, 2) * (1.0 / q.shape[-1] ** 0.5)
    return merge_heads(softmax(s) @ v) @ wo

@cv.optimize(signatures=["f32[B,1,16], f32[16,16], f32[16,16], f32[16,16], f32[16,16]"])
def attention_one_token(x, wq, wk, wv, wo):
    q, k, v = split_heads(x @ wq), split_heads(x @ wk), split_heads(x @ wv)
    s = q @ k.transpose(0, 1, 3, 2) * (1.0 / q.shape[-1] ** 0.5)
    return merge_heads(softmax(s) @ v) @ wo

@cv.optimize(signatures=["f32[B,3,1,E], f32[3E,5]"])
def merge_one_token(a, w):
    return a.transpose(0, 2, 1, 3).reshape(a.shape[0], 1, 3 * a.shape[3]) @ w

@cv.optimize(signatures=["f32[B,1,N]"])
def unit_axis_moved(x):
    return np.tanh(x.transpose(1, 0, 2)) * 2.0

@cv.optimize(signatures=["f32[B,1,N]"])
def axes_reversed(x):
    return x.transpose(2, 1, 0) + 1.0

@cv.optimize(signatures=["f32[B,T,12]"])
def split_then_math(x):
    return np.tanh(x.reshape(x.shape[0], x.shape[1], 3, 4)) * 2.0

@cv.optimize(signatures=["f32[B,C,T,E], f32[B,C,S,E]"])
def scores(q, k):
    return q @ k.transpose(0, 1, 3, 2)

@cv.optimize(signatures=["f32[B,1,D], f32[D], f32[D]"])
def unit_axis_layer_norm(x, g, b):
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(var + 1e-5) * g + b
'''

dims = st.integers(0, 5)


def _fused(module, name: str):
    _, _, functions = pipeline.compile_ir(module, pipeline.Options())
    return functions[name][0][1]


@settings(max_examples=12, deadline=None)
@given(b=dims, t=dims, seed=st.integers(0, 2**32 - 1))
def test_attention_heads(compiled, b, t, seed):
    rng = np.random.default_rng(seed)
    for dtype, d in ((np.float32, 16), (np.float64, 8)):
        x = rng.standard_normal((b, t, d)).astype(dtype)
        ws = [rng.standard_normal((d, d)).astype(dtype) for _ in range(4)]
        check(compiled.attention, x, *ws, scale=4)


@settings(max_examples=10, deadline=None)
@given(b=dims, t=dims, seed=st.integers(0, 2**32 - 1))
def test_split_reshape_of_a_parameter(compiled, b, t, seed):
    x = np.random.default_rng(seed).standard_normal((b, t, 12)).astype(np.float32)
    check(compiled.split_then_math, x)
    check(compiled.split_then_math, x[:, ::-1])  # a strided argument: the split is a view


@settings(max_examples=10, deadline=None)
@given(b=dims, c=dims, t=dims, s=dims, e=dims, seed=st.integers(0, 2**32 - 1))
def test_transposed_batched_operand(compiled, b, c, t, s, e, seed):
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((b, c, t, e)).astype(np.float32)
    k = rng.standard_normal((b, c, s, e)).astype(np.float32)
    check(compiled.scores, q, k, scale=4)


@settings(max_examples=10, deadline=None)
@given(b=dims, d=st.integers(1, 40), seed=st.integers(0, 2**32 - 1))
def test_row_over_a_unit_axis(compiled, b, d, seed):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal((b, 1, d)) * 3 + 1).astype(np.float32)
    check(compiled.unit_axis_layer_norm, x, rng.standard_normal(d).astype(np.float32),
          rng.standard_normal(d).astype(np.float32), scale=10)


@settings(max_examples=10, deadline=None)
@given(b=dims, e=st.integers(0, 9), n=dims, seed=st.integers(0, 2**32 - 1))
def test_permutations_of_unit_axes(compiled, b, e, n, seed):
    """A transpose that moves only axes of size 1 is a reshape (canonicalize): the heads
    of one token merged for a matmul, a unit axis moved to the front; and one that
    reorders the others stays a transpose. Contiguous and strided arguments."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((b, 1, 16)).astype(np.float32)
    ws = [rng.standard_normal((16, 16)).astype(np.float32) for _ in range(4)]
    check(compiled.attention_one_token, x, *ws, scale=4)
    a = rng.standard_normal((b, 3, 1, e)).astype(np.float32)
    w = rng.standard_normal((3 * e, 5)).astype(np.float32)
    check(compiled.merge_one_token, a, w, scale=4)
    check(compiled.merge_one_token, a[:, ::-1], w, scale=4)  # heads reversed: strided
    y = rng.standard_normal((b, 1, n)).astype(np.float32)
    for f in (compiled.unit_axis_moved, compiled.axes_reversed):
        check(f, y)
        check(f, y[::-1, :, ::2])


def test_one_token_heads_merge_without_a_copy(compiled):
    """The merge of (B, 3, 1, E) heads into (B, 1, 3E) rows is a reshape: the matmul reads
    the argument (or the attention's own buffer) in place, where a copy kernel ran."""
    assert [g.kind for g in _fused(compiled, "merge_one_token").groups] == [Kind.GEMM]
    kinds = [g.kind for g in _fused(compiled, "attention_one_token").groups]
    assert len(kinds) == 7, kinds  # 6 GEMMs and the softmax: no head split or merge copied


def test_heads_cost_one_copy_each(compiled):
    """Per head split one stored copy (the GEMM's rows regrouped by head), the scores and
    the softmax read in place, one copy to merge the heads for the output projection:
    6 GEMMs + 3 + 1 + 1 = 11 kernels, where copying each reshape and transpose took 16."""
    fn = _fused(compiled, "attention")
    kinds = [g.kind for g in fn.groups]
    assert kinds.count(Kind.GEMM) == 6
    assert kinds.count(Kind.ROW) == 1
    assert len(kinds) == 11, kinds


def test_transposed_operand_is_not_copied(compiled):
    """The GEMM reads q and k in place; its (B*C, T, S) result is copied into the (B, C,
    T, S) output (a store into the output viewed as the GEMM's shape would save that)."""
    fn = _fused(compiled, "scores")
    assert [g.kind for g in fn.groups] == [Kind.GEMM, Kind.ELEMENTWISE]
    assert [d.buffer for d in fn.groups[1].dests] == list(fn.outputs)


def test_unit_axis_layer_norm_is_one_row_kernel(compiled):
    assert [g.kind for g in _fused(compiled, "unit_axis_layer_norm").groups] == [Kind.ROW]
