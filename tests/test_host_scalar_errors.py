"""Python's and NumPy's errors on numbers the call knows before any kernel runs, against
Python and NumPy themselves on random inputs: a division (``/``, ``//``, ``%``, ``0 **
-1``) of Python numbers (dimensions, int and float arguments, arithmetic on them) by one
that is zero at the call raises ZeroDivisionError with the running Python's message;
not where Python does not run it (the branch not taken, a loop with no trip), and not
for NumPy's arrays and scalars (inf or nan there, as NumPy). A Python int known only at
the call out of an integer array's range raises NumPy's OverflowError with its message
in arithmetic (``x + n``, ``np.maximum``, ``x[:1] = n``, an ``np.clip`` bound past the
far end) and as np.full's fill value (a constant one: a compile error with that message),
and not where NumPy computes an answer (comparisons, ``np.where``, a clip bound
past its own end): there the answer is NumPy's, exactly."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest
from conftest import check, gpu_build
from hypothesis import given, settings
from hypothesis import strategies as st

from cuvil_aot.compiler.toolchain import nvcc
from cuvil_aot.errors import CompileError

SOURCE = '''
import numpy as np
import cuvil_aot as cv

@cv.optimize(signatures=["f32[N]", "f64[N]"])
def scale(x):
    return x * (1 / x.shape[0])

@cv.optimize(signatures=["f32[N], int"])
def floor_slice(x, k):
    return x[: x.shape[0] // k]

@cv.optimize(signatures=["f32[N,M], int"])
def size_mod(x, k):
    return x * (x.size % k)

@cv.optimize(signatures=["f32[N], float, float"])
def floats(x, a, k):
    return x * (a / k), x + a // k, x - a % k

@cv.optimize(signatures=["f32[N,D]"])
def inverse_sqrt(x):
    return x * x.shape[-1] ** -0.5

@cv.optimize(signatures=["f32[N], int, float"])
def arithmetic(x, k, a):
    return x * ((len(x) + k) / (k - a)), (x.size * 2) // (k + 1)

@cv.optimize(signatures=["f32[N], int"])
def guarded(x, k):
    if k > 0:
        s = len(x) / k
    else:
        s = 0.0
    return x / k if k != 0 else x, x * (k != 0 and len(x) // k > 1), x * s

@cv.optimize(signatures=["f32[N], int, int"])
def in_a_loop(x, m, k):
    y = x
    for t in range(m):
        y = y * (1 / k)
    return y

@cv.optimize(signatures=["f32[N], int, int"])
def counted(x, m, k):
    while m > 1:
        m = m // k
    return x * m

@cv.optimize(signatures=["f32[N], int"])
def numbers(x, k):
    return len(x) // k, len(x) % k, len(x) / k

@cv.optimize(signatures=["f32[N], int"])
def numpy_values(x, k):
    return x / k, x // k, x % k, np.sum(x) / k

INTS = ["i8[N], int", "u8[N], int", "i16[N], int", "i32[N], int", "i64[N], int",
        "u64[N], int"]

@cv.optimize(signatures=INTS)
def arith(x, n):
    return x + n, n * x, x - n

@cv.optimize(signatures=INTS)
def extrema(x, n):
    return np.maximum(x, n), np.minimum(n, x)

@cv.optimize(signatures=INTS)
def compare(x, n):
    return x < n, x == n, n >= x, x != n

@cv.optimize(signatures=INTS)
def picked(x, n):
    return np.where(x > 1, x, n)

@cv.optimize(signatures=INTS)
def stored(x, n):
    y = x.copy()
    y[:1] = n
    return y

@cv.optimize(signatures=INTS)
def filled(x, n):
    return np.full_like(x, n), np.full(len(x), n, dtype=np.int8), np.full((), n, np.uint8)

@cv.optimize(signatures=["f32[N]"])
def filled_300(x):
    return np.full(x.shape, 300, dtype=np.int8)

@cv.optimize(signatures=["i8[N], int, int", "u8[N], int, int", "i16[N], int, int"])
def clipped(x, lo, hi):
    return np.clip(x, lo, hi), np.clip(x, lo, None), np.clip(x, None, hi)

@cv.optimize(signatures=["i8[N]", "u8[N]"])
def plus_size(x):
    return x + len(x), x * x.shape[0]
'''

sizes = st.integers(0, 5)
divisors = st.one_of(st.just(0), st.integers(-4, 4))
float_divisors = st.one_of(st.sampled_from([0.0, -0.0]), st.floats(-4, 4, allow_nan=False))
EDGES = [-2**63, -2**31 - 1, -2**31, -32769, -32768, -129, -128, -1, 0, 1, 127, 128, 255, 256,
         32767, 32768, 2**31 - 1, 2**31, 2**40, 2**63 - 1]
ints = st.one_of(st.sampled_from(EDGES), st.integers(-300, 300))
INT_DTYPES = ["int8", "uint8", "int16", "int32", "int64", "uint64"]


def _floats(seed: int, shape: tuple[int, ...], dtype: str = "float32") -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def _ints(seed: int, n: int, dtype: str) -> np.ndarray:
    info = np.iinfo(dtype)
    low, high = max(int(info.min), -100), min(int(info.max), 100)
    return np.random.default_rng(seed).integers(low, high, n, endpoint=True).astype(dtype)


def same_as_python(fn: object, *args: object) -> None:
    """The compiled ``fn`` against its Python: Python's (NumPy's) ZeroDivisionError or
    OverflowError with its message, else the same values (conftest.check)."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")  # NumPy's divide warnings are not under test
        try:
            fn.py_func(*args)  # type: ignore[attr-defined]
        except (ZeroDivisionError, OverflowError) as exc:
            with pytest.raises(type(exc), match=f"^{re.escape(str(exc))}$"):
                fn(*args)  # type: ignore[operator]
            return
    check(fn, *args)


@settings(max_examples=30, deadline=None)
@given(n=sizes, seed=st.integers(0, 2**16))
def test_a_size_as_divisor(compiled, n, seed):
    for dtype in ("float32", "float64"):
        same_as_python(compiled.scale, _floats(seed, (n,), dtype))


@settings(max_examples=40, deadline=None)
@given(n=sizes, m=sizes, k=divisors, seed=st.integers(0, 2**16))
def test_an_int_argument_as_divisor(compiled, n, m, k, seed):
    same_as_python(compiled.floor_slice, _floats(seed, (n,)), k)
    same_as_python(compiled.size_mod, _floats(seed, (n, m)), k)
    same_as_python(compiled.numbers, _floats(seed, (n,)), k)


@settings(max_examples=40, deadline=None)
@given(n=sizes, a=st.floats(-4, 4, allow_nan=False), k=float_divisors,
       seed=st.integers(0, 2**16))
def test_a_float_argument_as_divisor(compiled, n, a, k, seed):
    same_as_python(compiled.floats, _floats(seed, (n,)), a, k)


@settings(max_examples=30, deadline=None)
@given(n=sizes, d=sizes, seed=st.integers(0, 2**16))
def test_zero_to_a_negative_power(compiled, n, d, seed):
    same_as_python(compiled.inverse_sqrt, _floats(seed, (n, d)))


@settings(max_examples=40, deadline=None)
@given(n=sizes, k=divisors, a=st.sampled_from([0.0, 1.0, -2.0, 3.0]), seed=st.integers(0, 2**16))
def test_arithmetic_on_them(compiled, n, k, a, seed):
    same_as_python(compiled.arithmetic, _floats(seed, (n,)), k, a)


@settings(max_examples=40, deadline=None)
@given(n=sizes, k=divisors, m=st.integers(-1, 3), seed=st.integers(0, 2**16))
def test_only_where_python_runs_it(compiled, n, k, m, seed):
    """A branch not taken, a loop with no trip (a counted while loop's body too): no
    error; arrays and NumPy scalars divided by zero give NumPy's inf and nan."""
    x = _floats(seed, (n,))
    same_as_python(compiled.guarded, x, k)
    same_as_python(compiled.in_a_loop, x, m, k)
    same_as_python(compiled.counted, x, m + 1, k if k not in (1, -1) else 0)  # m // 1: forever
    same_as_python(compiled.numpy_values, x, k)


def test_the_messages_are_pythons(compiled):
    """The cases the random ones may miss, and that the tests above can fail."""
    x = np.ones(3, np.float32)
    cases = [(compiled.scale, (np.ones(0, np.float32),), "division by zero"),
             (compiled.floor_slice, (x, 0), "integer division or modulo by zero"),
             (compiled.size_mod, (np.ones((3, 2), np.float32), 0), None),
             (compiled.floats, (x, 1.0, -0.0), None),
             (compiled.inverse_sqrt, (np.ones((3, 0), np.float32),), None),
             (compiled.in_a_loop, (x, 1, 0), None),
             (compiled.counted, (x, 2, 0), None)]
    for fn, args, message in cases:
        try:
            fn.py_func(*args)
        except ZeroDivisionError as exc:
            assert message is None or str(exc) == message
            with pytest.raises(ZeroDivisionError, match=f"^{re.escape(str(exc))}$"):
                fn(*args)
        else:
            pytest.fail(f"{fn.__name__}{args} does not raise in Python")


@settings(max_examples=60, deadline=None)
@given(n=sizes, v=ints, dtype=st.sampled_from(INT_DTYPES), seed=st.integers(0, 2**16))
def test_a_run_time_int_against_a_small_int_array(compiled, n, v, dtype, seed):
    x = _ints(seed, n, dtype)
    for fn in (compiled.arith, compiled.extrema, compiled.compare, compiled.picked,
               compiled.stored, compiled.filled):
        same_as_python(fn, x, v)


@settings(max_examples=60, deadline=None)
@given(n=sizes, lo=ints, hi=ints, dtype=st.sampled_from(["int8", "uint8", "int16"]),
       seed=st.integers(0, 2**16))
def test_clip_bounds(compiled, n, lo, hi, dtype, seed):
    same_as_python(compiled.clipped, _ints(seed, n, dtype), lo, hi)


@settings(max_examples=20, deadline=None)
@given(n=st.sampled_from([0, 1, 127, 128, 255, 256, 300]), dtype=st.sampled_from(["int8", "uint8"]),
       seed=st.integers(0, 2**16))
def test_a_size_against_a_small_int_array(compiled, n, dtype, seed):
    same_as_python(compiled.plus_size, _ints(seed, n, dtype))


def test_overflow_messages_are_numpys(compiled):
    x = np.ones(2, np.int8)
    for fn, args in [(compiled.arith, (x, 300)), (compiled.arith, (x.view(np.uint8), -1)),
                     (compiled.extrema, (x, -129)), (compiled.stored, (x, 128)),
                     (compiled.clipped, (x, 200, 300)), (compiled.filled, (x, 128)),
                     (compiled.filled, (x[:0], -1)),
                     (compiled.plus_size, (np.ones(200, np.int8),))]:
        with pytest.raises(OverflowError) as numpy:
            fn.py_func(*args)
        with pytest.raises(OverflowError, match=f"^{re.escape(str(numpy.value))}$"):
            fn(*args)
    with pytest.raises(CompileError, match=re.escape(
            "OverflowError: Python integer 300 out of bounds for int8")):
        compiled.filled_300(np.ones(2, np.float32))
    assert compiled.compare(x, 300)[0].all()
    assert not compiled.compare(x, -300)[1].any()


GPU_SOURCE = '''
import numpy as np
import cuvil_aot as cv

@cv.optimize(signatures=["f32[N], int", "i8[N], int"])
def both(x, k):
    return x[: x.shape[0] // k] + k, x * (1 / x.shape[0])
'''


@pytest.mark.skipif(nvcc.find_nvcc() is None, reason="nvcc not found")
def test_the_gpu_path_compiles(tmp_path):
    """The checks in the GPU wrapper's match (nvcc and cc, no device)."""
    gpu_build(tmp_path, GPU_SOURCE)
