"""Arguments that may be None: ``mask: cv.f32["B", "T"] | None``, ``Optional[float]``, a
parameter whose default is None (``attention_mask=None``, as Hugging Face writes
``forward``), an attribute ``b: cv.f32["O"] | None``, ``None`` in signature strings. Each
compiles a version where it is None (the code sees None: ``if mask is not None`` is
answered at build) beside the one where it is given; checked against the Python function
on float64 copies of random inputs (hypothesis), outputs poisoned. Also what the call
says of a wrong argument, and what the build refuses, at the user's line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import assert_close, compile_source, poisoned
from hypothesis import given, settings
from hypothesis import strategies as st
from test_elementwise import view_of

import cuvil_aot as cv

SOURCE = '''
from typing import Optional

import numpy as np
import cuvil_aot as cv


def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


@cv.optimize
def attend(q: cv.f32["B", "T", "D"], k: cv.f32["B", "T", "D"],
           mask: cv.f32["B", "T"] = None, scale: Optional[float] = None):
    if scale is None:
        scale = 1 / q.shape[-1] ** 0.5
    s = q @ k.transpose(0, 2, 1) * scale
    if mask is not None:
        s = s + (1.0 - mask[:, None, :]) * -10000.0
    return softmax(s)


@cv.optimize
def shift(x: cv.f32["N"], b: cv.f32["N"] | None, c: None | cv.f32["N"] = None):
    return x * 2 if b is None else x - b if c is None else x - b * c


@cv.optimize(signatures=["f32[N], f32[N] | None", "f64[N], None"])
def spelled(x, b):
    return x if b is None else x - b


class Linear:
    w: cv.f32["O", "I"]
    b: cv.f32["O"] | None

    def __init__(self, w, b=None):
        self.w, self.b = w, b

    @cv.optimize
    def forward(self, x: cv.f32["T", "I"], residual: cv.f32["T", "O"] = None):
        y = x @ self.w.T
        if self.b is not None:
            y = y + self.b
        return y if residual is None else y + residual


KV = tuple[cv.f32["B", "P", "D"], cv.f32["B", "P", "D"]]


@cv.optimize
def with_past(k: cv.f32["B", "T", "D"], v: cv.f32["B", "T", "D"], layer_past: KV | None = None):
    if layer_past is not None:  # as Hugging Face's GPT-2 attention takes its cache
        past_key, past_value = layer_past
        k = np.concatenate((past_key, k), axis=1)
        v = np.concatenate((past_value, v), axis=1)
    return k - 2 * v


class Norm:
    g: cv.f32["D"]
    b: cv.f32["D"]

    def __init__(self, g, b):
        self.g, self.b = g, b


@cv.optimize
def maybe_normed(x: cv.f32["N", "D"], norm: Norm | None = None):
    if norm is None:
        return x * 1
    return (x - x.mean(-1, keepdims=True)) * norm.g + norm.b


@cv.optimize(signatures=["f32[N], (f32[N], f32[N]) | None"])
def spelled_pair(x, pair):
    return x if pair is None else x * pair[0] + pair[1]
'''


@pytest.fixture(scope="module")
def m(tmp_path_factory: pytest.TempPathFactory) -> Any:
    return compile_source(tmp_path_factory.mktemp("optional"), SOURCE)


def f64(value: Any) -> Any:
    """``value`` in float64: an array, the items of a tuple or list, an instance's arrays."""
    if isinstance(value, tuple | list):
        return type(value)(map(f64, value))
    if hasattr(value, "__dict__"):
        return type(value)(**{k: f64(v) for k, v in vars(value).items()})
    return value.astype(np.float64) if isinstance(value, np.ndarray) else value


def check(fn: Any, *args: Any, **kwargs: Any) -> None:
    """``fn`` compiled (into a poisoned out=) against its Python on float64 copies."""
    want = fn.py_func(*args, **kwargs)
    ref = fn.py_func(*map(f64, args), **{k: f64(v) for k, v in kwargs.items()})
    out = poisoned(want.shape, want.dtype)
    assert fn(*args, **kwargs, out=out) is out
    assert_close(out, ref, want.dtype)


@settings(max_examples=25, deadline=None)
@given(data=st.data(), b=st.integers(1, 3), t=st.integers(1, 6), d=st.integers(1, 5),
       masked=st.booleans(), scaled=st.booleans())
def test_a_mask_and_a_scale_given_or_left_out(m: Any, data: st.DataObject, b: int, t: int,
                                             d: int, masked: bool, scaled: bool) -> None:
    q, k = (data.draw(view_of((b, t, d), "float32", special=False)) for _ in range(2))
    kwargs: dict[str, Any] = {}
    if masked:
        kwargs["mask"] = (np.arange(t) < data.draw(st.integers(1, t))).astype(np.float32) \
            * np.ones((b, 1), np.float32)
    if scaled:
        kwargs["scale"] = data.draw(st.floats(0.125, 2.0))
    check(m.attend, q, k, **kwargs)


@settings(max_examples=20, deadline=None)
@given(data=st.data(), n=st.integers(0, 9), given_b=st.booleans(), given_c=st.booleans())
def test_none_in_any_position(m: Any, data: st.DataObject, n: int, given_b: bool,
                              given_c: bool) -> None:
    x, b, c = (data.draw(view_of((n,), "float32", special=False)) for _ in range(3))
    check(m.shift, x, b if given_b else None, c if given_c else None)
    check(m.spelled, x, b if given_b else None)
    if not given_b:
        check(m.spelled, x.astype(np.float64), None)


@settings(max_examples=20, deadline=None)
@given(data=st.data(), t=st.integers(1, 5), i=st.integers(1, 6), o=st.integers(1, 6),
       bias=st.booleans(), residual=st.booleans())
def test_an_attribute_that_may_be_none(m: Any, data: st.DataObject, t: int, i: int, o: int,
                                       bias: bool, residual: bool) -> None:
    draw = data.draw
    layer = m.Linear(draw(view_of((o, i), "float32", special=False)),
                     draw(view_of((o,), "float32", special=False)) if bias else None)
    x = draw(view_of((t, i), "float32", special=False))
    r = draw(view_of((t, o), "float32", special=False)) if residual else None
    want = m.Linear.forward.py_func(layer, x, r)
    ref = m.Linear.forward.py_func(m.Linear(f64(layer.w), f64(layer.b)), f64(x), f64(r))
    out = poisoned(want.shape, want.dtype)
    assert m.Linear.forward(layer, x, r, out=out) is out
    assert_close(out, ref, np.float32)
    assert_close(layer.forward(x, residual=r), ref, np.float32)


@settings(max_examples=25, deadline=None)
@given(data=st.data(), b=st.integers(1, 3), t=st.integers(1, 4), p=st.integers(0, 5),
       d=st.integers(1, 4), past=st.sampled_from([None, tuple, list]))
def test_a_tuple_that_may_be_none(m: Any, data: st.DataObject, b: int, t: int, p: int, d: int,
                                  past: Any) -> None:
    k, v = (data.draw(view_of((b, t, d), "float32", special=False)) for _ in range(2))
    layer_past = None if past is None else \
        past(data.draw(view_of((b, p, d), "float32", special=False)) for _ in range(2))
    check(m.with_past, k, v, layer_past)
    check(m.with_past, k, v, layer_past=layer_past)


@settings(max_examples=20, deadline=None)
@given(data=st.data(), n=st.integers(0, 4), d=st.integers(1, 5), normed=st.booleans())
def test_an_instance_that_may_be_none(m: Any, data: st.DataObject, n: int, d: int,
                                      normed: bool) -> None:
    x = data.draw(view_of((n, d), "float32", special=False))
    norm = m.Norm(*(data.draw(view_of((d,), "float32", special=False)) for _ in range(2))) \
        if normed else None
    check(m.maybe_normed, x, norm)
    pair = (norm.g, norm.b) if normed else None
    check(m.spelled_pair, x[0] if n else norm.g if normed else np.ones(d, np.float32), pair)


def test_the_call_names_what_each_version_takes(m: Any) -> None:
    x = np.ones(3, np.float32)
    with pytest.raises(cv.SignatureError, match=r"(?s)argument 'b': expected a float32 array "
                       r"f32\[N\], got int.*argument 'b': expected None, got int"):
        m.shift(x, 3)
    with pytest.raises(TypeError, match="missing"):
        m.shift(x)  # b may be None, but has no default: Python's TypeError
    assert "mask: None" in m.attend.compiled.__doc__
    with pytest.raises(cv.SignatureError, match=r"argument 'layer_past': expected a list or "
                       r"tuple of 2 items, got a tuple of 1"):
        m.with_past(x.reshape(1, 3, 1), x.reshape(1, 3, 1), (x.reshape(1, 3, 1),))


@pytest.mark.parametrize("body, message", [
    ('def f(x: cv.f32["N"], b: cv.f32["N"] = None):\n    return x + b',
     r"expected an array or a number, got NoneType \(where b is None\)(?s:.*)"
     r"test it first: `if b is not None:`"),
    ('def f(x: cv.f32["N"], a: cv.f32["N"] = None, b: cv.f32["N"] = None,\n'
     '      c: cv.f32["N"] = None, d: cv.f32["N"] = None):\n    return x',
     r"4 arguments may be None \(a, b, c, d\)(?s:.*)signatures="),
    ('def f(x: cv.f32["N"], p: tuple[cv.f32["N"], cv.f32["N"]] | None = None):\n'
     '    return x + p[0]',
     r"\(where p is None\)(?s:.*)test it first: `if p is not None:`"),
    ('def f(x: cv.f32["N"], p: tuple[cv.f32["N"] | None, cv.f32["N"]] | None = None):\n'
     '    return x',
     r"parameter 'p': it may be None and so may its items(?s:.*)the whole, not both"),
    ('class Relu:\n    def __call__(self, x):\n        return np.maximum(x, 0)\n\n'
     '@cv.optimize\ndef g(x: cv.f32["N"]):\n    return x\n\n'
     '@cv.optimize\ndef f(x: cv.f32["N"], act: Relu | None = None):\n'
     '    return x if act is None else act(x)',
     r"parameter 'act': .*Relu.* may be None, but holds no array or number"),
    ('def f(x: cv.f32["N"], p: tuple[cv.f32["N"], ...] = None):\n    return x',
     r"parameter 'p': .* is a list of any length(?s:.*)\[X\] \* 12"),
])
def test_what_the_build_refuses(tmp_path: Path, body: str, message: str) -> None:
    prefix = "" if body.startswith("class") else "@cv.optimize\n"
    mod = compile_source(tmp_path,
                         f"import numpy as np\nimport cuvil_aot as cv\n\n{prefix}{body}\n")
    with pytest.raises(cv.CompileError, match=message):
        mod.f(np.ones(2, np.float32))


@pytest.mark.gpu
@pytest.mark.parametrize("framework", ["torch", "cupy"])
def test_device_arrays_with_none(tmp_path: Path, framework: str) -> None:
    from gpu_harness import Framework, device_arch

    fw = Framework(framework)
    mod = compile_source(tmp_path, SOURCE, cuda_archs=(device_arch(),))
    rng = np.random.default_rng(5)
    q, k = (rng.standard_normal((2, 5, 4)).astype(np.float32) for _ in range(2))
    mask = np.ones((2, 5), np.float32)
    mask[1, 3:] = 0
    for kwargs in ({}, {"mask": mask}, {"scale": 0.5}):
        got = fw.get(mod.attend(fw.put(q), fw.put(k),
                                **{n: fw.put(v) if isinstance(v, np.ndarray) else v
                                   for n, v in kwargs.items()}))
        assert_close(got, mod.attend.py_func(f64(q), f64(k), **{n: f64(v) for n, v in
                                                                  kwargs.items()}), np.float32)
