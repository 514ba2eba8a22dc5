"""np.lib.stride_tricks.sliding_window_view (frontend/windows.py) against NumPy: the windows
themselves exactly (every dtype, views as arguments, empty axes, windows as long as their
axis), over one axis, several, the same axis twice and every axis (axis=None); consumers
that fuse with them (a windowed sum, the 1-D convolution users write with np.einsum) against
float64; NumPy's ValueError at the call where a symbolic axis is shorter than its window;
what NumPy refuses, or what cannot be known at compile time, refused at the user's line.
np.convolve and np.correlate in their three modes, either operand the longer (NumPy's
swap), against NumPy exactly for integers and bools (int8 wrapping) and against float64
for floats, mixed dtypes, empty operands (NumPy's ValueError, at the call where symbolic),
and a symbolic operand shorter than the constant one refused at the call for same/valid."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from conftest import check, check_exact, compile_source
from hypothesis import given, settings
from hypothesis import strategies as st
from test_composed_arrays import signature_arrays

import cuvil_aot as cv
from cuvil_aot.errors import SignatureShapeError

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

@cv.optimize(signatures=["f32[A,B]"])
def empty_window(x):
    return sliding_window_view(x, (0, 2))

@cv.optimize(signatures=["f32[N]"])
def long_window(x):
    return sliding_window_view(x, 100).sum(axis=-1)
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


def test_empty_and_long_windows(m) -> None:
    """A window of 0 (an axis grown by one, an empty window axis) and one of 100 elements,
    shorter axes raising NumPy's ValueError at the call."""
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    check_exact(m.empty_window, x)
    assert m.empty_window(x).shape == (4, 3, 0, 2)
    rng = np.random.default_rng(5)
    for n in (99, 100, 101, 257):
        check(m.long_window, rng.standard_normal(n).astype(np.float32))


CONV = '''
import numpy as np
import cuvil_aot as cv

SIGS = ["f32[M], f32[3]", "f64[5], f64[N]", "i8[M], i8[4]", "f32[2], f32[7]",
        "bool_[M], bool_[2]", "i32[M], f32[3]", "i32[M], i32[1]", "i64[6], i64[6]"]

@cv.optimize(signatures=SIGS)
def conv(a, v):
    return np.convolve(a, v), np.convolve(a, v, "same"), np.convolve(a, v, mode="valid")

@cv.optimize(signatures=SIGS)
def corr(a, v):
    return np.correlate(a, v, "full"), np.correlate(a, v, "same"), np.correlate(a, v)

@cv.optimize
def scalar_kernel(a: cv.f32["M"]):
    return np.convolve(a, 2.0), np.convolve(3, a, "same")

@cv.optimize
def scalar_correlate(a: cv.f32["M"]):
    return np.correlate(3, a, "full")
'''


@pytest.fixture(scope="module")
def conv(tmp_path_factory):
    return compile_source(tmp_path_factory.mktemp("convolve"), CONV)


def _operand(data: st.DataObject, spec: str, length: int) -> np.ndarray:
    short, dims = spec.rstrip("]").split("[")
    n = int(dims) if dims.isdigit() else length
    (x,) = signature_arrays(data, f"{short}[{n}]", {})
    return np.nan_to_num(x, nan=1.5, posinf=3.0, neginf=-3.0) if x.dtype.kind == "f" else x


CONV_SIGS = ["f32[M], f32[3]", "f64[5], f64[N]", "i8[M], i8[4]", "f32[2], f32[7]",
             "bool_[M], bool_[2]", "i32[M], f32[3]", "i32[M], i32[1]", "i64[6], i64[6]"]


@settings(max_examples=60, deadline=None)
@given(data=st.data(), sig=st.sampled_from(CONV_SIGS), n=st.integers(0, 12))
def test_convolve_and_correlate_are_numpys(conv, data: st.DataObject, sig: str, n: int) -> None:
    a_spec, v_spec = sig.split(", ")
    a, v = _operand(data, a_spec, n), _operand(data, v_spec, n)
    la, lv = len(a), len(v)
    symbolic_shorter = ("M" in a_spec and la < lv) or ("N" in v_spec and lv <= la)
    for fn in (conv.conv, conv.corr):
        if symbolic_shorter and la and lv:  # same/valid: built for the symbolic the longer
            with pytest.raises(SignatureShapeError, match="built for the operand"):
                fn(a, v)
        elif a.dtype.kind in "iub" and v.dtype.kind in "iub":
            check_exact(fn, a, v)
        else:
            check(fn, a, v)


def test_numbers_as_operands(conv) -> None:
    """convolve takes a number as one element; correlate refuses it, as NumPy's does."""
    check(conv.scalar_kernel, np.arange(5, dtype=np.float32) - 2)
    with pytest.raises(cv.CompileError, match="too small depth"):
        conv.scalar_correlate(np.ones(3, np.float32))


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
def written(x: cv.f32["N"]):
    w = sliding_window_view(x, 2)
    w[0, 0] = 1.0
    return w

@cv.optimize
def both_symbolic(x: cv.f32["N"], y: cv.f32["M"]):
    return np.convolve(x, y)

@cv.optimize
def two_d(x: cv.f32["N", 2], y: cv.f32[3]):
    return np.correlate(x, y)

@cv.optimize
def bad_mode(x: cv.f32["N"], y: cv.f32[3]):
    return np.convolve(x, y, "middle")

@cv.optimize
def empty_kernel(x: cv.f32["N"], y: cv.f32[0]):
    return np.convolve(x, y)
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
        (lambda: mod.written(x), "a view of another array"),  # NumPy: read-only
        (lambda: mod.both_symbolic(x, x), "length must be known at compile time"),
        (lambda: mod.two_d(np.ones((4, 2), np.float32), np.ones(3, np.float32)),
         "object too deep"),
        (lambda: mod.bad_mode(x, np.ones(3, np.float32)), "mode must be one of"),
        (lambda: mod.empty_kernel(x, np.ones(0, np.float32)), "v cannot be empty"),
    ]
    for call, message in cases:
        with pytest.raises(cv.CompileError, match=message) as e:
            call()
        assert "^" in str(e.value)
