"""GPT-2 as the most copied NumPy version writes it (picoGPT's helpers, unchanged: weights
in dicts passed with ``**``, heads split by ``map`` of a lambda, ``zip(*heads)``, np.tri's
causal mask, np.hstack, positions as ``wpe[range(len(inputs))]``) against NumPy in
float64 on random weights and lengths (hypothesis), outputs poisoned; and the pieces on
their own: dict displays (also ``**d`` inside), a write into an array a dict holds, lambdas
with defaults, ``map`` over two lists, ``range`` of a length the call knows as an index; what
Python rejects is refused at the user's line. Its whole ``gpt2`` takes picoGPT's params as
they load, a list of nested dicts (`test_struct_arguments.py`)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from conftest import assert_refused, check, compile_source
from hypothesis import given, settings
from hypothesis import strategies as st
from test_struct_arguments import check as check_nested

SOURCE = '''
import numpy as np
import cuvil_aot as cv

def gelu(x):
    return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3)))

def softmax(x):
    exp_x = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return exp_x / np.sum(exp_x, axis=-1, keepdims=True)

def layer_norm(x, g, b, eps: float = 1e-5):
    mean = np.mean(x, axis=-1, keepdims=True)
    variance = np.var(x, axis=-1, keepdims=True)
    x = (x - mean) / np.sqrt(variance + eps)
    return g * x + b

def linear(x, w, b):
    return x @ w + b

def ffn(x, c_fc, c_proj):
    a = gelu(linear(x, **c_fc))
    x = linear(a, **c_proj)
    return x

def attention(q, k, v, mask):
    return softmax(q @ k.T / np.sqrt(q.shape[-1]) + mask) @ v

def mha(x, c_attn, c_proj, n_head):
    x = linear(x, **c_attn)
    qkv = np.split(x, 3, axis=-1)
    qkv_heads = list(map(lambda x: np.split(x, n_head, axis=-1), qkv))
    causal_mask = (1 - np.tri(x.shape[0], dtype=x.dtype)) * -1e10
    out_heads = [attention(q, k, v, causal_mask) for q, k, v in zip(*qkv_heads)]
    x = np.hstack(out_heads)
    x = linear(x, **c_proj)
    return x

def transformer_block(x, mlp, attn, ln_1, ln_2, n_head):
    x = x + mha(layer_norm(x, **ln_1), **attn, n_head=n_head)
    x = x + ffn(layer_norm(x, **ln_2), **mlp)
    return x

@cv.optimize(signatures=["f32[T,32], f32[32,96], f32[96], f32[32,32], f32[32], f32[32,128], "
                         "f32[128], f32[128,32], f32[32], f32[32], f32[32], f32[32], f32[32]"])
def block(x, wa, ba, wp, bp, wf, bf, wo, bo, g1, b1, g2, b2):
    ln = {"g": g1, "b": b1}
    return transformer_block(
        x, mlp={"c_fc": {"w": wf, "b": bf}, "c_proj": {"w": wo, "b": bo}},
        attn={"c_attn": {"w": wa, "b": ba}, "c_proj": {"w": wp, "b": bp}},
        ln_1={**ln}, ln_2=dict(g=g2, b=b2), n_head=4)

def gpt2(inputs, wte, wpe, blocks, ln_f, n_head):
    x = wte[inputs] + wpe[range(len(inputs))]
    for block in blocks:
        x = transformer_block(x, **block, n_head=n_head)
    return layer_norm(x, **ln_f) @ wte.T

def linear_type(n_in, n_out):
    return {"w": cv.f32[n_in, n_out], "b": cv.f32[n_out]}

NORM = {"g": cv.f32[32], "b": cv.f32[32]}
BLOCK = {"mlp": {"c_fc": linear_type(32, 128), "c_proj": linear_type(128, 32)},
         "attn": {"c_attn": linear_type(32, 96), "c_proj": linear_type(32, 32)},
         "ln_1": NORM, "ln_2": NORM}

@cv.optimize
def logits(inputs: cv.i64["T"], wte: cv.f32[50, 32], wpe: cv.f32[16, 32], blocks: [BLOCK] * 2,
           ln_f: NORM):
    return gpt2(inputs, wte, wpe, blocks, ln_f, n_head=4)  # picoGPT's params, as they load

@cv.optimize(signatures=["i64[T], f32[50,32], f32[16,32]"])
def embed(inputs, wte, wpe):
    return wte[inputs] + wpe[range(len(inputs))]

@cv.optimize(signatures=["f32[N], f32[N]"])
def pieces(x, y):
    held = {"x": x * 1, "scale": 2.0}
    z = held["x"]
    z[0] = 7                        # the dict's array is z: it shows the write
    scaled = lambda v, s=held["scale"]: v * s  # noqa: E731
    sums = list(map(lambda a, b: a + b, [x, y], [y, 1.0]))
    return held["x"], scaled(y), sums[0], sums[1], x[range(1, len(x))]
'''


@pytest.fixture(scope="module")
def m(tmp_path_factory):
    return compile_source(tmp_path_factory.mktemp("pico_gpt"), SOURCE)


@settings(max_examples=10, deadline=None)
@given(t=st.integers(1, 9), seed=st.integers(0, 2**32 - 1))
def test_pico_gpt_block_and_embedding(m, t: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    shapes = [(t, 32), (32, 96), (96,), (32, 32), (32,), (32, 128), (128,), (128, 32), (32,),
              (32,), (32,), (32,), (32,)]
    weights = [(rng.standard_normal(s) * 0.2).astype(np.float32) for s in shapes]
    weights[9] += 1  # the gammas near 1
    # float64 out (np.sqrt of an int is a NumPy float64, as in NumPy), float32 before it:
    # the float32 tolerance, not float64's
    check(m.block, *weights, scale=2e7)
    check(m.embed, rng.integers(-50, 50, t), rng.standard_normal((50, 32)).astype(np.float32),
          rng.standard_normal((16, 32)).astype(np.float32))


@settings(max_examples=8, deadline=None)
@given(t=st.integers(1, 9), seed=st.integers(0, 2**32 - 1))
def test_pico_gpt_with_its_params_as_arguments(m, t: int, seed: int) -> None:
    rng = np.random.default_rng(seed)

    def w(*shape: int, mean: float = 0.0) -> np.ndarray:
        return (mean + rng.standard_normal(shape) * 0.2).astype(np.float32)

    def norm() -> dict[str, np.ndarray]:
        return {"g": w(32, mean=1.0), "b": w(32)}

    blocks = [{"mlp": {"c_fc": {"w": w(32, 128), "b": w(128)},
                       "c_proj": {"w": w(128, 32), "b": w(32)}},
               "attn": {"c_attn": {"w": w(32, 96), "b": w(96)},
                        "c_proj": {"w": w(32, 32), "b": w(32)}},
               "ln_1": norm(), "ln_2": norm()} for _ in range(2)]
    check_nested(m.logits, rng.integers(0, 50, t), w(50, 32), w(16, 32), blocks, norm(),
                 scale=2e7)


@settings(max_examples=15, deadline=None)
@given(k=st.integers(1, 6), seed=st.integers(0, 2**32 - 1))
def test_dicts_lambdas_map_and_range(m, k: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    x, y = (rng.standard_normal(k).astype(np.float32) for _ in range(2))
    check(m.pieces, x, y)


@pytest.mark.parametrize("body, message", [
    ("dict(x=x, **{'x': x})", "multiple values for keyword argument 'x'"),
    ("np.add(x, **[1])", r"\*\* of list is not supported"),
    ("{x.shape[0] * x: 1}['a']", "a dict key must be known at compile time"),
    ("(lambda *a: a[0])(x)", "of a nested def or lambda is not supported"),
])
def test_what_python_rejects_is_refused(tmp_path: Path, body: str, message: str) -> None:
    assert_refused(tmp_path, f"return {body}", message)
