"""The CPU elementwise kernels' task loop (codegen/c.py): each thread's range of tasks
finds its first row's loop variables by division once, then steps them (c_loops.decompose
with steps, advance) row after row and, where rows are split in chunks, chunk after chunk.
Checked
against NumPy exactly on permuted and windowed views of random shapes whose rows are short
(the im2col copy's rows of 2 or 3), long enough to be split in chunks, or empty, over
ranks 2 to 5, so that rows wrap every axis within a thread's range."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import check_exact, compile_source
from hypothesis import given, settings
from hypothesis import strategies as st

SOURCE = '''
import numpy as np
import cuvil_aot as cv
from numpy.lib.stride_tricks import sliding_window_view

@cv.optimize
def permuted_add(x: cv.f32["A", "B", "C"], y: cv.f32["C", "A", "B"]):
    return x.transpose(2, 0, 1) + y

@cv.optimize
def four_axes(x: cv.f32["A", "B", "C", "D"]):
    return x.transpose(3, 1, 0, 2) + np.float32(1.0)

@cv.optimize
def im2col(x: cv.f32["C", "H", "W"]):
    c, h, w = x.shape
    cols = sliding_window_view(x, (2, 3), axis=(1, 2))
    return cols.transpose(1, 2, 0, 3, 4).reshape((h - 1) * (w - 2), c * 6)

@cv.optimize
def rows_of_two(x: cv.i32["A", "B", 2]):
    return x.transpose(1, 0, 2) * 3
'''


@pytest.fixture(scope="module")
def m(tmp_path_factory):
    return compile_source(tmp_path_factory.mktemp("loop_nests"), SOURCE)


small = st.integers(0, 9)
any_size = st.one_of(st.integers(1, 9), st.sampled_from([31, 64, 257, 5000]))


@settings(max_examples=40, deadline=None)
@given(a=small, b=small, c=any_size, seed=st.integers(0, 2**32 - 1))
def test_permuted_rows(m, a: int, b: int, c: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((a, b, c)).astype(np.float32)
    y = rng.standard_normal((c, a, b)).astype(np.float32)
    check_exact(m.permuted_add, x, y)


@settings(max_examples=40, deadline=None)
@given(shape=st.tuples(small, small, any_size, st.integers(1, 4)), seed=st.integers(0, 2**32 - 1))
def test_four_axes(m, shape: tuple[int, ...], seed: int) -> None:
    x = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    check_exact(m.four_axes, x)


@settings(max_examples=30, deadline=None)
@given(c=st.integers(1, 40), h=st.integers(2, 40), w=st.integers(3, 40), seed=st.integers(0, 99))
def test_im2col_rows_of_three(m, c: int, h: int, w: int, seed: int) -> None:
    x = np.random.default_rng(seed).standard_normal((c, h, w)).astype(np.float32)
    check_exact(m.im2col, x)


@settings(max_examples=30, deadline=None)
@given(a=st.integers(0, 300), b=st.integers(0, 300), seed=st.integers(0, 99))
def test_rows_of_two(m, a: int, b: int, seed: int) -> None:
    x = np.random.default_rng(seed).integers(-1000, 1000, (a, b, 2)).astype(np.int32)
    check_exact(m.rows_of_two, x)
