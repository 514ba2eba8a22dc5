"""Whole models written as classes the way users port them: nanoGPT's GPT-2 block,
PyTorch-style modules (``__call__`` forwarding to ``forward``, ``Sequential``), and a BERT
layer in Hugging Face's layout; each checked against its Python method on float64 copies
(test_methods.check), outputs poisoned."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import assert_close, compile_source
from hypothesis import given, settings
from hypothesis import strategies as st
from test_elementwise import view_of
from test_methods import check, weights

import cuvil_aot as cv

GPT = '''
import numpy as np
import cuvil_aot as cv


class Linear:
    w: cv.f32["I", "O"]
    b: cv.f32["O"]

    def __init__(self, w, b):
        self.w, self.b = w, b

    def __call__(self, x):
        return x @ self.w + self.b


class LayerNorm:
    g: cv.f32["D"]
    b: cv.f32["D"]
    eps = 1e-5

    def __init__(self, g, b):
        self.g, self.b = g, b

    def __call__(self, x):
        mean = np.mean(x, axis=-1, keepdims=True)
        variance = np.var(x, axis=-1, keepdims=True)
        return self.g * (x - mean) / np.sqrt(variance + self.eps) + self.b


def gelu(x):
    return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3)))


def softmax(x):
    e = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return e / np.sum(e, axis=-1, keepdims=True)


class Attention:
    c_attn: Linear
    c_proj: Linear
    n_head: int

    def __init__(self, c_attn, c_proj, n_head):
        self.c_attn, self.c_proj, self.n_head = c_attn, c_proj, n_head

    def __call__(self, x):
        T, C = x.shape
        q, k, v = np.split(self.c_attn(x), 3, axis=-1)
        hs = C // self.n_head
        q = q.reshape(T, self.n_head, hs).transpose(1, 0, 2)
        k = k.reshape(T, self.n_head, hs).transpose(1, 0, 2)
        v = v.reshape(T, self.n_head, hs).transpose(1, 0, 2)
        mask = (1 - np.tri(T, dtype=x.dtype)) * -1e10
        att = softmax(q @ k.transpose(0, 2, 1) / np.sqrt(hs) + mask)
        y = (att @ v).transpose(1, 0, 2).reshape(T, C)
        return self.c_proj(y)


class MLP:
    c_fc: Linear
    c_proj: Linear

    def __init__(self, c_fc, c_proj):
        self.c_fc, self.c_proj = c_fc, c_proj

    def __call__(self, x):
        return self.c_proj(gelu(self.c_fc(x)))


class Block:
    ln_1: LayerNorm
    attn: Attention
    ln_2: LayerNorm
    mlp: MLP

    def __init__(self, ln_1, attn, ln_2, mlp):
        self.ln_1, self.attn, self.ln_2, self.mlp = ln_1, attn, ln_2, mlp

    @cv.optimize
    def __call__(self, x: cv.f32["T", "C"]):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))
'''


@settings(max_examples=10, deadline=None)
@given(data=st.data(), t=st.integers(1, 6), n_head=st.integers(1, 3), hs=st.integers(1, 4))
def test_a_gpt2_block_written_as_classes(tmp_path_factory, data: st.DataObject, t: int,
                                         n_head: int, hs: int) -> None:
    """nanoGPT's layout: Linear, LayerNorm, Attention (``n_head`` an attribute: a run-time
    int in its reshapes), MLP and Block instances, ``np.split`` of the fused projection."""
    if not _GPT:
        _GPT.append(compile_source(tmp_path_factory.mktemp("gpt_classes"), GPT))
    mod, c = _GPT[0], n_head * hs

    def linear(i: int, o: int) -> Any:
        return mod.Linear(weights(data.draw, (i, o)), weights(data.draw, (o,)))

    def norm() -> Any:
        return mod.LayerNorm(1 + weights(data.draw, (c,)), weights(data.draw, (c,)))

    blk = mod.Block(norm(), mod.Attention(linear(c, 3 * c), linear(c, c), n_head), norm(),
                    mod.MLP(linear(c, 4 * c), linear(4 * c, c)))
    x = data.draw(view_of((t, c), "float32", special=False))
    # gelu's np.sqrt: float64 out; two LayerNorms, a softmax and weights drawn up to ~±17
    # whose residual sums cancel: 8.1e-5 of the largest output where 4.0 allowed 8e-5
    # (hypothesis, t=1, hs=3, 2026-12-07; the same on the trees before and after that day)
    check(mod.Block.__call__, blk, x, computed_in=np.float32, scale=8.0)


_GPT: list[Any] = []


MODULES = '''
import numpy as np
import cuvil_aot as cv

class Module:  # PyTorch's layout: calling an instance runs its forward
    def __call__(self, *args, **kwargs):
        return self.forward(*args, **kwargs)

class Linear(Module):
    weight: cv.f32["O", "I"]
    bias: cv.f32["O"]

    def forward(self, x):
        return x @ self.weight.T + self.bias

class GELU(Module):  # declares nothing: an instance whose class is checked
    def forward(self, x):
        return 0.5 * x * (1.0 + np.tanh(0.7978845608 * (x + 0.044715 * x ** 3)))

class Sequential(Module):
    layers: [Linear, GELU, Linear]

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x

class Net(Module):
    mlp: Sequential
    head0: Linear
    head1: Linear
    eps: float
    heads = 2

    @cv.optimize
    def forward(self, x: cv.f32["B", "D"]):
        h = x + self.mlp(x)
        assert isinstance(self, Module) and hasattr(self, "eps")
        h = h / np.sqrt((h * h).mean(-1, keepdims=True) + getattr(self, "eps"))
        return sum(getattr(self, f"head{i}")(h) for i in range(self.heads))
'''


@settings(max_examples=10, deadline=None)
@given(data=st.data(), b=st.integers(0, 3), d=st.integers(1, 5), h=st.integers(1, 6))
def test_pytorch_style_modules(tmp_path_factory, data: st.DataObject, b: int, d: int,
                               h: int) -> None:
    if not _MODULES:
        _MODULES.append(compile_source(tmp_path_factory.mktemp("modules"), MODULES))
    mod = _MODULES[0]

    def linear(i: int, o: int) -> Any:
        layer = mod.Linear()
        layer.weight, layer.bias = weights(data.draw, (o, i)), weights(data.draw, (o,))
        return layer

    net = mod.Net()
    net.mlp = mod.Sequential()
    net.mlp.layers = [linear(d, h), mod.GELU(), linear(h, d)]
    net.head0, net.head1, net.eps = linear(d, 3), linear(d, 3), 1e-3
    check(mod.Net.forward, net, data.draw(view_of((b, d), "float32", special=False)))

    class SubNet(mod.Net):  # the code asked isinstance(self, Module): this class only
        pass
    sub = SubNet()
    sub.__dict__.update(vars(net))
    with pytest.raises(cv.SignatureError, match=r"argument 'self': expected a Net \(that "
                       r"class itself: the compiled code answered isinstance"):
        mod.Net.forward.compiled(sub, np.ones((1, d), np.float32))


_MODULES: list[Any] = []


HF_BERT = '''
import math
import numpy as np
import cuvil_aot as cv


class Linear:
    weight: cv.f32["O", "I"]
    bias: cv.f32["O"]

    def __call__(self, x):
        return x @ self.weight.T + self.bias


class LayerNorm:
    weight: cv.f32["D"]
    bias: cv.f32["D"]
    eps: float

    def __call__(self, x):
        mu = x.mean(-1, keepdims=True)
        var = x.var(-1, keepdims=True)
        return (x - mu) / np.sqrt(var + self.eps) * self.weight + self.bias


class SelfAttention:
    query: Linear
    key: Linear
    value: Linear
    num_heads: int

    def split(self, x):
        b, t, d = x.shape
        return x.reshape(b, t, self.num_heads, d // self.num_heads).transpose(0, 2, 1, 3)

    def __call__(self, x, mask):
        q, k, v = self.split(self.query(x)), self.split(self.key(x)), self.split(self.value(x))
        scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(q.shape[-1])
        scores = scores + (1.0 - mask[:, None, None, :]) * -10000.0
        p = np.exp(scores - scores.max(-1, keepdims=True))
        p = p / p.sum(-1, keepdims=True)
        out = p @ v
        b, h, t, hd = out.shape
        return out.transpose(0, 2, 1, 3).reshape(b, t, h * hd)


class SelfOutput:
    dense: Linear
    LayerNorm: LayerNorm

    def __call__(self, h, x):
        return self.LayerNorm(self.dense(h) + x)


class Attention:
    self: SelfAttention
    output: SelfOutput

    def __call__(self, x, mask):
        return self.output(self.self(x, mask), x)


class Layer:
    attention: Attention
    intermediate: Linear
    output: SelfOutput

    @cv.optimize
    def __call__(self, x: cv.f32["B", "T", "D"], mask: cv.f32["B", "T"]):
        a = self.attention(x, mask)
        h = self.intermediate(a)
        h = 0.5 * h * (1.0 + np.tanh(math.sqrt(2 / math.pi) * (h + 0.044715 * h ** 3)))
        return self.output(h, a)
'''


@pytest.mark.parametrize("b, t, d, heads", [(2, 7, 16, 4), (1, 1, 8, 1), (3, 5, 12, 3)])
def test_a_bert_layer_in_hugging_faces_layout(tmp_path_factory, b: int, t: int, d: int,
                                              heads: int) -> None:
    """Modules named as Hugging Face names them (an attribute called ``self``, another
    ``LayerNorm: LayerNorm``), (out, in) weights, a padding mask."""
    if not _HF:
        _HF.append(compile_source(tmp_path_factory.mktemp("hf_bert"), HF_BERT))
    mod, rng = _HF[0], np.random.default_rng(b * 100 + t)

    def make(cls: str, **attrs: Any) -> Any:
        obj = getattr(mod, cls)()
        for k, v in attrs.items():
            setattr(obj, k, v)
        return obj

    def lin(i: int, o: int) -> Any:
        return make("Linear", weight=(rng.standard_normal((o, i)) / i ** 0.5).astype(np.float32),
                    bias=rng.standard_normal(o).astype(np.float32))

    def norm() -> Any:
        return make("LayerNorm", weight=(1 + rng.standard_normal(d) / 10).astype(np.float32),
                    bias=rng.standard_normal(d).astype(np.float32), eps=1e-5)

    attention = make("Attention", self=make("SelfAttention", query=lin(d, d), key=lin(d, d),
                                            value=lin(d, d), num_heads=heads),
                     output=make("SelfOutput", dense=lin(d, d), LayerNorm=norm()))
    layer = make("Layer", attention=attention, intermediate=lin(d, 4 * d),
                 output=make("SelfOutput", dense=lin(4 * d, d), LayerNorm=norm()))
    mask = np.ones((b, t), np.float32)
    mask[0, t // 2 + 1:] = 0
    check(mod.Layer.__call__, layer, rng.standard_normal((b, t, d)).astype(np.float32), mask)


_HF: list[Any] = []


LLAMA = '''
import math
from typing import Optional

import numpy as np
import cuvil_aot as cv


def rms_norm(x, w, eps):
    return x * (1.0 / np.sqrt(np.mean(x ** 2, axis=-1, keepdims=True) + eps)) * w


def silu(x):
    return x / (1.0 + np.exp(-x))


def rope_tables(T, head_dim, theta, start=0):
    inv_freq = 1.0 / (theta ** (np.arange(0, head_dim, 2, dtype=np.float32) / head_dim))
    t = np.arange(start, start + T, dtype=np.float32)
    freqs = np.outer(t, inv_freq)
    emb = np.concatenate((freqs, freqs), axis=-1)
    return np.cos(emb), np.sin(emb)


def rotate_half(x):
    half = x.shape[-1] // 2
    x1 = x[..., :half]
    x2 = x[..., half:]
    return np.concatenate((-x2, x1), axis=-1)


def repeat_kv(x, n_rep):
    if n_rep == 1:
        return x
    return np.repeat(x, n_rep, axis=1)


class Attention:
    wq: cv.f32["D", "D"]
    wk: cv.f32["KV", "D"]
    wv: cv.f32["KV", "D"]
    wo: cv.f32["D", "D"]
    n_heads: int
    n_kv_heads: int

    def __init__(self, wq, wk, wv, wo, n_heads, n_kv_heads):
        self.wq, self.wk, self.wv, self.wo = wq, wk, wv, wo
        self.n_heads, self.n_kv_heads = n_heads, n_kv_heads

    def forward(self, x, cos, sin, mask: Optional[np.ndarray] = None):
        B, T, D = x.shape
        hd = D // self.n_heads
        q = (x @ self.wq.T).reshape(B, T, self.n_heads, hd).transpose(0, 2, 1, 3)
        k = (x @ self.wk.T).reshape(B, T, self.n_kv_heads, hd).transpose(0, 2, 1, 3)
        v = (x @ self.wv.T).reshape(B, T, self.n_kv_heads, hd).transpose(0, 2, 1, 3)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        k = repeat_kv(k, self.n_heads // self.n_kv_heads)
        v = repeat_kv(v, self.n_heads // self.n_kv_heads)
        scores = np.matmul(q, k.swapaxes(-1, -2)) / math.sqrt(hd)
        if mask is not None:
            scores = scores + mask
        scores = scores - scores.max(axis=-1, keepdims=True)
        p = np.exp(scores)
        p = p / p.sum(axis=-1, keepdims=True)
        out = np.matmul(p, v).transpose(0, 2, 1, 3).reshape(B, T, D)
        return out @ self.wo.T


class MLP:
    w1: cv.f32["H", "D"]
    w2: cv.f32["D", "H"]
    w3: cv.f32["H", "D"]

    def __init__(self, w1, w2, w3):
        self.w1, self.w2, self.w3 = w1, w2, w3

    def forward(self, x):
        return (silu(x @ self.w1.T) * (x @ self.w3.T)) @ self.w2.T


class Block:
    attention: Attention
    feed_forward: MLP
    attention_norm: cv.f32["D"]
    ffn_norm: cv.f32["D"]
    eps = 1e-6

    def __init__(self, attention, feed_forward, attention_norm, ffn_norm):
        self.attention, self.feed_forward = attention, feed_forward
        self.attention_norm, self.ffn_norm = attention_norm, ffn_norm

    @cv.optimize
    def forward(self, x: cv.f32["B", "T", "D"], start_pos: int = 0):
        B, T, D = x.shape
        hd = D // self.attention.n_heads
        cos, sin = rope_tables(T, hd, 10000.0, start_pos)
        mask = None
        if T > 1:
            mask = np.full((T, T), -np.inf, dtype=np.float32)
            mask = np.triu(mask, k=1)
        h = x + self.attention.forward(rms_norm(x, self.attention_norm, self.eps), cos, sin, mask)
        return h + self.feed_forward.forward(rms_norm(h, self.ffn_norm, self.eps))
'''


@settings(max_examples=10, deadline=None)
@given(b=st.integers(1, 2), t=st.integers(1, 5), n_kv=st.integers(1, 2), n_rep=st.integers(1, 2),
       hd=st.sampled_from([2, 4]), start=st.integers(0, 3), seed=st.integers(0, 2**32 - 1))
def test_a_llama_block_prefill_and_decode(tmp_path_factory, b: int, t: int, n_kv: int,
                                          n_rep: int, hd: int, start: int, seed: int) -> None:
    """Meta's LLaMA layout: RMSNorm, rotary tables from the position (``np.arange`` of ints
    the call knows), grouped KV heads (``repeat_kv``'s ``if n_rep == 1: return x``), a
    causal mask only for more than one token (``mask = None; if T > 1: ...``): versions of
    the signature decided by those conditions. Values scaled as a trained model's (a
    softmax of logits in the hundreds rounds as badly in NumPy's float32)."""
    if not _LLAMA:
        _LLAMA.append(compile_source(tmp_path_factory.mktemp("llama"), LLAMA))
    mod, n_heads, rng = _LLAMA[0], n_kv * n_rep, np.random.default_rng(seed)
    d, h = n_heads * hd, 3 * n_heads

    def w(*shape: int) -> np.ndarray:
        return (rng.standard_normal(shape) / shape[-1] ** 0.5).astype(np.float32)

    blk = mod.Block(mod.Attention(w(d, d), w(n_kv * hd, d), w(n_kv * hd, d), w(d, d), n_heads,
                                  n_kv), mod.MLP(w(h, d), w(d, h), w(h, d)), 1 + w(d), 1 + w(d))
    x = rng.standard_normal((b, t, d)).astype(np.float32)
    check(mod.Block.forward, blk, x, start, computed_in=np.float32)


_LLAMA: list[Any] = []


META_LLAMA = (Path(__file__).resolve().parent.parent / "bench" / "meta_llama.py").read_text()


@settings(max_examples=6, deadline=None)
@given(n_kv=st.integers(1, 2), n_rep=st.integers(1, 2), steps=st.lists(st.integers(1, 4),
       min_size=1, max_size=3), seed=st.integers(0, 2**32 - 1))
def test_metas_llama_with_a_kv_cache(tmp_path_factory, n_kv: int, n_rep: int, steps: list[int],
                                     seed: int) -> None:
    """A prompt, then tokens one at a time (or a few), each call writing its keys and values
    into the caches (attributes) at ``start_pos`` and attending to all before: a mask of
    ``np.hstack([np.zeros((T, start_pos)), triu])`` only where T > 1, ``repeat_kv`` by
    ``np.broadcast_to``, rotary pairs by strided slices. Outputs and caches against the
    same calls in float64."""
    if not _META:
        _META.append(compile_source(tmp_path_factory.mktemp("meta_llama"), META_LLAMA))
    mod, rng, hd = _META[0], np.random.default_rng(seed), 4
    d, h, ms = n_kv * n_rep * hd, 24, 12

    def block(dtype: Any) -> Any:
        r = np.random.default_rng(seed)

        def w(*shape: int) -> np.ndarray:
            return (r.standard_normal(shape) / shape[-1] ** 0.5).astype(dtype)

        cache = [np.zeros((2, ms, n_kv, hd), dtype) for _ in range(2)]
        att = mod.Attention(w(d, d), w(n_kv * hd, d), w(n_kv * hd, d), w(d, d), *cache,
                            n_kv * n_rep, n_kv)
        return mod.TransformerBlock(att, mod.FeedForward(w(h, d), w(d, h), w(h, d)),
                                    mod.RMSNorm(1 + w(d)), mod.RMSNorm(1 + w(d)))

    fast, exact = block(np.float32), block(np.float64)
    cos, sin = mod.precompute_freqs(hd, ms)
    pos = 0
    for t in steps:
        x = rng.standard_normal((2, t, d)).astype(np.float32)
        got = fast.forward(x, pos, cos[pos:pos + t], sin[pos:pos + t])
        want = mod.TransformerBlock.forward.py_func(exact, x.astype(np.float64), pos,
                                                    cos[pos:pos + t].astype(np.float64),
                                                    sin[pos:pos + t].astype(np.float64))
        assert_close(got, want, np.float32)
        assert_close(fast.attention.cache_v, exact.attention.cache_v, np.float32)
        pos += t


_META: list[Any] = []


@pytest.mark.gpu
def test_a_llama_block_on_device_arrays(tmp_path_factory) -> None:
    from conftest import assert_close
    from gpu_harness import Framework, device_arch

    mod = compile_source(tmp_path_factory.mktemp("llama_gpu"), LLAMA, cuda_archs=(device_arch(),))
    fw, rng = Framework("torch"), np.random.default_rng(7)
    n_kv, n_rep, hd = 2, 2, 8
    d, h = n_kv * n_rep * hd, 64

    def w(*shape: int) -> np.ndarray:
        return (rng.standard_normal(shape) / shape[-1] ** 0.5).astype(np.float32)

    host = [w(d, d), w(n_kv * hd, d), w(n_kv * hd, d), w(d, d), w(h, d), w(d, h), w(h, d),
            1 + w(d), 1 + w(d)]

    def block(arrays: list[Any]) -> Any:
        a = arrays
        return mod.Block(mod.Attention(a[0], a[1], a[2], a[3], n_kv * n_rep, n_kv),
                         mod.MLP(a[4], a[5], a[6]), a[7], a[8])

    on_host, on_device = block(host), block([fw.put(a) for a in host])
    for t, start in ((1, 5), (7, 0)):
        x = rng.standard_normal((2, t, d)).astype(np.float32)
        ref = mod.Block.forward.py_func(block([a.astype(np.float64) for a in host]),
                                        x.astype(np.float64), start)
        assert_close(fw.get(on_device.forward(fw.put(x), start)), ref, np.float32, 8.0)
        assert_close(on_host.forward(x, start), ref, np.float32)
