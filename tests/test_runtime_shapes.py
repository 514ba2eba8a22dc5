"""Shapes made of ints known only at the call (``x.reshape(T, n_head, C // n_head)`` with
``n_head: int``, ``np.zeros((n, d))``, ``np.arange(pos, pos + T)``) against NumPy on random
sizes, outputs poisoned: the sizes are symbols the call computes; NumPy's ValueErrors where
the sizes do not fit (a reshape of another element count, a negative size); and
``np.split`` of an axis that may not divide, checked at the call as NumPy checks it."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import check, compile_source
from hypothesis import given, settings
from hypothesis import strategies as st

SOURCE = '''
import numpy as np
import cuvil_aot as cv

@cv.optimize
def heads(x: cv.f32["T", "C"], n_head: int):
    T, C = x.shape
    q = x.reshape(T, n_head, C // n_head).transpose(1, 0, 2)
    att = q @ q.transpose(0, 2, 1) / (C // n_head) ** 0.5
    return (att @ q).transpose(1, 0, 2).reshape(T, C)

@cv.optimize
def filled(x: cv.f64["N"], n: int, d: int):
    return np.zeros((n, d)) + np.ones(n)[:, None] * x.sum() + np.full((n, d), 0.5)

@cv.optimize
def rows(x: cv.f32["N"], n: int):
    return x.reshape(n, x.shape[0] // n) * 2

@cv.optimize
def rotary(x: cv.f32["T", "C"], pos: int, n_head: int):
    """LLaMA's tables: np.arange of a head's size and from the position of the first token."""
    hd = x.shape[1] // n_head
    inv_freq = 1.0 / (10000.0 ** (np.arange(0, hd, 2, dtype=np.float32) / hd))
    t = np.arange(pos, pos + x.shape[0], dtype=np.float32)
    freqs = np.outer(t, inv_freq)
    return np.cos(freqs), np.arange(pos), np.arange(pos, 7), np.arange(3, pos, 2)

@cv.optimize
def qkv(x: cv.f32["B", "N"]):
    q, k, v = np.split(x, 3, axis=-1)
    return q * k + v
'''


@pytest.fixture(scope="module")
def m(tmp_path_factory):
    return compile_source(tmp_path_factory.mktemp("runtime_shapes"), SOURCE)


@settings(max_examples=25, deadline=None)
@given(t=st.integers(0, 5), n_head=st.integers(1, 4), hs=st.integers(1, 4),
       seed=st.integers(0, 2**32 - 1))
def test_heads_of_a_run_time_count(m, t: int, n_head: int, hs: int, seed: int) -> None:
    x = np.random.default_rng(seed).standard_normal((t, n_head * hs)).astype(np.float32)
    check(m.heads, x, n_head)


@settings(max_examples=15, deadline=None)
@given(n=st.integers(0, 5), d=st.integers(0, 4), k=st.integers(0, 6))
def test_creation_of_run_time_sizes(m, n: int, d: int, k: int) -> None:
    check(m.filled, np.linspace(-1, 1, k), n, d)


@settings(max_examples=25, deadline=None)
@given(t=st.integers(0, 5), n_head=st.integers(1, 4), hs=st.integers(1, 5),
       pos=st.integers(-3, 12))
def test_ramps_from_run_time_ints(m, t: int, n_head: int, hs: int, pos: int) -> None:
    check(m.rotary, np.ones((t, n_head * hs), np.float32), pos, n_head)


def test_numpy_errors_where_the_sizes_do_not_fit(m) -> None:
    x = np.ones((2, 6), np.float32)
    with pytest.raises(ValueError, match="cannot reshape array of size 12"):
        m.heads.py_func(x, 4)
    with pytest.raises(ValueError, match="cannot reshape array of size 12"):
        m.heads(x, 4)
    with pytest.raises(ValueError, match="negative dimensions are not allowed"):
        m.filled.py_func(np.ones(3), -1, 2)
    with pytest.raises(ValueError, match="negative dimensions are not allowed"):
        m.filled(np.ones(3), -1, 2)
    with pytest.raises(ValueError, match="the compiled reshape infers only a -1 written in "
                       "the code"):
        m.rows(np.ones(6, np.float32), -1)  # NumPy infers a -1 it computes; compiled code not
    check(m.rows, np.arange(6, dtype=np.float32), 3)


@settings(max_examples=15, deadline=None)
@given(b=st.integers(0, 3), n=st.integers(0, 5), seed=st.integers(0, 2**32 - 1))
def test_split_of_an_axis_that_may_not_divide(m, b: int, n: int, seed: int) -> None:
    x = np.random.default_rng(seed).standard_normal((b, 3 * n)).astype(np.float32)
    check(m.qkv, x)
    with pytest.raises(ValueError, match="array split does not result in an equal division"):
        m.qkv(np.ones((b, 3 * n + 1), np.float32))


@pytest.mark.gpu
@pytest.mark.parametrize("framework", ["torch", "cupy"])
def test_gpu_against_numpy(tmp_path_factory, framework: str) -> None:
    from gpu_harness import Framework, device_arch, run_check

    mod = compile_source(tmp_path_factory.mktemp("gpu_runtime_shapes"), SOURCE,
                         cuda_archs=(device_arch(),))
    fw = Framework(framework)
    rng = np.random.default_rng(4)
    for t, n_head, hs in ((1, 1, 1), (5, 3, 4), (64, 12, 64), (7, 4, 3)):
        x = rng.standard_normal((t, n_head * hs)).astype(np.float32)
        run_check(mod.heads, fw, [x, n_head], "contiguous", 8.0)
        run_check(mod.heads, fw, [x, n_head + 1], "contiguous", 8.0)  # ValueError if misfit
        run_check(mod.rotary, fw, [x, t - 2, n_head], "contiguous", 8.0)
    for n in (0, 2, 33):
        run_check(mod.qkv, fw, [rng.standard_normal((3, 3 * n)).astype(np.float32)],
                  "strided", 8.0)
        run_check(mod.qkv, fw, [np.ones((3, 3 * n + 2), np.float32)], "contiguous", 8.0)
