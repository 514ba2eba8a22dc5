"""np.interp (frontend/interpolation.py) against NumPy exactly: increasing sample points
(ties, ±inf, one point, constant and symbolic lengths), values with NaN and ±inf, x of any
shape (0-d, empty) and dtype (float16, float32, float64, int32), left= and right=, and
thousands of random points, where NumPy's slope * (x - xp[j]) + fp[j] rounds its product
(a fused multiply-add would not). NumPy's ValueErrors (no points, lengths that differ)
alike; what cannot be supported is refused at the user's line."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from conftest import check_exact, compile_source
from hypothesis import given, settings
from hypothesis import strategies as st
from test_composed_arrays import check_bits
from test_elementwise import view_of

import cuvil_aot as cv

SOURCE = '''
import numpy as np
import cuvil_aot as cv

SIGS = ["f64[A,B], f64[N], f64[N]", "f32[A,B], f32[N], f64[N]", "f16[A,B], f64[N], f32[N]",
        "i32[A,B], i32[N], f64[N]", "f64[A,B], f64[N], f64[M]"]

@cv.optimize(signatures=SIGS)
def interps(x, xp, fp):
    return (np.interp(x, xp, fp), np.interp(x, xp, fp, left=-1.5),
            np.interp(x, xp, fp, right=np.inf, left=np.float32(7)))

@cv.optimize
def of_0d(x: cv.f64[()], xp: cv.f64["N"], fp: cv.f64["N"], s: float):
    return np.interp(x, xp, fp), np.interp(s, xp, fp, left=s), np.interp(2.5, xp, fp)

@cv.optimize
def constant(x: cv.f64["A"], xp1: cv.f64[1], fp1: cv.f64[1], xp3: cv.f64[3], fp3: cv.f32[3]):
    return np.interp(x, xp1, fp1), np.interp(x, xp3, fp3), np.interp(x, xp1, fp1, 0.5, 2.5)

@cv.optimize
def long(x: cv.f64["A"], xp: cv.f64["N"], fp: cv.f64["N"], x32: cv.f32["A"]):
    return np.interp(x, xp, fp), np.interp(x32, xp, fp)
'''

REFUSED = '''
import numpy as np
import cuvil_aot as cv

@cv.optimize
def periodic(x: cv.f64["A"], xp: cv.f64["N"], fp: cv.f64["N"]):
    return np.interp(x, xp, fp, period=2.0)

@cv.optimize
def lengths(x: cv.f64["A"], xp: cv.f64[3], fp: cv.f64[4]):
    return np.interp(x, xp, fp)

@cv.optimize
def empty(x: cv.f64["A"], xp: cv.f64[0], fp: cv.f64[0]):
    return np.interp(x, xp, fp)

@cv.optimize
def two_d(x: cv.f64["A"], xp: cv.f64["N", 2], fp: cv.f64["N"]):
    return np.interp(x, xp, fp)
'''

DTYPES = {"f16": "float16", "f32": "float32", "f64": "float64", "i32": "int32"}


@pytest.fixture(scope="module")
def m(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    return compile_source(tmp_path_factory.mktemp("interp"), SOURCE)


def _points(data: st.DataObject, dtype: str, n: int) -> np.ndarray:
    """Increasing sample points with ties and infinities, NaN-free (NumPy's contract)."""
    x = np.sort(data.draw(view_of((n,), DTYPES.get(dtype, dtype))))
    if x.dtype.kind == "f":
        x = np.where(np.isnan(x), np.inf, x)
    return np.sort(x)


@settings(max_examples=40, deadline=None)
@given(data=st.data(), n=st.integers(0, 6), a=st.integers(0, 4), b=st.integers(0, 4),
       extra=st.integers(0, 1))
def test_against_numpy(m, data: st.DataObject, n: int, a: int, b: int, extra: int) -> None:
    for sig in m.interps.signatures:
        (xs, _), (ps, _), (fs, _) = (p.rstrip("]").split("[") for p in sig.split(", "))
        x = data.draw(view_of((a, b), DTYPES[xs]))
        size = n + extra if "M" in sig else n  # different lengths: NumPy's ValueError
        fp = data.draw(view_of((size,), DTYPES[fs]))
        check_bits(m.interps, x, _points(data, ps, n), fp)
    xp, fp = _points(data, "f64", n), data.draw(view_of((n,), "float64"))
    for v in (np.nan, -0.0, 1.5, np.inf):
        check_bits(m.of_0d, np.array(v), xp, fp, v)


@settings(max_examples=30, deadline=None)
@given(data=st.data(), a=st.integers(0, 6))
def test_constant_lengths(m, data: st.DataObject, a: int) -> None:
    check_bits(m.constant, data.draw(view_of((a,), "float64")), _points(data, "f64", 1),
               data.draw(view_of((1,), "float64")), _points(data, "f64", 3),
               data.draw(view_of((3,), "float32")))


def test_random_points_round_as_numpy(m) -> None:
    r = np.random.default_rng(5)
    for n in (2, 3, 10, 100):
        xp = np.sort(r.standard_normal(n) * 10)
        fp = r.standard_normal(n) * 100
        x = r.uniform(xp[0] - 1, xp[-1] + 1, 5000)
        x[:n] = xp  # on the points themselves
        check_bits(m.long, x, xp, fp, x.astype(np.float32))


def test_empty_points_raise_numpys_value_error(m) -> None:
    x = np.ones(3)
    check_exact(m.long, x, np.zeros(0), np.zeros(0), x.astype(np.float32))
    with pytest.raises(ValueError, match="array of sample points is empty"):
        m.long(x, np.zeros(0), np.zeros(0), x.astype(np.float32))


def test_refused_at_the_users_line(tmp_path: Path) -> None:
    mod = compile_source(tmp_path, REFUSED)
    x = np.ones(4)
    cases = [
        (lambda: mod.periodic(x, x, x), "period= is not supported"),
        (lambda: mod.lengths(x, x[:3], x), "fp and xp are not of the same length"),
        (lambda: mod.empty(x, x[:0], x[:0]), "array of sample points is empty"),
        (lambda: mod.two_d(x, np.ones((4, 2)), x), "object too deep"),
    ]
    for call, message in cases:
        with pytest.raises(cv.CompileError, match=message) as e:
            call()
        assert "^" in str(e.value)
