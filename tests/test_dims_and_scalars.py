"""Dimensions are numbers, scalars go in and out, NumPy scalars are strongly typed (NEP 50).

Issue "What NumPy accepts compiles", items 2 and 3: ``x.shape[i]``, ``len(x)``, ``x.size``
in any scalar arithmetic (``D ** 0.5``, ``/``, ``np.sqrt``, ``math.sqrt``, ``float()``,
comparisons), their results in array expressions; functions of Python scalars and 0-d
results returned as NumPy returns them; ``np.sqrt(2.0)`` an np.float64, not a Python
float. Every result is judged against NumPy: the same type and dtype as NumPy on the real
dtypes, values against NumPy in float64, out= arrays poisoned before the call.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from conftest import assert_close, load_source, poisoned, to64
from hypothesis import given, settings
from hypothesis import strategies as st

from cuvil_aot.compiler import pipeline

SOURCE = '''
import math
import numpy as np
import cuvil_aot as cv

SCALE = np.float32(0.5)


@cv.optimize
def scale_pow(q: cv.f32["N", "D"], k: cv.f32["M", "D"]):
    return (q @ k.T) * (1.0 / q.shape[1] ** 0.5)


@cv.optimize
def scale_np(q: cv.f32["N", "D"], k: cv.f32["M", "D"]):
    return (q @ k.T) * (1 / np.sqrt(q.shape[1]))        # an np.float64: float64 result


@cv.optimize
def scale_math(q: cv.f32["N", "D"], k: cv.f32["M", "D"]):
    s = (q @ k.T) / math.sqrt(k.shape[-1])
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


@cv.optimize(signatures=["f32[N, M]", "f64[N, M]", "f16[N, M]", "i32[N, M]", "i64[N, 3]"])
def by_dims(x):
    n, m = x.shape
    return (x / x.shape[0], x * len(x), x / float(x.size), x * (x.ndim / m),
            x + m // 2, x - int(n ** 0.5), x * (-n % 3), x * abs(m - n), x * (n * 0.5),
            x * (len(x.shape) + sum(x.shape) + math.prod(x.shape) + pow(m, 2)))


@cv.optimize
def dims_compare(x: cv.f32["N", "2H"]):
    n, d = x.shape
    if d % 2 == 0 and n + 1 > n and x.size >= 0 and x.shape == (n, d):  # for every size
        y = x * 2.0
    else:
        y = x
    small = 1.0 if n < 4 else 0.5                    # known at run time: picked per call
    return (y * small, np.where(d > n, x, -x), x * (n == d), x * max(n, d // 2, 3),
            x * (not n > 2), x * (n > 1 and d or 7), x * (0 < n <= d < 9))  # chained


@cv.optimize(signatures=["f32[N]", "f64[N]", "f16[N]", "i32[N]"])
def reductions(x):
    return x.sum(), x.max(), x.mean(), np.min(x)


@cv.optimize
def total(x: cv.f32["N", "M"]):
    return x.sum()


@cv.optimize
def scalar_ufuncs(x: float, n: int):
    return (np.tanh(x), np.exp(n), np.sqrt(x * x), np.maximum(x, n), np.float32(x) * 2,
            x * np.float32(2), np.float64(math.exp(x) / (1 + n * n)),
            np.int64(math.floor(x * 3)), np.int64(math.floor(np.float32(x))),
            np.float64(max(x, n, 0.5)), np.float64(-(x > n) + ~n))


@cv.optimize
def tanh_of(x: float):
    return np.tanh(x)


@cv.optimize
def scalar_and_array(x: cv.f32["N"], s: float):
    return (x * np.tanh(s), x * math.tanh(s), x * np.float32(np.tanh(s)), x * (s > 0),
            np.power(2.0, x), x * np.power(s, 2))


@cv.optimize(signatures=["f32[N]", "f16[N]", "i32[N]"])
def nep50(x):
    return (x * np.sqrt(2.0), x * np.float32(2.0), x + np.float64(1), x * np.sqrt(np.float32(2)),
            x * np.int64(3), x * 2.0, x * SCALE, x * np.exp(1.0))
'''

UNDECIDED = '''
import numpy as np
import cuvil_aot as cv


@cv.optimize
def branch(x: cv.f32["N"]):
    if x.shape[0] > 1:
        return x * 2.0
    return x


@cv.optimize
def same_shape(x: cv.f32["N", "M"]):
    if x.shape == (4, 4):
        return x
    return x * 2.0


@cv.optimize
def sliced(x: cv.f32["N"]):
    return x[: int(len(x) * 0.5)]


@cv.optimize
def loop(x: cv.f32["N"]):
    for _ in range(len(x)):
        x = x + 1.0
    return x
'''


@pytest.fixture(scope="module")
def compiled(tmp_path_factory: pytest.TempPathFactory):
    from conftest import compile_source

    return compile_source(tmp_path_factory.mktemp("dims"), SOURCE)


def _tuple(value: object) -> tuple[object, ...]:
    return value if isinstance(value, tuple) else (value,)


def run(fn: object, *args: object, precision: str | None = None, scale: float = 4.0) -> None:
    """``fn`` against NumPy: each result of the same type (array or NumPy scalar) and dtype
    as NumPy's on the real dtypes; values against NumPy on float64 inputs, at the tolerance
    of ``precision`` (default: the result dtype), into poisoned out= arrays and fresh."""
    py = fn.py_func  # type: ignore[attr-defined]
    with np.errstate(all="ignore"):
        expect = _tuple(py(*args))
        ref = _tuple(py(*to64(list(args))))
    outs = tuple(poisoned(np.shape(e), np.asarray(e).dtype) for e in expect)
    got = _tuple(fn(*args, out=outs if len(outs) > 1 else outs[0]))  # type: ignore[operator]
    assert all(g is o for g, o in zip(got, outs)), "out= arrays are what the call returns"
    fresh = _tuple(fn(*args))  # type: ignore[operator]
    assert len(fresh) == len(expect)
    for f, o, e, r in zip(fresh, outs, expect, ref):
        assert type(f) is type(e), (f, e)
        assert np.asarray(f).dtype == np.asarray(e).dtype, (f, e)
        dtype = np.asarray(e).dtype
        judge = np.dtype(precision) if precision and dtype.kind == "f" else dtype
        r = r if dtype.kind == "f" else e  # ints and bools: NumPy's, exactly
        assert_close(o, r, judge, scale, e)
        assert_close(np.asarray(f), r, judge, scale, e)


def values(draw: st.DrawFn, shape: tuple[int, ...], dtype: str) -> np.ndarray:
    n = int(np.prod(shape))
    if np.dtype(dtype).kind == "i":
        items = draw(st.lists(st.integers(-50, 50), min_size=n, max_size=n))
    else:
        items = draw(st.lists(st.floats(-4, 4, width=16), min_size=n, max_size=n))
    return np.array(items, dtype=dtype).reshape(shape)


sizes = st.integers(1, 7)  # symbolic dimensions, each drawn on its own (1 included)


@settings(max_examples=30, deadline=None)
@given(data=st.data(), n=sizes, m=sizes, d=sizes)
def test_attention_scale(compiled, data, n, m, d):
    """All three spellings of the scale with a symbolic D; 1 / np.sqrt(D) is an np.float64,
    so that product is float64 in NumPy 2 (its matmul still float32: judged as float32)."""
    q, k = values(data.draw, (n, d), "float32"), values(data.draw, (m, d), "float32")
    run(compiled.scale_pow, q, k)
    run(compiled.scale_np, q, k, precision="float32")
    run(compiled.scale_math, q, k)
    assert compiled.scale_np(q, k).dtype == np.float64


@settings(max_examples=30, deadline=None)
@given(data=st.data(), n=sizes, m=sizes)
def test_dims_in_arithmetic(compiled, data, n, m):
    for dtype, shape in (("float32", (n, m)), ("float64", (n, m)), ("float16", (n, m)),
                         ("int32", (n, m)), ("int64", (n, 3))):
        run(compiled.by_dims, values(data.draw, shape, dtype))


@settings(max_examples=30, deadline=None)
@given(data=st.data(), n=st.integers(0, 7), h=st.integers(0, 5))
def test_dims_in_comparisons(compiled, data, n, h):
    run(compiled.dims_compare, values(data.draw, (n, 2 * h), "float32"))


@settings(max_examples=30, deadline=None)
@given(data=st.data(), n=st.integers(0, 9), m=sizes)
def test_scalar_results(compiled, data, n, m):
    """0-d results are NumPy scalars (np.float32 of a float32 sum), in a tuple too; with
    out= the call returns the out= arrays, filled. Empty max/min raise NumPy's ValueError."""
    for dtype in ("float32", "float64", "float16", "int32"):
        x = values(data.draw, (n,), dtype)
        if n == 0:
            with pytest.raises(ValueError):
                compiled.reductions(x)
            continue
        run(compiled.reductions, x, scale=16)
    run(compiled.total, values(data.draw, (n, m), "float32"), scale=16)
    assert type(compiled.total(np.ones((n, m), np.float32))) is np.float32


@settings(max_examples=30, deadline=None)
@given(x=st.floats(-3, 3), n=st.integers(-3, 3))
def test_ufuncs_on_scalar_parameters(compiled, x, n):
    run(compiled.scalar_ufuncs, x, n)
    got = compiled.tanh_of(x)
    assert type(got) is np.float64 and abs(got - np.tanh(x)) <= 1e-15


@settings(max_examples=30, deadline=None)
@given(data=st.data(), n=st.integers(0, 7), s=st.floats(-3, 3))
def test_scalars_with_arrays(compiled, data, n, s):
    run(compiled.scalar_and_array, values(data.draw, (n,), "float32"), s, precision="float32")


@settings(max_examples=30, deadline=None)
@given(data=st.data(), n=st.integers(0, 7))
def test_numpy_scalars_are_strongly_typed(compiled, data, n):
    """x * np.sqrt(2.0) is float64 for a float32 x (NEP 50); np.float32(2.0) stays float32."""
    for dtype in ("float32", "float16", "int32"):
        x = values(data.draw, (n,), dtype)
        run(compiled.nep50, x, precision=None if dtype == "int32" else dtype)
    assert compiled.nep50(np.ones(2, np.float32))[0].dtype == np.float64


def _ir(tmp_path, source: str) -> tuple[str, dict[str, str]]:
    module = load_source(tmp_path, source)
    lowered, log, _ = pipeline.compile_ir(module, pipeline.Options(dump=frozenset({"cse"})))
    return log.dumps.get("cse", ""), lowered.rendered_refusals()


def test_static_dims_fold_at_compile_time(tmp_path):
    source = SOURCE.replace('"N", "D"', '"N", 64').replace('"M", "D"', '"M", 64')
    ir, refused = _ir(tmp_path, source)
    scale_pow = ir[ir.index("func scale_pow"):ir.index("func scale_np")]
    assert "const(0.125)" in scale_pow and "= pow(" not in scale_pow, scale_pow
    assert not refused


def test_scalars_from_dims_are_computed_once_per_call(compiled):
    """The scale is computed by the wrapper (once per call), not in the kernel."""
    sources = compiled.__artifact__.sources
    assert "pow((double)((S_D))" in sources["module.c"]
    kernel = sources["kernels.c"].split("f1_s0")[0]  # scale_pow's
    assert "pow(" not in kernel and "sqrt(" not in kernel and "a->host_0" in kernel


def test_run_time_values_are_refused_in_user_terms(tmp_path):
    _, refused = _ir(tmp_path, UNDECIDED)
    # an if on a run-time condition runs both blocks, returns picked (test_branches.py)
    assert "branch" not in refused and "same_shape" not in refused
    assert "loop" not in refused  # a loop over range(N) runs: test_runtime_loops.py
    assert "sliced" not in refused  # a slice bound the call computes: test_runtime_ints.py
    for text in refused.values():
        assert not re.search(r"\b(Node|Dim|weak)\b", text), text


def test_math_on_constants_still_folds(tmp_path):
    ir, refused = _ir(tmp_path, """
import math
import numpy as np
import cuvil_aot as cv

@cv.optimize
def f(x: cv.f64["N"]):
    return x * (math.sqrt(16) + np.sqrt(4.0) + float(np.float32(0.5)))
""")
    assert not refused and "const(6.5) : float64[N]" in ir


@pytest.mark.gpu
@pytest.mark.parametrize("framework", ["cupy", "torch"])
def test_on_the_gpu(tmp_path_factory, framework):
    """The same functions of arrays on device arrays: the numbers computed once per call
    travel to the CUDA kernels as they do to the CPU ones; 0-d results stay device arrays."""
    from conftest import compile_source
    from gpu_harness import Framework, check_module, device_arch

    fw = Framework(framework)
    parts = re.split(r"\n\n\n(?=@cv)", SOURCE)
    source = "\n\n\n".join(p for p in parts if not re.search(r"def (scalar_ufuncs|tanh_of)\(", p))
    module = compile_source(tmp_path_factory.mktemp("gpu"), source, cuda_archs=(device_arch(),))
    failures = check_module(
        module, fw, seed=7, special=False,
        scale=lambda name, sizes: 1e6 if name == "scale_np" else 16,  # float32 matmul, f64
        sizes_of=lambda rng: {s: int(rng.integers(1, 8)) for s in "NMDH"})
    assert not failures, "\n".join(failures)
