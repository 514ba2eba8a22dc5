"""Array creation and rounding inside compiled functions against NumPy: np.arange, filled
arrays (zeros/ones/full/empty and *_like), eye/identity/tri/triu/tril, causal masks built
from ramps, np.round/rint; random shapes, symbolic dims drawn independently (1 and 0
included), outputs poisoned before the call."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import check, compile_source, poisoned
from hypothesis import given, settings
from hypothesis import strategies as st

import cuvil_aot as cv

SOURCE = '''
import math
import numpy as np
import cuvil_aot as cv

@cv.optimize(signatures=["f32[T,T]", "f64[T,T]"])
def causal_by_ramps(s):
    t = s.shape[0]
    mask = np.arange(t)[:, None] >= np.arange(t)[None, :]
    return np.where(mask, s, -np.inf)

@cv.optimize(signatures=["f32[Q,K]"])
def causal_by_triu(s):
    q, k = s.shape
    return s + np.triu(np.full((q, k), -1e9, dtype=np.float32), 1)

@cv.optimize(signatures=["f32[Q,K]"])
def causal_by_tril_ones(s):
    keep = np.tril(np.ones((s.shape[0], s.shape[1]), dtype=bool))
    return np.where(keep, s, np.float32(-1e9))

@cv.optimize(signatures=["f64[B,N,M]", "i32[B,N,M]", "bool[B,N,M]"])
def triangles(x):
    return np.tril(x), np.triu(x, 1), np.tril(x, -2), np.triu(x, -1)

@cv.optimize(signatures=["f32[T,S]"])
def causal_over_a_cache(s):
    t, n = s.shape  # the last t of n positions: query i sees keys up to n - t + i
    return np.where(np.triu(np.ones((t, n), dtype=bool), k=n - t + 1), -np.inf, s)

@cv.optimize(signatures=["f64[N,M], int", "i32[N,M], int"])
def triangles_at(x, k):
    n, m = x.shape
    return np.tril(x, k), np.triu(x, -k), np.tri(n, m, k), np.eye(n, m, k=k + 1, dtype=x.dtype)

@cv.optimize(signatures=["f32[N]"])
def triangle_of_a_vector(x):
    return np.tril(x), np.triu(x, 1)

@cv.optimize(signatures=["f32[N,M]"])
def diagonals(x):
    n, m = x.shape
    return (x + np.eye(n, m, dtype=np.float32), np.eye(n, m, k=1), np.identity(n, dtype=np.int32),
            np.tri(n, m, -1), np.eye(3, dtype=bool))

@cv.optimize(signatures=["f32[N]"])
def ramps(x):
    n = x.shape[0]
    return (np.arange(n), np.arange(2, n + 2), np.arange(n, dtype=np.float32) * x,
            np.arange(10, 0, -3), np.arange(0.5, 3.0, 0.25, dtype=np.float32),
            np.arange(1.0, 2.0, 0.1), np.arange(5, dtype=np.int32), np.arange(0),
            np.arange(3, n), np.arange(1, n, 3), np.arange(0, n, 2, dtype=np.float32))

@cv.optimize(signatures=["f32[P], f32[T]"])
def after_a_cache(past, x):
    """Hugging Face's position ids: a symbolic start, empty where it passes the stop."""
    p, t = past.shape[0], x.shape[0]
    return np.arange(p, p + t), np.arange(p, t, 2, dtype=np.float32), np.arange(t + 1, p)

@cv.optimize(signatures=["f32[N,D]"])
def positions(x):
    n, d = x.shape
    pos = np.arange(n, dtype=np.float32)[:, None]
    inv = 1.0 / (10000.0 ** (np.arange(0, d, dtype=np.float32) / d))
    return x + np.sin(pos * inv)

@cv.optimize(signatures=["f32[N,M]", "i64[N,M]"])
def filled(x):
    n, m = x.shape
    return (np.zeros((n, m)), np.ones((m,), dtype=np.int32), np.full((n, 2), 7),
            np.full((n, m), -np.inf, dtype=np.float32), np.full((2, 3), 1.7, dtype=np.int32),
            np.zeros_like(x), np.ones_like(x, dtype=np.float64), np.full_like(x, 3),
            np.zeros(()), np.full((n,), x.shape[1]))

@cv.optimize(signatures=["f32[N,M]"])
def empties(x):
    return np.empty_like(x), np.empty((x.shape[1], 2), dtype=np.int32)

@cv.optimize(signatures=["f32[N], float"])
def full_of_a_run_time_number(x, v):
    return np.full((x.shape[0], 2), v), np.full_like(x, v) + x

@cv.optimize(signatures=["f32[N]", "f64[N]", "i32[N]"])
def rounding(x):
    return (np.round(x), np.round(x, 2), np.around(x, -1), np.rint(x), x.round(1),
            np.round(x * 3), np.round(x, -2))
'''


@pytest.fixture(scope="module")
def m(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    return compile_source(tmp_path_factory.mktemp("creation"), SOURCE)


dims = st.integers(0, 9)
rng = np.random.default_rng


def values(shape: tuple[int, ...], dtype: str, seed: int) -> np.ndarray:
    r = rng(seed)
    if dtype == "bool":
        return r.random(shape) < 0.5
    if dtype.startswith("int"):
        return r.integers(-100, 100, shape).astype(dtype)
    return (r.standard_normal(shape) * 10).astype(dtype)


@settings(max_examples=25, deadline=None)
@given(t=dims, q=dims, k=dims, seed=st.integers(0, 2**32 - 1))
def test_causal_masks(m, t: int, q: int, k: int, seed: int) -> None:
    for dtype in ("float32", "float64"):
        check(m.causal_by_ramps, values((t, t), dtype, seed))
    check(m.causal_by_triu, values((q, k), "float32", seed))
    check(m.causal_by_tril_ones, values((q, k), "float32", seed))


@settings(max_examples=25, deadline=None)
@given(t=dims, n=dims, k=st.integers(-12, 12), seed=st.integers(0, 2**32 - 1))
def test_diagonal_offsets_known_at_the_call(m, t: int, n: int, k: int, seed: int) -> None:
    """The offset from dimensions (a KV cache's causal mask) or an int argument."""
    check(m.causal_over_a_cache, values((t, n), "float32", seed))
    for dtype in ("float64", "int32"):
        check(m.triangles_at, values((t, n), dtype, seed), k)


@settings(max_examples=25, deadline=None)
@given(b=st.integers(0, 3), n=dims, mm=dims, seed=st.integers(0, 2**32 - 1))
def test_triangles_and_diagonals(m, b: int, n: int, mm: int, seed: int) -> None:
    for dtype in ("float64", "int32", "bool"):
        check(m.triangles, values((b, n, mm), dtype, seed))
    check(m.triangle_of_a_vector, values((n,), "float32", seed))
    check(m.diagonals, values((n, mm), "float32", seed))


@settings(max_examples=25, deadline=None)
@given(n=dims, d=st.integers(1, 9), seed=st.integers(0, 2**32 - 1))
def test_ramps(m, n: int, d: int, seed: int) -> None:
    check(m.ramps, values((n,), "float32", seed))
    check(m.positions, values((n, d), "float32", seed))
    check(m.after_a_cache, values((d,), "float32", seed), values((n,), "float32", seed))


def test_float_ramps_equal_numpy_exactly(m) -> None:
    """NumPy fills start + i * delta in the result dtype; so do we, bit for bit."""
    got = m.ramps(np.zeros(3, np.float32))
    want = m.ramps.py_func(np.zeros(3, np.float32))
    for g, w in zip(got, want):
        assert g.dtype == w.dtype
        np.testing.assert_array_equal(g, w)


@settings(max_examples=25, deadline=None)
@given(n=dims, mm=dims, v=st.floats(-1e6, 1e6), seed=st.integers(0, 2**32 - 1))
def test_filled(m, n: int, mm: int, v: float, seed: int) -> None:
    check(m.filled, values((n, mm), "float32", seed))
    check(m.filled, values((n, mm), "int64", seed))
    check(m.full_of_a_run_time_number, values((n,), "float32", seed), v)


def test_empty_arrays_have_numpys_shapes_and_dtypes(m) -> None:
    x = np.ones((3, 4), np.float32)
    for got, want in zip(m.empties(x), m.empties.py_func(x)):
        assert got.shape == want.shape and got.dtype == want.dtype


def test_a_returned_filled_array_is_written(m) -> None:
    """Every element of a returned constant array is stored (poisoned out= first)."""
    x = np.ones((4, 5), np.float32)
    outs = tuple(poisoned(np.shape(e), np.asarray(e).dtype) for e in m.filled.py_func(x))
    m.filled(x, out=outs)
    for got, want in zip(outs, m.filled.py_func(x)):
        np.testing.assert_array_equal(got, want)


@settings(max_examples=40, deadline=None)
@given(n=dims, seed=st.integers(0, 2**32 - 1))
def test_rounding_equals_numpy_on_the_same_dtype(m, n: int, seed: int) -> None:
    """Rounding is exact: compared with NumPy on the real dtype, ties to even included."""
    for dtype in ("float32", "float64", "int32"):
        x = values((n,), dtype, seed)
        if dtype != "int32":
            x[: n // 2] = np.round(x[: n // 2]) + 0.5  # ties
        for got, want in zip(m.rounding(x), m.rounding.py_func(x)):
            assert got.dtype == want.dtype
            np.testing.assert_array_equal(got, want)


REFUSED = {
    "arange of a number from array data": ("def f(x: cv.f32['N']):\n"
                                           "    return np.arange(int(x.sum()))\n",
                                           "known only at run time"),
    "zeros of a number from array data": ("def f(x: cv.f32['N']):\n"
                                          "    return np.zeros(int(x.sum()))\n",
                                          "would depend on data"),
    "arange by a symbolic step": ("def f(x: cv.f32['N']):\n"
                                  "    return np.arange(0, 10, x.shape[0])\n",
                                  "symbolic dimension as its start or stop only"),
    "shape from a run-time float": ("def f(x: cv.f32['N'], n: float):\n"
                                    "    return np.zeros((n,))\n", "computed at run time"),
    "round to run-time decimals": ("def f(x: cv.f32['N'], d: int):\n    return np.round(x, d)\n",
                                   "decimals must be an int known at compile time"),
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_refused_forms_point_at_the_line(tmp_path, name: str) -> None:
    body, message = REFUSED[name]
    source = "import numpy as np\nimport cuvil_aot as cv\n\n@cv.optimize\n" + body
    module = compile_source(tmp_path, source)
    with pytest.raises(cv.CompileError) as info:
        module.f(np.ones(3, np.float32), *([2] if "int" in body else []))
    text = str(info.value)
    assert message in text and ":6:" in text and "^" in text, text
