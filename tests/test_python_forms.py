"""Python's smaller forms in compiled functions (frontend/python_forms.py, unrolled.dict_comp)
against the Python function on NumPy, on random shapes (hypothesis), outputs poisoned:
``assert`` known at compile time and on dimensions (AssertionError with the message at
the call, as Python raises it), ``del``, the walrus, starred unpacking, dict
comprehensions, f-strings, ``sum`` of arrays, ``isinstance``, np.shape/ndim/size and
itemsize/nbytes, a string's methods on strings known now (state-dict keys), unpacking
any iterable (a generator, a range, a dict's keys), ``import`` in the function,
``with np.errstate``, ``functools.partial``;
and what Python rejects, refused at the user's line (print(), which would run at the build,
not at each call, too)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from conftest import assert_refused, check, compile_source
from hypothesis import given, settings
from hypothesis import strategies as st
from test_elementwise import view_of

SOURCE = '''
import numpy as np
import cuvil_aot as cv

N_HEAD = 4

@cv.optimize(signatures=["f32[B,T,C]"])
def forms(x):
    assert x.ndim == 3, f"expected 3 dims, got {x.ndim}"
    B, T, C = x.shape
    assert C % N_HEAD == 0, f"width {C} is not a multiple of {N_HEAD} heads"
    *lead, c = x.shape
    first, *rest = [x[..., :1], x[..., 1:2], x[..., 2:3]]
    parts = {i: x[..., i * (c // 4):(i + 1) * (c // 4)] for i in range(4) if i != 2}
    scratch = [1.0, 2.0, 3.0]
    del scratch[1], parts[1]
    y = x * scratch[1]
    del y
    z = x[..., :(half := c // 2)] * half
    return parts[0] + parts[3], z, first + rest[1], len(lead) + len(rest) + len(parts) + half

@cv.optimize(signatures=["f32[N,C], int"])
def raised(x, k):
    n, c = x.shape
    if k > c:
        raise ValueError(f"k={k} is more than the {c} columns of {n * 2 // 2} rows "
                         f"({x.ndim}-d, {2.5:.2f}x, {'x'!r})")
    assert k >= 0, f"k must be nonnegative, got {k!r} (sum={x.sum()})"
    return x[:, :1] * k

SCALES = {"layer1": 2.0, "layer2": 3.0}

import functools
CLIP = functools.partial(np.clip, a_min=-1.0)

def gelu_tanh(x, scale, cube=0.044715):
    return 0.5 * x * (1.0 + np.tanh(scale * (x + cube * x ** 3)))

@cv.optimize(signatures=["f32[N,C]", "f64[N,C]"])
def partials(x):
    act = functools.partial(gelu_tanh, scale=0.7978845608, cube=0.05)
    shifted = functools.partial(np.add, x)  # an array of the function among its arguments
    return act(x), CLIP(x, a_max=0.5), shifted(1.0), functools.partial(act, cube=0.0)(x)

@cv.optimize(signatures=["f32[B,T,C]", "f64[B,T,C]"])
def builtins_(x):
    i = 2
    heads = [x[..., :1], x[..., 1:2], x[..., 2:3]]
    total = sum(heads) + sum(heads, 1.5)
    flat = x.reshape(np.shape(x)[0], np.size(x) // np.size(x, 0))
    ok = isinstance(x, np.ndarray) and isinstance(i, int) and not isinstance(x, (int, float))
    return (total * SCALES[f"layer{i}"], flat * (2 if ok else 3),
            np.ndim(x) + x.itemsize + x.nbytes)

KEYS = {"h.0.w": 2.0, "h.1.w": 3.0}

@cv.optimize(signatures=["f32[N,C]", "f64[N,C]"])
def strings_and_unpacking(x):
    a, b = (x * KEYS["h.{}.w".format(i)] for i in range(2))  # a generator unpacked
    lo, hi = range(1, 3)
    (first,) = {"key": 1}
    name = "layer.0.attn".replace("attn", "mlp").split(".")[-1].upper()
    return a + b * len(name) + hi * lo, x.sum(0) * len(first) * name.startswith("ML")

@cv.optimize(signatures=["f32[N,C]", "f64[N,C]"])
def imports_and_errstate(x):
    import math
    import numpy.linalg
    from math import pi, sqrt as root
    from numpy import tanh as th
    with np.errstate(divide="ignore", invalid="ignore"), np.errstate(over="warn"):
        y = np.log(np.abs(x)) / x
    gelu = 0.5 * x * (1.0 + th(root(2.0 / pi) * (x + 0.044715 * x ** 3)))
    return gelu, math.e * y, numpy.linalg.norm(x, axis=1)
'''


@pytest.fixture(scope="module")
def m(tmp_path_factory):
    return compile_source(tmp_path_factory.mktemp("python_forms"), SOURCE)


@settings(max_examples=20, deadline=None)
@given(data=st.data(), b=st.integers(1, 3), t=st.integers(1, 4), heads=st.integers(1, 4))
def test_against_python(m, data: st.DataObject, b: int, t: int, heads: int) -> None:
    check(m.forms, data.draw(view_of((b, t, 4 * heads), "float32")))


@settings(max_examples=10, deadline=None)
@given(data=st.data(), b=st.integers(1, 3), t=st.integers(1, 4), c=st.integers(3, 6))
def test_builtins_on_arrays(m, data: st.DataObject, b: int, t: int, c: int) -> None:
    for dtype in ("float32", "float64"):
        check(m.builtins_, data.draw(view_of((b, t, c), dtype)))


@settings(max_examples=10, deadline=None)
@given(data=st.data(), n=st.integers(0, 4), c=st.integers(1, 6))
def test_string_methods_and_unpacking_any_iterable(m, data: st.DataObject, n: int,
                                                   c: int) -> None:
    for dtype in ("float32", "float64"):
        check(m.strings_and_unpacking, data.draw(view_of((n, c), dtype)))


@settings(max_examples=10, deadline=None)
@given(data=st.data(), n=st.integers(0, 4), c=st.integers(1, 6))
def test_imports_and_errstate_in_the_function(m, data: st.DataObject, n: int, c: int) -> None:
    for dtype in ("float32", "float64"):
        x = data.draw(view_of((n, c), dtype))
        x[..., 0] = 0  # log(0) / 0: the warnings errstate silences in NumPy
        check(m.imports_and_errstate, x)


@settings(max_examples=10, deadline=None)
@given(data=st.data(), n=st.integers(0, 4), c=st.integers(1, 6))
def test_functools_partial(m, data: st.DataObject, n: int, c: int) -> None:
    for dtype in ("float32", "float64"):
        check(m.partials, data.draw(view_of((n, c), dtype)))


def test_an_assert_on_dimensions_raises_at_the_call(m) -> None:
    x = np.ones((2, 3, 6), np.float32)
    for fn in (m.forms, m.forms.py_func):  # C is known only at the call: printed there
        with pytest.raises(AssertionError, match="^width 6 is not a multiple of 4 heads$"):
            fn(x)


@settings(max_examples=20, deadline=None)
@given(n=st.integers(1, 5), c=st.integers(1, 9), k=st.integers(-3, 12))
def test_messages_print_the_calls_ints_as_python_does(m, n: int, c: int, k: int) -> None:
    """f-string messages of ``raise`` and ``assert`` checked at the call: dimensions, int
    arguments and arithmetic on them printed as Python prints them, a format spec applied
    to what is known at compile time, a value of the array data as its expression."""
    x = np.ones((n, c), np.float32)
    try:
        want = m.raised.py_func(x, k)
    except (ValueError, AssertionError) as exc:
        with pytest.raises(type(exc)) as got:
            m.raised(x, k)
        expected = str(exc).replace(f"sum={float(x.sum())}", "sum={x.sum()}")
        assert str(got.value) == expected
        return
    np.testing.assert_array_equal(m.raised(x, k), want)


@pytest.mark.parametrize("body, message", [
    ("assert x.shape[0] == 2, 'two rows'\n    return x", "AssertionError: two rows"),
    ("a, b = x.shape[0], 1, 2\n    return x", r"too many values to unpack \(expected 2, got 3\)"),
    ("*a, b, c = (1,)\n    return x", r"not enough values to unpack \(expected at least 2"),
    ("del y\n    return x", "NameError: name 'y' is not defined"),
    ("del x[0]\n    return x", "del of an item of an array"),
    ("d = {k: 1 for k in [x]}\n    return x", "a dict key must be known at compile time"),
    ("return x * len(f'{x.sum()}')", "an f-string of a value known only at run time"),
    ("return x * isinstance(x.sum(), float)", r"isinstance\(\) of a 0-d array"),
    ("print(x.shape)\n    return x", r"print\(\) in a compiled function is not supported: it "
     "would run when the module is built"),
    ("import no_such_module_here\n    return x", "ModuleNotFoundError: No module named"),
    ("from math import no_such_name\n    return x",
     "ImportError: cannot import name 'no_such_name' from 'math'"),
    ("with np.errstate(divide='raise'):\n        y = 1 / x\n    return y",
     r"np.errstate\(divide='raise'\) is not supported: compiled code raises no"),
    ("with open('f') as f:\n        pass\n    return x",
     r"of with statements only `with np.errstate\(...\):` is supported"),
])
def test_what_python_rejects_is_refused(tmp_path: Path, body: str, message: str) -> None:
    assert_refused(tmp_path, body, message)
