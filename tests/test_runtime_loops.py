"""Loops whose trip count is known only at run time (``for t in range(xs.shape[1])``,
``range(a, b, s)`` of int arguments) against NumPy: an RNN and a GRU over a symbolic
time axis, running sums and maxima (reductions in the body), scalar and array carried
values, a loop-invariant value computed once, a carried variable nothing reads after the
loop, two loops in a row, Python's range semantics (empty ranges leave the carried
values as they were, negative steps, a zero step raising ValueError) and NumPy's
IndexError for an index out of range inside the body; ``while`` loops that count (a
for loop, the counter's value after it as Python leaves it) and others that unroll; what
is refused and where; the same on the GPU, and the CUDA source compiling with nvcc."""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import numpy as np
import pytest
from conftest import check, compile_source, cuda_text, gpu_build
from hypothesis import given, settings
from hypothesis import strategies as st

import cuvil_aot as cv
from cuvil_aot.compiler.toolchain import nvcc

SOURCE = '''
import numpy as np
import cuvil_aot as cv

@cv.optimize(signatures=["f32[B,T,I], f32[B,H], f32[I,H], f32[H,H]",
                         "f64[B,T,I], f64[B,H], f64[I,H], f64[H,H]"])
def rnn_over_time(xs, h0, w_xh, w_hh):
    h = h0
    for t in range(xs.shape[1]):
        h = np.tanh(xs[:, t, :] @ w_xh + h @ w_hh)
    return h

def sigmoid(x):
    return 1 / (1 + np.exp(-x))

@cv.optimize(signatures=["f32[B,T,I], f32[B,H], f32[I,H], f32[H,H], f32[I,H], f32[H,H]",
                         "f64[B,T,I], f64[B,H], f64[I,H], f64[H,H], f64[I,H], f64[H,H]"])
def gru(xs, h0, w_z, u_z, w_h, u_h):
    h = h0
    u_h2 = u_h * 0.5  # computed once, before the loop
    for t in range(xs.shape[1]):
        x = xs[:, t, :]
        z = sigmoid(x @ w_z + h @ u_z)
        c = np.tanh(x @ w_h + (z * h) @ u_h2)
        h = (1 - z) * h + z * c
    return h @ u_z.T, h

@cv.optimize(signatures=["f32[T,D]", "f64[T,D]"])
def running(x):
    s = np.zeros(x.shape[1], x.dtype)
    m = np.zeros((), x.dtype)
    for t in range(x.shape[0]):
        s = s + x[t]
        m = np.maximum(m, np.max(np.abs(x[t] - s.mean())))
    return s, m

@cv.optimize(signatures=["f64[N], int, int, int", "f32[N], int, int, int"])
def stepped(x, a, b, s):
    acc = np.zeros((), x.dtype)
    count = 0
    for t in range(a, b, s):
        acc = acc + x[t] * t
        count = count + t
    return acc, count

@cv.optimize(signatures=["f32[N], int", "f64[N], int"])
def python_numbers(x, n):
    s = 1.0
    k = 0
    h = x
    for t in range(n):
        s = s * 0.5
        k = k + t
        h = h + x * s  # s stays a Python float: x's dtype, as in NumPy
    return x * s + k, h, k

@cv.optimize(signatures=["f32[N], int", "f64[N,M], int"])
def repeat(x, n):
    for _ in range(1, n):
        x = x * 2
    return x

@cv.optimize(signatures=["f64[N], int"])
def fibonacci(x, n):
    a = x
    b = x + 1
    for _ in range(n):
        a, b = b, a + b  # b is carried but not read after the loop
    return a

@cv.optimize(signatures=["f64[B,T,I], f64[B]"])
def shadowed(xs, x):
    h = x * 2
    for t in range(xs.shape[1]):
        x = xs[:, t, :]  # a temporary of the body, not carried: its shape differs
        h = h + x.sum(axis=1)
    return h

@cv.optimize(signatures=["f32[B,T,H], f32[B,H]", "f64[B,T,H], f64[B,H]"])
def two_loops(xs, h0):
    h = h0
    for t in range(xs.shape[1]):
        h = h / (1 + np.sum(np.abs(h), axis=1, keepdims=True)) + xs[:, t]
    g = h * 2
    for t in range(xs.shape[1] - 1, -1, -1):
        g = np.tanh(g + xs[:, t].T.T)
    return g, h

@cv.optimize(signatures=["f32[B,T], int, int", "f64[B,T], int, int"])
def while_counts(x, i, n):
    acc = x[:, 0] * 0
    while i < n:
        acc = acc * 0.5 + x[:, i]
        i += 1
        acc = acc + i  # the counter after its step
    return acc, i

@cv.optimize(signatures=["f32[N], int", "f64[N], int"])
def while_halving(x, n):
    steps = 0
    while n > 1:  # no count: its trips counted on n before the kernels
        x = np.tanh(x) + n
        n //= 2
        steps += 1
    return x, n, steps

@cv.optimize(signatures=["f64[N], float, float"])
def while_doubling(x, a, limit):
    while 0 < a < limit:
        x = x * 0.5 + a
        a = a * 2.0
    return x, a

@cv.optimize(signatures=["f32[N], int, int"])
def euclid(x, a, b):
    while b != 0:
        a, b = b, a % b
        x = x + a
    return x, a

@cv.optimize(signatures=["f32[N], int, int"])
def while_counts_down(x, a, b):
    while b <= a:  # the counter on the right, stepping down past the bound
        x = np.tanh(x) + a
        a -= 2
    return x, a
'''

dims = st.integers(0, 5)
SIZES = st.fixed_dictionaries({d: dims for d in ("B", "T", "I", "H", "D", "N", "M")})


def _arrays(fn, seed: int, sizes: dict[str, int], scale: float = 0.5):
    """Each signature's array arguments, their dims from ``sizes``."""
    rng = np.random.default_rng(seed)
    for sig in fn.signatures:
        arrays = []
        for kind, spec in re.findall(r"(\w+)\[([^\]]*)\]", sig):
            shape = tuple(sizes[d.strip()] for d in spec.split(","))
            dtype = {"f32": "float32", "f64": "float64"}[kind]
            arrays.append((rng.standard_normal(shape) * scale).astype(dtype))
        yield arrays


def check_or_raise(fn, *args) -> None:
    """check(), or NumPy's IndexError where NumPy raises one."""
    try:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fn.py_func(*args)
    except IndexError as exc:
        with pytest.raises(IndexError, match=re.escape(str(exc))):
            fn(*args)
        return
    except (ValueError, TypeError, ZeroDivisionError):
        pass  # check() expects the same error
    check(fn, *args)


@settings(max_examples=40, deadline=None)
@given(sizes=SIZES, seed=st.integers(0, 2**16))
def test_rnn_over_time(compiled, sizes, seed):
    """T = 0 returns h0 itself (a copy of it); T = 1 one step; symbolic dims from 0."""
    for arrays in _arrays(compiled.rnn_over_time, seed, sizes):
        check(compiled.rnn_over_time, *arrays, scale=4.0)


@settings(max_examples=30, deadline=None)
@given(sizes=SIZES, seed=st.integers(0, 2**16))
def test_gru(compiled, sizes, seed):
    for arrays in _arrays(compiled.gru, seed, sizes):
        check(compiled.gru, *arrays, scale=8.0)


@settings(max_examples=30, deadline=None)
@given(sizes=SIZES, seed=st.integers(0, 2**16))
def test_running_sum_and_max(compiled, sizes, seed):
    for arrays in _arrays(compiled.running, seed, sizes, scale=2.0):
        check(compiled.running, *arrays, scale=8.0)


@settings(max_examples=80, deadline=None)
@given(sizes=SIZES, seed=st.integers(0, 2**16), a=st.integers(-8, 8), b=st.integers(-8, 8),
       s=st.integers(-3, 3))
def test_range_start_stop_step(compiled, sizes, seed, a, b, s):
    """Negative steps, empty ranges, a zero step (ValueError) and out-of-range indices."""
    for arrays in _arrays(compiled.stepped, seed, sizes):
        check_or_raise(compiled.stepped, *arrays, a, b, s)


@settings(max_examples=30, deadline=None)
@given(sizes=SIZES, seed=st.integers(0, 2**16), n=st.integers(-3, 6))
def test_int_trip_count(compiled, sizes, seed, n):
    for arrays in _arrays(compiled.repeat, seed, sizes):
        check(compiled.repeat, *arrays, n)
    for arrays in _arrays(compiled.fibonacci, seed, sizes):
        check(compiled.fibonacci, *arrays, n)


@settings(max_examples=30, deadline=None)
@given(sizes=SIZES, seed=st.integers(0, 2**16), n=st.integers(-2, 6))
def test_python_numbers_stay_python_numbers(compiled, sizes, seed, n):
    """A Python float or int the loop carries keeps NumPy's weak promotion, in the body
    and after it: float32 arrays stay float32 (NEP 50)."""
    for arrays in _arrays(compiled.python_numbers, seed, sizes):
        check(compiled.python_numbers, *arrays, n)
        out, h, _ = compiled.python_numbers(*arrays, n)
        assert out.dtype == h.dtype == arrays[0].dtype


@settings(max_examples=60, deadline=None)
@given(sizes=SIZES, seed=st.integers(0, 2**16), i=st.integers(-8, 8), n=st.integers(-8, 8))
def test_while_loops_that_count(compiled, sizes, seed, i, n):
    """Empty and negative ranges, the counter after the loop as Python leaves it, and
    NumPy's IndexError for an index out of range inside the body, also where the array
    is empty along another axis (checked before the body's kernels, each iteration)."""
    for arrays in _arrays(compiled.while_counts, seed, sizes):
        check_or_raise(compiled.while_counts, *arrays, i, n)
    for arrays in _arrays(compiled.while_counts_down, seed, sizes):
        check(compiled.while_counts_down, *arrays, i, n)


@settings(max_examples=60, deadline=None)
@given(sizes=SIZES, seed=st.integers(0, 2**16), n=st.integers(-3, 300),
       a=st.floats(-1.0, 8.0), limit=st.floats(-1.0, 1e6), b=st.integers(-50, 50))
def test_while_loops_that_do_not_count(compiled, sizes, seed, n, a, limit, b):
    """A condition on numbers the body updates from numbers: trips counted at the call,
    the numbers after the loop as Python leaves them."""
    for arrays in _arrays(compiled.while_halving, seed, sizes):
        check(compiled.while_halving, *arrays, n)
    for arrays in _arrays(compiled.while_doubling, seed, sizes):
        check(compiled.while_doubling, *arrays, a, limit)
    for arrays in _arrays(compiled.euclid, seed, sizes):
        check(compiled.euclid, *arrays, n, b)


UNROLLED = '''
import numpy as np
import cuvil_aot as cv

@cv.optimize(signatures=["f64[N]"])
def while_unrolls(x):
    s = 64
    while s > 1:  # no count (s //= 2): known now, unrolled
        x = x * 0.5 + s
        s = s // 2
    i = 0
    while i < 3:
        j = i
        while j >= 0:
            x = x * 0.9 + j
            j -= 1
        i += 1
    return x, i, j

@cv.optimize(signatures=["f64[N]"])
def while_pops(x):
    q = [x, x * 2, x * 3, x * 4]
    i = 0
    while i < len(q):  # the body shortens q: no count, unrolled as Python runs it
        x = x + q.pop()
        i += 1
    return x, i
'''


@pytest.fixture(scope="module")
def unrolled(tmp_path_factory):
    return compile_source(tmp_path_factory.mktemp("unrolled_while"), UNROLLED)


@settings(max_examples=20, deadline=None)
@given(n=dims, seed=st.integers(0, 2**16))
def test_while_loops_known_now_unroll(unrolled, n, seed):
    """A condition known at compile time unrolls (a nested counted loop among them)."""
    x = np.random.default_rng(seed).standard_normal(n)
    check(unrolled.while_unrolls, x)
    check(unrolled.while_pops, x)


@settings(max_examples=20, deadline=None)
@given(sizes=SIZES, seed=st.integers(0, 2**16))
def test_a_temporary_shadowing_a_name(compiled, sizes, seed):
    for arrays in _arrays(compiled.shadowed, seed, sizes):
        check(compiled.shadowed, *arrays, scale=4.0)


@settings(max_examples=30, deadline=None)
@given(sizes=SIZES, seed=st.integers(0, 2**16))
def test_two_loops_in_a_row(compiled, sizes, seed):
    for arrays in _arrays(compiled.two_loops, seed, sizes):
        check(compiled.two_loops, *arrays, scale=8.0)


def test_empty_loop_returns_the_initial_value(compiled):
    h0 = np.arange(6, dtype=np.float32).reshape(2, 3)
    xs = np.zeros((2, 0, 4), np.float32)
    got = compiled.rnn_over_time(xs, h0, np.ones((4, 3), np.float32),
                                 np.ones((3, 3), np.float32))
    np.testing.assert_array_equal(got, h0)
    assert not np.shares_memory(got, h0)


def test_zero_step_raises_value_error(compiled):
    with pytest.raises(ValueError, match="range\\(\\) arg 3 must not be zero"):
        compiled.stepped(np.zeros(3), 0, 3, 0)


def test_index_error_inside_the_loop(compiled):
    with pytest.raises(IndexError, match="index 3 is out of bounds for axis 0 with size 3"):
        compiled.stepped(np.zeros(3), 0, 5, 1)


def test_the_body_runs_in_a_c_loop(compiled):
    """The body's kernels are generated once and run in a loop of the exec function."""
    module_c = compiled.__artifact__.sources["module.c"]
    assert "for (int64_t it = 0; it < S_loop" in module_c
    assert "range() arg 3 must not be zero" in module_c


REFUSED = '''
import numpy as np
import cuvil_aot as cv

@cv.optimize
def reads_index_after(x: cv.f32["N"], n: int):
    for t in range(n):
        x = x + 1
    return x * t

@cv.optimize
def breaks(x: cv.f32["N"], n: int):
    for t in range(n):
        x = x + 1
        break
    return x

@cv.optimize
def changes_shape(x: cv.f32["N"], n: int):
    s = 0.0
    for t in range(n):
        s = s + x
    return s

@cv.optimize
def nested(x: cv.f32["N"], n: int):
    for t in range(n):
        for u in range(t):
            x = x + 1
    return x

@cv.optimize
def appends(x: cv.f32["N"], n: int):
    out = []
    for t in range(n):
        out.append(x * t)
    return np.stack(out)

@cv.optimize
def index_slice(x: cv.f32["N", "M"], n: int):
    s = x[:, 0]
    for t in range(n):
        s = s + x[:, t:t + 2].sum(axis=1)
    return s

@cv.optimize
def array_bound(x: cv.f32["N"], k: cv.i64["K"]):
    for t in range(k.sum()):
        x = x + 1
    return x

@cv.optimize
def reads_temporary_after(xs: cv.f32["B", "T"], x: cv.f32["B", "B"]):
    for t in range(xs.shape[1]):
        x = xs[:, t]
    return x

@cv.optimize
def loops_forever(x: cv.f32["N"]):
    while True:
        x = x + 1
    return x

@cv.optimize
def halves(x: cv.f32["N"], n: int):
    while n > 1:
        x = x + 1
        n = n - x.sum()
    return x

@cv.optimize
def data_bound(x: cv.f32["N"]):
    while x.sum() > 0:
        x = x - 1
    return x
'''


@pytest.fixture(scope="module")
def refused(tmp_path_factory):
    return compile_source(tmp_path_factory.mktemp("refused_loops"), REFUSED)


@pytest.mark.parametrize(("name", "line", "message"), [
    ("reads_index_after", 9, "'t' is the variable of a run-time loop"),
    ("breaks", 15, "'break' inside a loop whose trip count is known only at run time"),
    ("changes_shape", 21, "'s' changes from float64[] to "),
    ("nested", 28, "a run-time loop inside another whose bounds depend on the outer"),
    ("appends", 35, "appending to a list in a run-time loop is not supported"),
    ("index_slice", 42, "a slice whose bounds depend on a run-time loop's variable"),
    ("array_bound", 48, "the bounds of a run-time loop must be computed from int arguments"),
    ("reads_temporary_after", 56, "'x' is assigned in a run-time loop with another dtype"),
    ("loops_forever", 60, "while loop of more than 4096 iterations is too long to unroll"),
    ("halves", 66, "which the loop computes from array data: its trip count must be known"),
    ("data_bound", 73, "this while loop's condition depends on"),
])
def test_refusals_point_at_the_line(refused, name, line, message):
    with pytest.raises(cv.CompileError) as err:
        getattr(refused, name)()
    text = str(err.value)
    assert message in text, text
    assert re.search(rf"\.py:{line}:\d+: error", text), text
    assert "cuvil_aot bug" not in text


# GPU ---------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def gpu_compiled(tmp_path_factory):
    from gpu_harness import device_arch

    return compile_source(tmp_path_factory.mktemp("gpu_runtime_loops"), SOURCE,
                          cuda_archs=(device_arch(),))


INTS = {"rnn_over_time": 0, "gru": 0, "running": 0, "stepped": 3, "repeat": 1,
        "python_numbers": 1,
        "fibonacci": 1, "shadowed": 0, "two_loops": 0, "while_counts": 2,
        "while_halving": 1, "euclid": 2,
        "while_counts_down": 2}


@pytest.mark.gpu
@pytest.mark.parametrize("framework", ["cupy", "torch"])
def test_gpu_against_numpy(gpu_compiled, framework):
    from gpu_harness import Framework, run_check

    fw = Framework(framework)
    rng = np.random.default_rng(5)
    failures = []
    for name, count in sorted(INTS.items()):
        fn = getattr(gpu_compiled, name)
        for view in ("contiguous", "strided", "transposed"):
            sizes = {d: int(rng.choice([0, 1, 3, 7, 40])) for d in "BTIHDNM"}
            for arrays in _arrays(fn, int(rng.integers(1 << 16)), sizes):
                values = [int(v) for v in rng.integers(-6, 6, count)]
                try:
                    with np.errstate(all="ignore"):
                        fn.py_func(*arrays, *values)
                except IndexError:
                    continue
                except (ValueError, TypeError, ZeroDivisionError):
                    pass  # run_check expects the same error
                try:
                    run_check(fn, fw, [*arrays, *values], view, 8.0)
                except Exception as exc:  # noqa: BLE001 - every failure is reported
                    failures.append(f"{name} {view} {sizes} {values}: "
                                    f"{type(exc).__name__}: {str(exc)[:300]}")
    assert not failures, "\n".join(failures)


@pytest.mark.skipif(nvcc.find_nvcc() is None, reason="nvcc not found")
def test_cuda_kernels_compile(tmp_path: Path):
    """The GPU wrapper and kernels of every run-time loop compile (nvcc, no device)."""
    artifact = gpu_build(tmp_path, SOURCE)
    assert not re.search(r"f\d+_s\d+_one\b", cuda_text(artifact.sources))  # never one kernel
