"""np.lib.stride_tricks.sliding_window_view (frontend/windows.py) against NumPy: the windows
themselves exactly (every dtype, views as arguments, empty axes, windows as long as their
axis), over one axis, several, the same axis twice and every axis (axis=None); consumers
that fuse with them (a windowed sum, the 1-D convolution users write with np.einsum) against
float64; NumPy's ValueError at the call where a symbolic axis is shorter than its window;
what NumPy refuses, or what cannot be known at compile time, refused at the user's line."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from conftest import check, check_exact, compile_source
from hypothesis import given, settings
from hypothesis import strategies as st
from test_composed_arrays import signature_arrays

import cuvil_aot as cv

SOURCE = '''
import numpy as np
import cuvil_aot as cv
from numpy.lib.stride_tricks import sliding_window_view

TYPES = ["f32[A,B]", "f64[A,B]", "i8[A,B]", "i64[A,B]", "bool_[A,B]", "f16[A,B]"]

@cv.optimize(signatures=TYPES)
def last(x):
    return sliding_window_view(x, 3, axis=-1)

@cv.optimize(signatures=TYPES)
def both(x):
    return sliding_window_view(x, (2, 3))

@cv.optimize(signatures=["f32[A,B]", "i64[A,B]"])
def twice(x):
    return sliding_window_view(x, (2, 1), axis=(0, 0))

@cv.optimize(signatures=["f32[A,B,C]"])
def two_of_three(x):
    return sliding_window_view(x, [2, 2], axis=(2, 0))

@cv.optimize(signatures=["f32[A,B]"])
def window_sums(x):
    return sliding_window_view(x, 4, axis=1).sum(axis=-1) * 0.25

@cv.optimize(signatures=["f32[C,T], f32[O,C,3], f32[O]"])
def conv1d(x, w, b):
    xp = np.pad(x, ((0, 0), (1, 1)))
    return np.einsum("ctk,ock->ot", sliding_window_view(xp, 3, axis=1), w) + b[:, None]

@cv.optimize(signatures=["f32[A,5]"])
def whole_axis(x):
    return np.lib.stride_tricks.sliding_window_view(x, 5, axis=1)
'''


@pytest.fixture(scope="module")
def m(tmp_path_factory):
    return compile_source(tmp_path_factory.mktemp("windows"), SOURCE)


SIGS = ["f32[A,B]", "f64[A,B]", "i8[A,B]", "i64[A,B]", "bool_[A,B]", "f16[A,B]"]
lengths = st.integers(0, 6)


@settings(max_examples=40, deadline=None)
@given(data=st.data(), a=lengths, b=lengths, sig=st.sampled_from(SIGS))
def test_windows_are_numpys(m, data: st.DataObject, a: int, b: int, sig: str) -> None:
    """Shorter axes than the windows included: NumPy's ValueError at the call."""
    (x,) = signature_arrays(data, sig, {"A": a, "B": b})
    check_exact(m.last, x)
    check_exact(m.both, x)
    if sig in ("f32[A,B]", "i64[A,B]"):
        check_exact(m.twice, x)


@settings(max_examples=25, deadline=None)
@given(data=st.data(), a=lengths, b=st.integers(1, 3), c=lengths)
def test_windows_over_two_of_three_axes(m, data: st.DataObject, a: int, b: int, c: int) -> None:
    (x,) = signature_arrays(data, "f32[A,B,C]", {"A": a, "B": b, "C": c})
    check_exact(m.two_of_three, x)


@settings(max_examples=25, deadline=None)
@given(data=st.data(), a=st.integers(0, 5), b=st.integers(3, 40))
def test_fused_window_sums(m, data: st.DataObject, a: int, b: int) -> None:
    (x,) = signature_arrays(data, "f32[A,B]", {"A": a, "B": b})
    check(m.window_sums, np.nan_to_num(x, nan=0.5, posinf=2.0, neginf=-2.0))


@settings(max_examples=20, deadline=None)
@given(c=st.integers(1, 6), t=st.integers(1, 70), o=st.integers(1, 9),
       seed=st.integers(0, 2**32 - 1))
def test_convolution_as_users_write_it(m, c: int, t: int, o: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    args = [rng.standard_normal(s).astype(np.float32) for s in ((c, t), (o, c, 3), (o,))]
    check(m.conv1d, *args)


def test_window_as_long_as_its_axis(m) -> None:
    x = np.arange(15, dtype=np.float32).reshape(3, 5)
    check_exact(m.whole_axis, x)
    assert m.whole_axis(x).shape == (3, 1, 5)


REFUSED = '''
import numpy as np
import cuvil_aot as cv
from numpy.lib.stride_tricks import sliding_window_view

@cv.optimize
def negative(x: cv.f32["N"]):
    return sliding_window_view(x, -1)

@cv.optimize
def missing(x: cv.f32["A", "B"]):
    return sliding_window_view(x, 2)

@cv.optimize
def mismatched(x: cv.f32["A", "B"]):
    return sliding_window_view(x, (2, 2), axis=1)

@cv.optimize
def too_long(x: cv.f32[4]):
    return sliding_window_view(x, 5)

@cv.optimize
def run_time(x: cv.f32["N"], w: int):
    return sliding_window_view(x, w)

@cv.optimize
def writeable(x: cv.f32["N"]):
    return sliding_window_view(x, 2, writeable=True)

@cv.optimize
def huge(x: cv.f32["N"]):
    return sliding_window_view(x, 100)
'''


def test_refused_at_the_users_line(tmp_path: Path) -> None:
    mod = compile_source(tmp_path, REFUSED)
    x = np.ones(8, np.float32)
    cases = [
        (lambda: mod.negative(x), "cannot contain negative values"),
        (lambda: mod.missing(np.ones((3, 3), np.float32)), "must provide window_shape for all"),
        (lambda: mod.mismatched(np.ones((3, 3), np.float32)), "matching length window_shape"),
        (lambda: mod.too_long(np.ones(4, np.float32)), "cannot be larger than input array"),
        (lambda: mod.run_time(x, 2), "must be ints known at compile time"),
        (lambda: mod.writeable(x), "writeable=True"),
        (lambda: mod.huge(np.ones(200, np.float32)), "windows of 1 to 64 elements"),
    ]
    for call, message in cases:
        with pytest.raises(cv.CompileError, match=message) as e:
            call()
        assert "^" in str(e.value)
