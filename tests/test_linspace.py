"""np.linspace (frontend/linspace.py) against NumPy bit for bit: Python floats and ints and
0-d float32/float16/float64 arrays as start and stop (NaN, ±inf, ±0.0, subnormals whose
step underflows to zero: NumPy's other formula), counts 0, 1, 2 and many, endpoint,
retstep (NaN where no step is defined), dtype (an integer dtype floored) and axis; the
products never fused into a multiply-add with the start (1 ulp off NumPy's). What NumPy
refuses, or what cannot be known at compile time, is refused at the user's line."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from conftest import compile_source
from hypothesis import given, settings
from hypothesis import strategies as st
from test_composed_arrays import assert_same_bits

import cuvil_aot as cv

SOURCE = '''
import numpy as np
import cuvil_aot as cv

@cv.optimize
def spaced(s: float, t: float):
    return (np.linspace(s, t, 7), np.linspace(s, t), np.linspace(s, t, 9, endpoint=False),
            np.linspace(s, t, 1), np.linspace(s, t, 0), np.linspace(s, t, 1, endpoint=False),
            np.linspace(s, t, 2), np.linspace(s, t, 5, dtype=np.float32),
            np.linspace(s, t, num=1000, axis=-1), np.linspace(t, s, 3, True, False, None, 0))

@cv.optimize
def with_step(s: float, t: float):
    return np.linspace(s, t, 9, endpoint=False, retstep=True)

@cv.optimize
def with_no_step(s: float, t: float):
    return np.linspace(s, t, 1, retstep=True)

@cv.optimize
def typed(s: cv.f32[()], t: cv.f32[()], u: cv.f16[()], v: cv.f16[()], w: float):
    return (np.linspace(s, t, 1001), np.linspace(s, w, 33), np.linspace(u, v, 3001),
            np.linspace(u, w, 17, endpoint=False), np.linspace(s, v, 12))

@cv.optimize
def of_ints(n: int, k: int):
    return (np.linspace(n, k, 11), np.linspace(n, k, 6, dtype=np.int32),
            np.linspace(n, 2.5, 4, dtype=np.int64), np.linspace(0, 10, 6, dtype=int))

@cv.optimize
def constants():
    return np.linspace(0, 1, 11), np.linspace(-2.5, 7.0, 100), np.linspace(1e-320, 2e-320, 4)
'''

REFUSED = '''
import numpy as np
import cuvil_aot as cv

@cv.optimize
def array_start(x: cv.f32["N"]):
    return np.linspace(x, 1.0, 5)

@cv.optimize
def run_time_num(n: int):
    return np.linspace(0.0, 1.0, n)

@cv.optimize
def negative_num(s: float):
    return np.linspace(s, 1.0, -1)

@cv.optimize
def other_axis(s: float):
    return np.linspace(s, 1.0, 5, axis=1)

@cv.optimize
def run_time_endpoint(s: float, e: bool):
    return np.linspace(s, 1.0, 5, endpoint=e)
'''

SPECIAL = [0.0, -0.0, 1.0, -1.0, np.nan, np.inf, -np.inf, 5e-324, -1e-320, 1e308, -1e308]
numbers = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.sampled_from(SPECIAL),
                    st.floats(-10, 10))


@pytest.fixture(scope="module")
def m(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    return compile_source(tmp_path_factory.mktemp("linspace"), SOURCE)


def _same(fn: object, *args: object) -> None:
    with np.errstate(all="ignore"):
        want = fn.py_func(*args)  # type: ignore[attr-defined]
    got = fn(*args)  # type: ignore[operator]
    for g, w in zip(got if isinstance(got, tuple) else (got,),
                    want if isinstance(want, tuple) else (want,)):
        assert_same_bits(g, w)


@settings(max_examples=80, deadline=None)
@given(s=numbers, t=numbers)
def test_against_numpy(m, s: float, t: float) -> None:
    for fn in (m.spaced, m.with_step, m.with_no_step):
        _same(fn, s, t)
    with np.errstate(all="ignore"):
        _same(m.typed, np.array(s, np.float32), np.array(t, np.float32),
              np.array(s, np.float16), np.array(t, np.float16), t)


@settings(max_examples=40, deadline=None)
@given(n=st.integers(-10**6, 10**6), k=st.integers(-10**6, 10**6))
def test_of_ints(m, n: int, k: int) -> None:
    _same(m.of_ints, n, k)


def test_random_steps_are_not_fused(m) -> None:
    """Random ends: i * step + start contracted into one FMA is 1 ulp off in about half."""
    r = np.random.default_rng(3)
    for _ in range(50):
        s, t = (float(v) for v in r.standard_normal(2) * 10)
        _same(m.spaced, s, t)
        _same(m.typed, *(np.array(v, np.float32) for v in (s, t)),
              *(np.array(v, np.float16) for v in (s, t)), t)
    _same(m.constants)


def test_refused_at_the_users_line(tmp_path: Path) -> None:
    mod = compile_source(tmp_path, REFUSED)
    cases = [
        (lambda: mod.array_start(np.ones(3, np.float32)), "array start is not supported"),
        (lambda: mod.run_time_num(3), "num must be an int known at compile time"),
        (lambda: mod.negative_num(0.0), "Number of samples, -1, must be non-negative"),
        (lambda: mod.other_axis(0.0), "axis 1 is out of bounds"),
        (lambda: mod.run_time_endpoint(0.0, True), "endpoint must be known at compile time"),
    ]
    for call, message in cases:
        with pytest.raises(cv.CompileError, match=message) as e:
            call()
        assert "^" in str(e.value)


@pytest.mark.parametrize("s, t", [(0.0, 5e-323), (-1e-322, 1e-322), (2.0, 2.0), (-0.0, 0.0),
                                  (1e-320, 1e-320 + 5e-324)])
def test_step_that_underflows(m, s: float, t: float) -> None:
    """Where delta / div is 0 (equal ends, or a subnormal delta), NumPy's
    arange / div * delta: not all zeros."""
    _same(m.spaced, s, t)
    _same(m.with_step, s, t)
