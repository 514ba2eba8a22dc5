"""Powers, math functions and int() of Python numbers the call knows, against Python and
NumPy themselves on random inputs (the other errors of such numbers:
test_host_scalar_errors.py).

Where Python (NumPy) raises, the call raises the same exception with the same message:
``math.sqrt(-1)``, ``math.log(0)``, ``math.exp(1000)``, ``math.pow(0, -1)``, ``int(inf)``,
``10.0 ** 400``, an integer array to a negative Python int power (not an empty one).
Where Python's answer is one compiled code cannot give, the call raises ValueError
saying so: ``n ** k`` of ints with k negative at the call (a float in Python, an int
compiled), a negative float to a fractional power (a complex number). Elsewhere the
values are Python's and NumPy's: exactly for ints, as NumPy float64 for floats; a
literal negative exponent (``n ** -1``) is a float, as in Python."""

from __future__ import annotations

import math
import re
import warnings

import numpy as np
import pytest
from conftest import check, gpu_build
from hypothesis import given, settings
from hypothesis import strategies as st

from cuvil_aot.compiler.toolchain import nvcc

MATH = ["sqrt", "log", "log1p", "exp", "expm1", "sin", "cos", "tanh", "fabs", "floor", "ceil",
        "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "log2",
        "log10", *(["exp2", "cbrt"] if hasattr(math, "exp2") else [])]

SOURCE = '''
import math
import numpy as np
import cuvil_aot as cv

@cv.optimize(signatures=["f32[N], int, int"])
def int_powers(x, n, k):
    return n ** k, pow(n, k), n ** (len(x) - 2), x * (k ** len(x))

@cv.optimize(signatures=["f32[N], int"])
def literal_powers(x, n):
    return n ** -1, n ** -2, x * (n ** -1), n ** 3, len(x) ** -1.5

@cv.optimize(signatures=["f32[N], int, float", "f32[N], float, int", "f32[N], float, float"])
def float_powers(x, a, b):
    return a ** b, x * (a ** b)

@cv.optimize(signatures=["i8[N], int", "u8[N], int", "i32[N], int", "i64[N], int",
                         "u64[N], int"])
def array_powers(x, k):
    return x ** k, np.power(x, k), x[:1] ** k

@cv.optimize(signatures=["f32[N], float, float"])
def math_pow(x, a, b):
    return math.pow(a, b), x * math.pow(a, b)

@cv.optimize(signatures=["f32[N], float"])
def to_int(x, a):
    return int(a), x * int(a)

@cv.optimize(signatures=["f32[N], int"])
def math_of_ints(x, n):
    return math.sqrt(n), math.log(n), math.log(len(x)), math.sqrt(len(x) - 2)

@cv.optimize(signatures=["f32[N], float, int"])
def guarded(x, a, m):
    y = x
    for t in range(m):
        y = y * math.log(a)
    return y, math.sqrt(a) if a >= 0 else 0.0
''' + "".join(f'''
@cv.optimize(signatures=["f32[N], float"])
def m_{name}(x, a):
    return math.{name}(a), x * math.{name}(a)
''' for name in MATH)

OURS: dict[str, tuple[type[Exception], str]] = {
    "int": (ValueError, "an int to a negative int power is a float in Python"),
    "complex": (ValueError, "a negative number to a fractional power is a complex number in "
                "Python"),
    "past": (OverflowError, "int() of a float past int64's range: Python's int holds it")}

sizes = st.integers(0, 4)
EDGE_FLOATS = [-math.inf, -1e308, -1000.0, -710.0, -2.0, -1.0, -0.5, -0.0, 0.0, 1e-300, 0.5,
               1.0, 2.0, 709.0, 710.0, 1000.0, 1e308, math.inf, math.nan]
floats = st.one_of(st.sampled_from(EDGE_FLOATS), st.floats(-1000, 1000))
exponents = st.one_of(st.sampled_from([-400.0, -2.0, -1.5, -1.0, -0.5, 0.0, 0.5, 1.0, 1.5, 2.0,
                                       3.0, 400.0, math.inf, -math.inf, math.nan]),
                      st.floats(-5, 5))
small_ints = st.integers(-4, 4)


def _floats(seed: int, n: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(n).astype(np.float32)


def _ints(seed: int, n: int, dtype: str) -> np.ndarray:
    info = np.iinfo(dtype)
    low, high = max(int(info.min), -3), min(int(info.max), 3)
    return np.random.default_rng(seed).integers(low, high, n, endpoint=True).astype(dtype)


def python_result(fn: object, *args: object) -> object:
    """What Python (NumPy) gives: its result, or the exception it raises."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")  # NumPy's overflow warnings are not under test
        try:
            return fn.py_func(*args)  # type: ignore[attr-defined]
        except (ZeroDivisionError, OverflowError, ValueError) as exc:
            return exc


def same_as_python(fn: object, *args: object,
                   ours: tuple[type[Exception], str] | None = None) -> None:
    """The compiled ``fn`` against its Python: Python's exception with its message; ours
    (an exception of that type whose message has that text) where the caller says
    Python's answer cannot be given; else the same values (conftest.check)."""
    expected = python_result(fn, *args)
    if isinstance(expected, Exception):
        with pytest.raises(type(expected), match=f"^{re.escape(str(expected))}$"):
            fn(*args)  # type: ignore[operator]
    elif ours is not None:
        with pytest.raises(ours[0], match=re.escape(ours[1])):
            fn(*args)  # type: ignore[operator]
    else:
        check(fn, *args)


def _past_int64(a: float) -> bool:
    return math.isfinite(a) and not -2**63 <= int(a) < 2**63


def _has(result: object, kind: type) -> bool:
    values = result if isinstance(result, tuple) else (result,)
    return any(isinstance(v, kind) for v in values)


@settings(max_examples=60, deadline=None)
@given(size=sizes, n=small_ints, k=small_ints, seed=st.integers(0, 2**16))
def test_an_int_to_an_int_power_known_at_the_call(compiled, size, n, k, seed):
    """An int, or ValueError where Python's is a float (a negative exponent); 0 to a
    negative power raises Python's ZeroDivisionError."""
    x = _floats(seed, size)
    expected = python_result(compiled.int_powers, x, n, k)
    ours = OURS["int"] if _has(expected, float) else None
    same_as_python(compiled.int_powers, x, n, k, ours=ours)


@settings(max_examples=30, deadline=None)
@given(size=sizes, n=small_ints, seed=st.integers(0, 2**16))
def test_a_literal_negative_exponent_makes_a_float(compiled, size, n, seed):
    same_as_python(compiled.literal_powers, _floats(seed, size), n)


@settings(max_examples=80, deadline=None)
@given(size=sizes, a=floats, b=exponents, seed=st.integers(0, 2**16))
def test_float_powers(compiled, size, a, b, seed):
    """Python's OverflowError (``10.0 ** 400``) and ZeroDivisionError; ValueError where
    Python's is a complex number; else Python's float."""
    x = _floats(seed, size)
    for args in ((a, b), (int(max(-8, min(8, a))) if math.isfinite(a) else 2, b),
                 (a, int(max(-8, min(8, b))) if math.isfinite(b) else 2)):
        expected = python_result(compiled.float_powers, x, *args)
        ours = OURS["complex"] if _has(expected, complex) else None
        same_as_python(compiled.float_powers, x, *args, ours=ours)


@settings(max_examples=60, deadline=None)
@given(size=sizes, k=st.integers(-3, 5), dtype=st.sampled_from(["int8", "uint8", "int32",
                                                                 "int64", "uint64"]),
       seed=st.integers(0, 2**16))
def test_an_integer_array_to_a_power_known_at_the_call(compiled, size, k, dtype, seed):
    """NumPy's ValueError for a negative power, not for an empty array (``x[:1]`` of an
    empty x); NumPy's OverflowError for -1 and uint8."""
    same_as_python(compiled.array_powers, _ints(seed, size, dtype), k)


@pytest.mark.parametrize("name", MATH)
@settings(max_examples=40, deadline=None)
@given(size=sizes, a=floats, seed=st.integers(0, 2**16))
def test_math_functions(compiled, name, size, a, seed):
    """math's ValueError (domain) and OverflowError (range) with Python's messages;
    math.floor and math.ceil of inf and nan raise as int() does, past int64 ours."""
    ours = OURS["past"] if name in ("floor", "ceil") and _past_int64(a) else None
    same_as_python(getattr(compiled, f"m_{name}"), _floats(seed, size), a, ours=ours)


@settings(max_examples=60, deadline=None)
@given(size=sizes, a=floats, b=exponents, seed=st.integers(0, 2**16))
def test_math_pow(compiled, size, a, b, seed):
    same_as_python(compiled.math_pow, _floats(seed, size), a, b)


@settings(max_examples=30, deadline=None)
@given(size=st.integers(0, 5), a=floats, n=st.integers(-3, 3), seed=st.integers(0, 2**16))
def test_ints_and_sizes_and_int_of_a_float(compiled, size, a, n, seed):
    x = _floats(seed, size)
    same_as_python(compiled.to_int, x, a, ours=OURS["past"] if _past_int64(a) else None)
    same_as_python(compiled.math_of_ints, x, n)


@settings(max_examples=30, deadline=None)
@given(size=sizes, a=floats, m=st.integers(-1, 2), seed=st.integers(0, 2**16))
def test_only_where_python_runs_it(compiled, size, a, m, seed):
    """A loop with no trip, the side of ``a if c else b`` not taken: no error."""
    same_as_python(compiled.guarded, _floats(seed, size), a, m)


def test_the_messages(compiled):
    """The cases the random ones may miss, and that the tests above can fail."""
    x = np.ones(3, np.float32)
    for fn, args, error in [
            (compiled.m_sqrt, (x, -1.0), ValueError), (compiled.m_log, (x, 0.0), ValueError),
            (compiled.m_log1p, (x, -1.0), ValueError), (compiled.m_sin, (x, math.inf), ValueError),
            (compiled.m_exp, (x, 1000.0), OverflowError),
            (compiled.m_floor, (x, math.nan), ValueError),
            (compiled.math_pow, (x, 0.0, -1.0), ValueError),
            (compiled.math_pow, (x, 10.0, 400.0), OverflowError),
            (compiled.float_powers, (x, 10.0, 400.0), OverflowError),
            (compiled.to_int, (x, math.inf), OverflowError),
            (compiled.math_of_ints, (np.ones(0, np.float32), 1), ValueError),
            (compiled.array_powers, (np.ones(2, np.int8), -1), ValueError)]:
        expected = python_result(fn, *args)
        assert type(expected) is error, (fn, args, expected)
        with pytest.raises(error, match=f"^{re.escape(str(expected))}$"):
            fn(*args)
    assert compiled.array_powers(np.ones(0, np.int8), -1)[0].size == 0
    with pytest.raises(ValueError, match=re.escape(
            "n ** k: an int to a negative int power is a float in Python (the exponent is -2 "
            "here); compiled, an int ** int is an int, since its type is fixed before the "
            "call: write float(n) ** k")):
        compiled.int_powers(x, 3, -2)
    with pytest.raises(ValueError, match=re.escape(
            "n ** (len(x) - 2): an int to a negative int power is a float in Python (the "
            "exponent is -1 here)")):
        compiled.int_powers(np.ones(1, np.float32), 3, 2)
    with pytest.raises(ValueError, match=re.escape("a ** b: " + OURS["complex"][1])):
        compiled.float_powers(x, -8.0, 1 / 3)
    assert isinstance(compiled.literal_powers(x, 2)[0].item(), float)


GPU_SOURCE = '''
import math
import numpy as np
import cuvil_aot as cv

@cv.optimize(signatures=["f32[N], int, float", "i8[N], int, float"])
def checks(x, k, a):
    return x ** k + int(a), x * math.sqrt(a) * math.pow(a, 0.5), x * (a ** a), np.full_like(x, k)
'''


@pytest.mark.skipif(nvcc.find_nvcc() is None, reason="nvcc not found")
def test_the_gpu_path_compiles(tmp_path):
    """The checks in the GPU wrapper's match (nvcc and cc, no device)."""
    gpu_build(tmp_path, GPU_SOURCE)
