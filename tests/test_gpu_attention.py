"""Fused attention on a real device (issue 23; codegen/attention_match.py, cuda_attention.h):
softmax(q @ k.T * c + mask) @ v in one kernel against NumPy in float64 of the same code.
Padding masks (-10000, -inf: rows whose every score is -inf are NaN, as NumPy's), causal
masks, T = 1 and odd T and S, decode (one query against S keys), head dims 8/32/64/80/96/128
and 160 (over the kernel's 128: the three kernels of before run), BERT's 12 heads at 128
tokens, T = S = 4096 once, Q/K/V as strided views (heads split by transpose; a column
stride, an unaligned base and odd row strides: the 4-byte copies), the heads split and
merged inside the function,
grouped-query attention (K/V heads repeated by repeat_kv or np.repeat: K and V read at head
h / n, never copied), and the bench models (bert_layer, gpt2_block, gpt2_decode) at small
sizes. Under
precision="bf16" (bfloat16 heads, one TF32 product each: cuda_attention_tc.h), BERT's
padding mask and GPT-2's causal one, the latter's output rounded to bfloat16 for a matmul.
All of it with the key split (CUVIL_AOT_CUDA_ATTENTION_SPLIT) off and on.

Run on a machine with an NVIDIA GPU (tools/gpu_check.sh, or
``pytest -m gpu tests/test_gpu_attention.py``); skipped elsewhere."""

from __future__ import annotations

import zlib
from pathlib import Path

import numpy as np
import pytest
from conftest import compile_source
from gpu_harness import device_arch, kernels_launched, knob

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parent.parent

SOURCE = '''
import numpy as np
import cuvil_aot as cv

def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)

Q = "f32[B,H,T,D], f32[B,H,S,D], f32[B,H,S,D]"

@cv.optimize(signatures=[Q + ", f32[B,1,1,S]"])
def padded(q, k, v, bias):
    scores = q @ k.transpose(0, 1, 3, 2) * (1.0 / q.shape[-1] ** 0.5) + bias
    return softmax(scores) @ v

@cv.optimize(signatures=["f32[B,H,T,64], f32[B,H,S,64], f32[B,H,S,64], f32[B,1,1,S]"])
def padded64(q, k, v, bias):
    return softmax(q @ k.transpose(0, 1, 3, 2) * 0.125 + bias) @ v

@cv.optimize(signatures=["f32[B,H,T,32], f32[B,H,S,32], f32[B,H,S,80], f32[T,S]"])
def narrow_keys(q, k, v, mask):
    return softmax(q @ k.transpose(0, 1, 3, 2) * 0.1 + mask) @ v

@cv.optimize(signatures=[Q + ", f32[T,S]"])
def masked(q, k, v, mask):
    return softmax(q @ k.transpose(0, 1, 3, 2) * 0.125 + mask) @ v

@cv.optimize(signatures=[Q])
def plain(q, k, v):
    s = q @ k.transpose(0, 1, 3, 2) * 0.125
    return np.exp(s - s.max(axis=-1, keepdims=True)) / np.sum(
        np.exp(s - s.max(axis=-1, keepdims=True)), axis=-1, keepdims=True) @ v

@cv.optimize(signatures=["f32[B,T,768], f32[B,T,768], f32[B,T,768]"])
def causal_heads(x, y, z):
    b, t, _ = x.shape
    q = x.reshape(b, t, 12, 64).transpose(0, 2, 1, 3)
    k = y.reshape(b, t, 12, 64).transpose(0, 2, 1, 3)
    v = z.reshape(b, t, 12, 64).transpose(0, 2, 1, 3)
    causal = np.triu(np.full((t, t), -1e9, dtype=np.float32), k=1)
    s = q @ k.transpose(0, 1, 3, 2) * 0.125 + causal
    return (softmax(s) @ v).transpose(0, 2, 1, 3).reshape(b, t, 768)

@cv.optimize(signatures=["f32[B,H,T,E], f32[B,H,S,E], f32[B,H,S,D]"])
def two_head_dims(q, k, v):
    return softmax(q @ k.transpose(0, 1, 3, 2) * 0.1) @ v

@cv.optimize(signatures=[Q])
def merged_and_raw(q, k, v):
    o = softmax(q @ k.transpose(0, 1, 3, 2)) @ v
    return o.transpose(0, 2, 1, 3).reshape(q.shape[0], q.shape[2], -1), o

@cv.optimize(signatures=["f32[Z,T,D], f32[Z,S,D], f32[Z,S,D], f32[Z,1,S]"])
def batched(q, k, v, mask):
    return softmax(q @ k.transpose(0, 2, 1) * 0.125 + mask) @ v

@cv.optimize(signatures=["f32[Z,T,E], f32[Z,S,E], f32[Z,S,D], f32[Z,1,S]"])
def batched_dims(q, k, v, mask):
    return softmax(q @ k.transpose(0, 2, 1) * 0.125 + mask) @ v

@cv.optimize(signatures=[Q])
def two_in_a_row(q, k, v):
    o = softmax(q @ k.transpose(0, 1, 3, 2) * 0.125) @ v
    return softmax(o @ k.transpose(0, 1, 3, 2) * 0.125) @ v

@cv.optimize(signatures=["f32[T,D], f32[S,D], f32[S,D]"])
def single_head(q, k, v):
    return softmax(q @ k.T) @ v

def repeat_kv(x, n_rep):
    b, kv, s, d = x.shape
    x = np.broadcast_to(x[:, :, None, :, :], (b, kv, n_rep, s, d))
    return x.reshape(b, kv * n_rep, s, d)

@cv.optimize(signatures=["f32[B,H,T,D], f32[B,KV,S,D], f32[B,KV,S,D], f32[B,1,1,S]"])
def grouped(q, k, v, bias):
    n = q.shape[1] // k.shape[1]
    s = q @ repeat_kv(k, n).transpose(0, 1, 3, 2) * q.shape[-1] ** -0.5 + bias
    return softmax(s) @ repeat_kv(v, n)

@cv.optimize(signatures=["f32[B,T,512], f32[B,T,128], f32[B,T,128]"])
def grouped_causal_heads(x, y, z):
    b, t, _ = x.shape
    q = x.reshape(b, t, 8, 64).transpose(0, 2, 1, 3)
    k = y.reshape(b, t, 2, 64).transpose(0, 2, 1, 3)
    v = z.reshape(b, t, 2, 64).transpose(0, 2, 1, 3)
    causal = np.triu(np.full((t, t), -1e9, dtype=np.float32), k=1)
    s = q @ np.repeat(k, 4, axis=1).transpose(0, 1, 3, 2) * 0.125 + causal
    return (softmax(s) @ np.repeat(v, 4, axis=1)).transpose(0, 2, 1, 3).reshape(b, t, 512)

def heads(x):
    b, t, _ = x.shape
    return x.reshape(b, t, 12, 64).transpose(0, 2, 1, 3)

@cv.optimize(signatures=["f32[B,T,768], f32[B,T,768], f32[B,T,768], f32[B,T]"],
             precision="bf16")
def padded_bf16(x, y, z, mask):
    b, t, _ = x.shape
    bias = (1.0 - mask[:, None, None, :]) * -10000.0
    s = heads(x) @ heads(y).transpose(0, 1, 3, 2) * 0.125 + bias
    return (softmax(s) @ heads(z)).transpose(0, 2, 1, 3).reshape(b, t, 768)

@cv.optimize(signatures=["f32[B,T,768], f32[B,T,768], f32[B,T,768], f32[768,768]"],
             precision="bf16")
def causal_bf16(x, y, z, w):
    b, t, _ = x.shape
    causal = np.triu(np.full((t, t), -1e9, dtype=np.float32), k=1)
    s = heads(x) @ heads(y).transpose(0, 1, 3, 2) * 0.125 + causal
    return (softmax(s) @ heads(z)).transpose(0, 2, 1, 3).reshape(b, t, 768) @ w
'''


@pytest.fixture(scope="module", autouse=True, params=[False, True], ids=["rows64", "split"])
def attention_split(request):
    """Every test with CUVIL_AOT_CUDA_ATTENTION_SPLIT off and on: where the blocks are few
    (most shapes here), the split entry (_s) then runs."""
    with knob("cuda_attention_split", request.param) as on:
        yield on


@pytest.fixture(scope="module")
def attn(tmp_path_factory):
    return compile_source(tmp_path_factory.mktemp("attn"), SOURCE, cuda_archs=(device_arch(),))


def _close(got: np.ndarray, ref: np.ndarray, tol: float = 2e-5) -> None:
    """NaN where NumPy has NaN; elsewhere within ``tol`` of the largest |ref|."""
    assert got.shape == ref.shape
    nan = np.isnan(ref)
    np.testing.assert_array_equal(np.isnan(got), nan)
    if nan.all():
        return
    scale = np.abs(ref[~nan]).max() or 1.0
    err = np.abs(got[~nan] - ref[~nan]).max() / scale
    assert err < tol, f"max |got - ref| / max |ref| = {err:.3g}"


def _run(fn, args: list[np.ndarray], views: list | None = None, tol: float = 2e-5) -> None:
    """fn on device copies of ``args`` (or the device ``views`` of them) into a poisoned
    out=, against its Python function on float64 copies."""
    import torch

    with np.errstate(invalid="ignore"):  # NumPy's NaN rows (-inf - -inf)
        ref = fn.py_func(*[a.astype(np.float64) for a in args])
    dev = views if views is not None else [torch.from_numpy(a).cuda() for a in args]
    out = torch.full(ref.shape, float("nan"), dtype=torch.float32, device="cuda")
    assert fn(*dev, out=out) is out
    _close(out.cpu().numpy(), ref, tol)


def _qkv(rng, b, h, t, s, d, scale=1.0):
    return [(rng.standard_normal(shape) * scale).astype(np.float32)
            for shape in ((b, h, t, d), (b, h, s, d), (b, h, s, d))]


def _padding(rng, b, s, value=-10000.0):
    keep = rng.random((b, 1, 1, s)) < 0.7
    keep[..., 0] = True
    return np.where(keep, 0.0, value).astype(np.float32)


SHAPES = [(2, 3, 1, 1, 64), (2, 3, 7, 7, 64), (1, 2, 129, 129, 64), (1, 2, 1000, 1000, 64),
          (2, 2, 1, 1000, 64), (2, 12, 33, 33, 32), (2, 4, 65, 47, 80), (1, 2, 70, 129, 160),
          (4, 12, 128, 128, 64), (2, 3, 97, 63, 128), (1, 2, 64, 17, 96), (3, 2, 31, 200, 8),
          (2, 12, 3, 300, 64), (3, 4, 4, 40, 32)]  # decode rows: cuda_attention_decode.h


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_padding_mask(attn, shape):
    rng = np.random.default_rng(zlib.crc32(f"pad {shape}".encode()))
    b, h, t, s, d = shape
    _run(attn.padded, [*_qkv(rng, b, h, t, s, d), _padding(rng, b, s)])


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_causal_mask_argument(attn, shape):
    """A (T, S) causal mask: query i sees keys up to i + max(S - T, 0) (decode: every key;
    no row all -1e9, whose float32 scores round to one value where float64's differ)."""
    rng = np.random.default_rng(zlib.crc32(f"causal {shape}".encode()))
    b, h, t, s, d = shape
    mask = np.triu(np.full((t, s), -1e9, np.float32), k=max(s - t, 0) + 1)
    _run(attn.masked, [*_qkv(rng, b, h, t, s, d), mask])


@pytest.mark.parametrize("bts", [(2, 7, 7), (32, 128, 128), (1, 129, 200), (3, 65, 31)])
def test_static_head_dims(attn, bts):
    """Head dims the code generator knows: the kernel built for 64 columns (the models'),
    and for 32 and 96 (Q/K 32, V 80), not the 128 of a symbolic D."""
    rng = np.random.default_rng(zlib.crc32(f"static {bts}".encode()))
    b, t, s = bts
    _run(attn.padded64, [*_qkv(rng, b, 12, t, s, 64), _padding(rng, b, s)])
    q, k = (rng.standard_normal((b, 2, n, 32)).astype(np.float32) for n in (t, s))
    v = rng.standard_normal((b, 2, s, 80)).astype(np.float32)
    mask = np.triu(np.full((t, s), -1e9, np.float32), k=max(s - t, 0) + 1)
    _run(attn.narrow_keys, [q, k, v, mask])


@pytest.mark.parametrize("shape", [(1, 1, 5, 9, 64), (2, 3, 40, 33, 32)])
def test_plain_and_big_scores(attn, shape):
    rng = np.random.default_rng(zlib.crc32(f"plain {shape}".encode()))
    b, h, t, s, d = shape
    _run(attn.plain, _qkv(rng, b, h, t, s, d, scale=3.0))  # peaked rows: exp's range


@pytest.mark.parametrize("de", [(64, 32), (16, 128), (100, 20), (64, 130), (128, 32), (80, 128)])
def test_query_and_value_head_dims_differ(attn, de):
    rng = np.random.default_rng(zlib.crc32(f"dims {de}".encode()))
    d, e = de
    q, k = (rng.standard_normal((2, 3, n, e)).astype(np.float32) for n in (9, 45))
    _run(attn.two_head_dims, [q, k, rng.standard_normal((2, 3, 45, d)).astype(np.float32)])


def test_rows_all_minus_inf_are_nan_as_in_numpy(attn):
    rng = np.random.default_rng(5)
    b, h, t, s, d = 3, 2, 9, 70, 64
    bias = _padding(rng, b, s, value=-np.inf)
    bias[1] = -np.inf  # every key of batch 1 masked: NaN rows
    bias[2, ..., :40] = -np.inf  # the first tiles of keys all masked: finite rows
    bias[2, ..., 40:] = 0.0
    _run(attn.padded, [*_qkv(rng, b, h, t, s, d), bias])
    mask = np.zeros((t, s), np.float32)
    mask[3] = -np.inf  # one query row fully masked
    _run(attn.masked, [*_qkv(rng, b, h, t, s, d), mask])


def test_strided_views(attn):
    """Q, K, V as heads split by a transpose of (B, T, H, D) storage, and a padded V."""
    import torch

    rng = np.random.default_rng(7)
    b, h, t, s, d = 2, 4, 50, 61, 64
    q, k, v = _qkv(rng, b, h, t, s, d)
    bias = _padding(rng, b, s)
    views = [torch.from_numpy(np.ascontiguousarray(a.transpose(0, 2, 1, 3))).cuda()
             .permute(0, 2, 1, 3) for a in (q, k)]
    vpad = torch.zeros((b, h, s, d + 4), device="cuda")
    vpad[..., :d] = torch.from_numpy(v).cuda()
    _run(attn.padded, [q, k, v, bias], [*views, vpad[..., :d], torch.from_numpy(bias).cuda()])


def test_unaligned_and_column_strided_operands(attn):
    """Operands the kernel cannot read in 16-byte chunks (4-byte copies instead): K with a
    column stride (a transposed view), Q one element off 16-byte alignment, V rows of an
    odd stride."""
    import torch

    rng = np.random.default_rng(8)
    b, h, t, s, d = 2, 3, 45, 77, 64
    q, k, v = _qkv(rng, b, h, t, s, d)
    bias = _padding(rng, b, s)
    qbuf = torch.zeros(q.size + 1, device="cuda")
    qbuf[1:] = torch.from_numpy(q).cuda().reshape(-1)
    kt = torch.from_numpy(np.ascontiguousarray(k.transpose(0, 1, 3, 2))).cuda()
    vodd = torch.zeros((b, h, s, d + 3), device="cuda")
    vodd[..., :d] = torch.from_numpy(v).cuda()
    views = [qbuf[1:].reshape(q.shape), kt.transpose(2, 3), vodd[..., :d],
             torch.from_numpy(bias).cuda()]
    _run(attn.padded, [q, k, v, bias], views)


def test_long_sequence_4096(attn):
    rng = np.random.default_rng(4096)
    b, h, t, s, d = 1, 2, 4096, 4096, 64
    mask = np.triu(np.full((t, s), -1e9, np.float32), k=1)
    _run(attn.masked, [*_qkv(rng, b, h, t, s, d), mask])


@pytest.mark.parametrize("t", [1, 7, 129])
def test_heads_split_and_merged_in_the_function(attn, t):
    rng = np.random.default_rng(t)
    _run(attn.causal_heads, [rng.standard_normal((2, t, 768)).astype(np.float32)
                             for _ in range(3)])


@pytest.mark.parametrize("ts", [(1, 1), (7, 1000), (129, 33)])
def test_single_head(attn, ts):
    rng = np.random.default_rng(zlib.crc32(f"one {ts}".encode()))
    t, s = ts
    _run(attn.single_head, [rng.standard_normal(shape).astype(np.float32)
                            for shape in ((t, 80), (s, 80), (s, 80))])


@pytest.mark.parametrize("zts", [(1, 1, 1), (24, 1, 300), (5, 77, 64)])
def test_scale_and_mask_in_the_first_gemms_epilogue(attn, zts):
    """3-D batches: fusion puts ``* c + mask`` into the first matmul's epilogue."""
    rng = np.random.default_rng(zlib.crc32(f"batched {zts}".encode()))
    z, t, s = zts
    q, k, v = (rng.standard_normal((z, n, 64)).astype(np.float32) for n in (t, s, s))
    mask = np.where(rng.random((z, 1, s)) < 0.3, -np.inf, 0.0).astype(np.float32)
    mask[..., -1] = 0.0
    _run(attn.batched, [q, k, v, mask])


@pytest.mark.parametrize("es", [(160, 50), (64, 300)])
def test_query_head_dim_checked_not_the_keys(attn, es):
    """3-D batches (the scale and mask in the first GEMM's epilogue, whose last axis is S):
    Q/K's head dim 160 with V's 64 and 50 keys runs the three kernels, 64 with 300 keys the
    fused one (the host checks Q's head dim, not the number of keys)."""
    rng = np.random.default_rng(es[0] + es[1])
    e, s = es
    q, k = (rng.standard_normal((3, n, e)).astype(np.float32) for n in (20, s))
    v = rng.standard_normal((3, s, 64)).astype(np.float32)
    _run(attn.batched_dims, [q, k, v, np.zeros((3, 1, s), np.float32)])


@pytest.mark.parametrize("d", [8, 64, 100])
def test_symbolic_head_dims_pick_their_build(attn, d):
    """D known at run time: the build for head dims up to 64 where D fits, else 128's."""
    rng = np.random.default_rng(d)
    _run(attn.padded, [*_qkv(rng, 2, 3, 70, 90, d), _padding(rng, 2, 90)])


def test_two_attentions_in_one_call(attn):
    rng = np.random.default_rng(2)
    _run(attn.two_in_a_row, _qkv(rng, 2, 3, 30, 45, 64))


@pytest.fixture(params=[True, False], ids=["grouped", "per_kv_head"])
def grouped_on(request):
    """CUVIL_AOT_CUDA_ATTENTION_GROUPED on (the fused kernel over B·H heads) and off (the
    matmuls per K/V head and the softmax)."""
    with knob("cuda_attention_grouped", request.param) as on:
        yield on


@pytest.mark.parametrize("shape", [(2, 2, 4, 7, 7, 64), (1, 2, 4, 129, 129, 64),
                                   (2, 1, 8, 33, 70, 32), (1, 4, 2, 1000, 1000, 64),
                                   (3, 2, 3, 1, 50, 64), (2, 3, 2, 65, 47, 80)],
                         ids=lambda s: "x".join(map(str, s)))
def test_grouped_query_heads(attn, shape, grouped_on):
    """K/V heads repeated for n query heads each (passes/grouped_query.py): the kernel runs
    over B·H heads reading K and V at head h / n (Match.grouped) where allowed; one query
    row fused only by the decode entry (head dims up to FEW_DMAX)."""
    import torch

    from cuvil_aot.compiler.codegen.cuda_attention import FEW_DMAX

    b, kv, n, t, s, d = shape
    rng = np.random.default_rng(zlib.crc32(f"grouped {shape}".encode()))
    q = rng.standard_normal((b, kv * n, t, d)).astype(np.float32)
    k, v = (rng.standard_normal((b, kv, s, d)).astype(np.float32) for _ in "kv")
    args = [q, k, v, _padding(rng, b, s)]
    _run(attn.grouped, args)
    dev = [torch.from_numpy(a).cuda() for a in args]
    kernels = kernels_launched(lambda: attn.grouped(*dev))
    if kernels:
        fused = grouped_on and (t > 1 or d <= FEW_DMAX)
        assert any("_a0" in name for name in kernels) == fused, kernels


@pytest.mark.parametrize("bt", [(1, 7), (2, 128), (1, 300)])
def test_grouped_query_causal_heads_split_in_the_function(attn, bt, grouped_on):
    b, t = bt
    rng = np.random.default_rng(b * 1000 + t)
    _run(attn.grouped_causal_heads, [rng.standard_normal((b, t, e)).astype(np.float32)
                                     for e in (512, 128, 128)])


def test_output_merged_and_returned(attn):
    """The output both returned and merged: the epilogue's store, then the merge kernel."""
    import torch

    rng = np.random.default_rng(3)
    args = _qkv(rng, 2, 3, 17, 20, 32)
    ref = attn.merged_and_raw.py_func(*[a.astype(np.float64) for a in args])
    got = attn.merged_and_raw(*[torch.from_numpy(a).cuda() for a in args])
    for g, r in zip(got, ref):
        _close(g.cpu().numpy(), r)


# The bench models ----------------------------------------------------------------------

@pytest.fixture(scope="module")
def models(tmp_path_factory):
    text = (ROOT / "bench" / "transformer_models.py").read_text()
    return compile_source(tmp_path_factory.mktemp("models"), text, cuda_archs=(device_arch(),))


def _weights(rng, shapes):
    """Weights of scale 0.1 (0.02 leaves every softmax row nearly uniform); gains near 1."""
    return [(rng.standard_normal(shape) * 0.1 + (1.0 if gain else 0.0)).astype(np.float32)
            for shape, gain in shapes]


H, FF = 768, 3072
BERT = [((H, H), 0), ((H,), 0)] * 4 + [((H,), 1), ((H,), 0), ((FF, H), 0), ((FF,), 0),
                                       ((H, FF), 0), ((H,), 0), ((H,), 1), ((H,), 0)]
GPT2 = [((H,), 1), ((H,), 0), ((H, 3 * H), 0), ((3 * H,), 0), ((H, H), 0), ((H,), 0),
        ((H,), 1), ((H,), 0), ((H, FF), 0), ((FF,), 0), ((FF, H), 0), ((H,), 0)]


@pytest.mark.parametrize("bt", [(2, 7), (1, 33)])
def test_bert_layer(models, bt):
    rng = np.random.default_rng(zlib.crc32(f"bert {bt}".encode()))
    b, t = bt
    mask = np.ones((b, t), np.float32)
    mask[0, t - t // 3:] = 0
    x = rng.standard_normal((b, t, H)).astype(np.float32)
    _run(models.bert_layer, [x, mask, *_weights(rng, BERT)], tol=1e-4)


@pytest.mark.parametrize("bt", [(2, 7), (1, 40)])
def test_gpt2_block(models, bt):
    rng = np.random.default_rng(zlib.crc32(f"gpt2 {bt}".encode()))
    x = rng.standard_normal((*bt, H)).astype(np.float32)
    _run(models.gpt2_block, [x, *_weights(rng, GPT2)], tol=1e-4)


def test_gpt2_decode(models):
    import torch

    rng = np.random.default_rng(11)
    b, p = 2, 37
    args = [rng.standard_normal((b, 1, H)).astype(np.float32),
            *(rng.standard_normal((b, 12, p, 64)).astype(np.float32) for _ in range(2)),
            *_weights(rng, GPT2)]
    ref = models.gpt2_decode.py_func(*[a.astype(np.float64) for a in args])
    got = models.gpt2_decode(*[torch.from_numpy(a).cuda() for a in args])
    for g, r in zip(got, ref):
        _close(g.cpu().numpy(), r, 1e-4)


def test_gpt2_decode_inplace(models):
    """K and V: run-time slices (positions 0..t) of caches the call writes first."""
    import torch

    rng = np.random.default_rng(12)
    b, s, t = 2, 50, 37
    x = rng.standard_normal((b, 1, H)).astype(np.float32)
    caches = [rng.standard_normal((b, 12, s, 64)).astype(np.float32) for _ in range(2)]
    weights = _weights(rng, GPT2)
    dev = [torch.from_numpy(c).cuda() for c in caches]
    ref_caches = [c.astype(np.float64) for c in caches]
    ref = models.gpt2_decode_inplace.py_func(x.astype(np.float64), *ref_caches, t,
                                             *[w.astype(np.float64) for w in weights])
    got = models.gpt2_decode_inplace(torch.from_numpy(x).cuda(), *dev, t,
                                     *[torch.from_numpy(w).cuda() for w in weights])
    _close(got.cpu().numpy(), ref, 1e-4)
    for d, r in zip(dev, ref_caches):
        _close(d.cpu().numpy(), r, 1e-4)


# precision="bf16" ------------------------------------------------------------------------

U = 2.0 ** -8  # bfloat16's unit roundoff: the policy's bound per rounded matmul input


def _bf16(a: np.ndarray) -> np.ndarray:
    """a rounded to bfloat16 (to nearest even; finite values), as float64."""
    u = a.astype(np.float32).view(np.uint32).astype(np.uint64)
    u = ((u + 0x7FFF + ((u >> 16) & 1)) & 0xFFFF0000).astype(np.uint32)
    return u.view(np.float32).astype(np.float64)


def _heads(x: np.ndarray) -> np.ndarray:
    b, t, _ = x.shape
    return x.reshape(b, t, 12, 64).transpose(0, 2, 1, 3)


def _merged(x: np.ndarray) -> np.ndarray:
    b, _, t, _ = x.shape
    return x.transpose(0, 2, 1, 3).reshape(b, t, 768)


def _attention64(q, k, v, bias) -> tuple[np.ndarray, np.ndarray]:
    """softmax(q k^T / 8 + bias) v in float64, heads merged, and sum(p |v|) / sum(p) (the
    scale of the error P's rounding makes)."""
    s = q @ k.transpose(0, 1, 3, 2) * 0.125 + bias
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    p /= p.sum(axis=-1, keepdims=True)
    return _merged(p @ v), _merged(p @ np.abs(v))


def _attention_bound(q, k, mag) -> np.ndarray:
    """The fused kernel's error against float64 of the policy's operands: P rounded to
    bfloat16 (U: the bf16 kernel, cv_attention_bf16), each probability off by twice its
    score's float32 error (exact products of bfloat16 values summed in float32) relative."""
    scores = 4 * 64 * 2.0 ** -24 * 0.125 * (np.abs(q) @ np.abs(k).transpose(0, 1, 3, 2))
    return (U + 4 * scores.max()) * mag + 1e-6


def _run_bf16(fn, args: list[np.ndarray], t: int) -> np.ndarray:
    """fn on the device into a poisoned out=, its result in float64; the fused kernel ran
    where the profiler sees the launches and there is more than one query row."""
    import torch

    out = torch.full((args[0].shape[0], t, 768), float("nan"), dtype=torch.float32,
                     device="cuda")
    dev = [torch.from_numpy(a).cuda() for a in args]
    kernels = kernels_launched(lambda: fn(*dev, out=out))
    if kernels and t > 1:
        assert any(name.endswith("_a0") for name in kernels), kernels
    got = out.cpu().numpy().astype(np.float64)
    assert np.isfinite(got).all()
    return got


@pytest.mark.parametrize("bt", [(2, 7), (4, 128), (1, 129), (3, 1)])
def test_bf16_policy_padding_mask(attn, bt):
    """BERT's attention under precision="bf16": against float64 of the bfloat16 heads."""
    rng = np.random.default_rng(zlib.crc32(f"bf16 pad {bt}".encode()))
    b, t = bt
    x, y, z = (rng.standard_normal((b, t, 768)).astype(np.float32) for _ in range(3))
    mask = np.ones((b, t), np.float32)
    mask[0, t - t // 3:] = 0
    got = _run_bf16(attn.padded_bf16, [x, y, z, mask], t)
    q, k, v = (_heads(_bf16(a)) for a in (x, y, z))
    want, mag = _attention64(q, k, v, (1.0 - mask[:, None, None, :]) * -10000.0)
    np.testing.assert_array_less(np.abs(got - want), _attention_bound(q, k, mag))


@pytest.mark.parametrize("bt", [(2, 7), (2, 128), (1, 200)])
def test_bf16_policy_causal_then_a_matmul(attn, bt):
    """GPT-2's causal attention under precision="bf16", its merged output rounded to
    bfloat16 by the kernel's store (the next matmul's operand): against float64 of the
    bfloat16 heads and weight, with the output's rounding and the projection's float32
    sums on top of the attention's bound."""
    rng = np.random.default_rng(zlib.crc32(f"bf16 causal {bt}".encode()))
    b, t = bt
    x, y, z = (rng.standard_normal((b, t, 768)).astype(np.float32) for _ in range(3))
    w = (rng.standard_normal((768, 768)) * 0.05).astype(np.float32)
    got = _run_bf16(attn.causal_bf16, [x, y, z, w], t)
    q, k, v = (_heads(_bf16(a)) for a in (x, y, z))
    o, mag = _attention64(q, k, v, np.triu(np.full((t, t), -1e9), k=1))
    e = _attention_bound(q, k, mag)
    rw = np.abs(_bf16(w))
    bound = ((1 + U) * e + U * np.abs(o)) @ rw + 4 * 768 * 2.0 ** -24 * ((np.abs(o) + e) @ rw)
    np.testing.assert_array_less(np.abs(got - o @ _bf16(w)), bound + 1e-6)
