"""@optimize(precision=...): the operands of float32 matmuls rounded to TF32, bfloat16 or
float16, accumulated and finished in float32, judged against float64.

Two checks per mode, on fresh random shapes and values:

- exact rounding: the result equals float64 arithmetic on the operands rounded as the mode
  says (NumPy: ml_dtypes.bfloat16, np.float16, ops.round_tf32), within float32's
  accumulation error k * 2^-24 * (|a| @ |b|);
- the documented bound against the unrounded float64 product (README, "Precision"):
  |error| <= (2u + u^2 + k * 2^-24) * (|a| @ |b|), u the mode's unit roundoff (2^-p for p
  significant bits): 2^-8 for bf16, 2^-11 for fp16 and tf32, 0 for fp32 (nothing rounded).
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import compile_source, host_code, load_source
from hypothesis import given, settings
from hypothesis import strategies as st

import cuvil_aot as cv
from cuvil_aot.compiler import pipeline
from cuvil_aot.compiler.gpu_targets import GpuTargets
from cuvil_aot.compiler.ir.ops import round_tf32

ml_dtypes = pytest.importorskip("ml_dtypes")

MODES = ("fp32", "tf32", "bf16", "fp16")
UNIT = {"fp32": 0.0, "tf32": 2.0 ** -11, "bf16": 2.0 ** -8, "fp16": 2.0 ** -11}
ROUND = {"fp32": lambda a: a, "tf32": round_tf32,
         "bf16": lambda a: a.astype(ml_dtypes.bfloat16).astype(np.float32),
         "fp16": lambda a: a.astype(np.float16).astype(np.float32)}


def _source() -> str:
    lines = ["import numpy as np", "import cuvil_aot as cv", ""]
    for mode in MODES:
        lines += [
            f"@cv.optimize(precision={mode!r})",
            f"def linear_{mode}(x: cv.f32['M', 'K'], w: cv.f32['K', 'N'], b: cv.f32['N']):",
            "    return x @ w + b, np.tanh(x @ w)",
            f"@cv.optimize(precision={mode!r}, signatures=['f64[M, K], f64[K, N]'])",
            f"def wide_{mode}(x, w):",
            "    return x @ w",
            f"@cv.optimize(precision={mode!r})",
            f"def looped_{mode}(h: cv.f32['B', 'H'], w: cv.f32['H', 'H'], n: int):",
            "    for _ in range(n):",
            "        h = h @ w",
            "    return h",
        ]
    return "\n".join(lines) + "\n"


SOURCE = _source()
dims = st.integers(1, 40)


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    return compile_source(tmp_path_factory.mktemp("precision"), SOURCE)


def _values(draw, shape, scale):
    seed = draw(st.integers(0, 2 ** 32 - 1))
    return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(np.float32)


def _poisoned_call(fn, *args):
    expect = fn.py_func(*args)
    expect = expect if isinstance(expect, tuple) else (expect,)
    outs = tuple(np.full(np.shape(e), np.nan, np.asarray(e).dtype) for e in expect)
    got = fn(*args, out=outs)
    got = got if isinstance(got, tuple) else (got,)
    assert [g.dtype for g in got] == [np.asarray(e).dtype for e in expect]  # NumPy's dtypes
    return got


@pytest.mark.parametrize("mode", MODES)
@settings(max_examples=25, deadline=None)
@given(data=st.data(), m=dims, k=dims, n=dims)
def test_matmul_operands_rounded_as_the_mode_says(compiled, mode, data, m, k, n):
    x = _values(data.draw, (m, k), data.draw(st.sampled_from([1e-3, 1.0, 30.0])))
    w, b = _values(data.draw, (k, n), 1.0), _values(data.draw, (n,), 1.0)
    out, act = _poisoned_call(getattr(compiled, f"linear_{mode}"), x, w, b)
    x64, w64 = x.astype(np.float64), w.astype(np.float64)
    spread = np.abs(x64) @ np.abs(w64)
    rounded = ROUND[mode](x).astype(np.float64) @ ROUND[mode](w).astype(np.float64)
    accumulation = k * 2.0 ** -24 * spread + 1e-30
    # exactly the documented rounding, accumulated in float32 (the epilogue adds b)
    np.testing.assert_array_less(np.abs(out - (rounded + b)),
                                 accumulation + 2.0 ** -23 * np.abs(rounded + b) + 1e-30)
    # and the documented bound against the unrounded product
    u = UNIT[mode]
    bound = (2 * u + u * u + k * 2.0 ** -24) * spread + 1e-30
    np.testing.assert_array_less(np.abs(out - (x64 @ w64 + b)), bound + 2.0 ** -23 * np.abs(
        x64 @ w64 + b))
    np.testing.assert_allclose(act, np.tanh(out - b), rtol=1e-5, atol=1e-5)  # epilogue in f32


@pytest.mark.parametrize("mode", MODES)
@settings(max_examples=10, deadline=None)
@given(data=st.data(), m=dims, k=dims, n=dims)
def test_float64_matmuls_are_left_as_they_are(compiled, mode, data, m, k, n):
    x = _values(data.draw, (m, k), 1.0).astype(np.float64) / 3
    w = _values(data.draw, (k, n), 1.0).astype(np.float64) / 7
    got, = _poisoned_call(getattr(compiled, f"wide_{mode}"), x, w)
    np.testing.assert_allclose(got, x @ w, rtol=1e-12, atol=1e-12 * k)


@pytest.mark.parametrize("mode", MODES)
@settings(max_examples=10, deadline=None)
@given(data=st.data(), b=dims, h=st.integers(1, 12), n=st.integers(0, 3))
def test_a_run_time_loop_body_takes_the_policy(compiled, mode, data, b, h, n):
    x = _values(data.draw, (b, h), 1.0)
    w = _values(data.draw, (h, h), 1.0) / np.float32(np.sqrt(h))
    got = getattr(compiled, f"looped_{mode}")(x, w, n)
    want, slack = x.astype(np.float64), np.zeros_like(x, np.float64)
    w_read = np.abs(ROUND[mode](w).astype(np.float64))
    for _ in range(n):  # each step's operands rounded; float32 carries in between
        # got's float32 sums may lie across a rounding boundary from want's: its next
        # operand then differs by up to one unit (2u relative); carried through the steps
        slack = (slack + 2 * UNIT[mode] * np.abs(want)) @ w_read + h * 2.0 ** -23 * (
            np.abs(want) @ w_read)
        want = (ROUND[mode](want.astype(np.float32)).astype(np.float64)
                @ ROUND[mode](w).astype(np.float64))
    np.testing.assert_array_less(np.abs(got - want), slack + 2.0 ** -23 * np.abs(want) + 1e-30)


def test_tf32_rounds_to_nearest_ties_away_and_keeps_inf_and_nan(compiled):
    """The C rounding (x @ [[1]] reads round(x) exactly) and NumPy's reference agree on
    ties, the overflow past TF32's largest value, inf and NaN."""
    one_ulp = 2.0 ** -10
    x = np.array([1 + one_ulp / 2, -(1 + one_ulp / 2), 1 + one_ulp / 4, np.inf, np.nan,
                  np.finfo(np.float32).max, 1e-40], np.float32)
    want = np.array([1 + one_ulp, -(1 + one_ulp), 1, np.inf, np.nan, np.inf], np.float32)
    want = np.append(want, round_tf32(x[-1:]))  # a subnormal keeps its top 10 fraction bits
    np.testing.assert_array_equal(round_tf32(x), want)
    got, _ = compiled.linear_tf32(x[:, None], np.ones((1, 1), np.float32),
                                  np.zeros(1, np.float32))
    np.testing.assert_array_equal(got[:, 0], want)


def test_a_bad_precision_names_the_argument_and_the_choices():
    with pytest.raises(ValueError, match=r"precision must be one of 'fp32', 'tf32', 'bf16', "
                       r"'fp16', got 'int8'"):
        cv.optimize(precision="int8")
    with pytest.raises(ValueError, match="precision must be one of"):
        cv.optimize(lambda x: x, precision="bfloat16")


def test_on_the_gpu_every_policy_rounds_its_operands(tmp_path):
    """Compile-only: a bf16-policy unit rounds into bfloat16 (cv_bf16_store) and runs the
    bf16 main loops (tests/test_gpu_bf16.py runs them); tf32's unit rounds with
    cv_tf32_round, fp16's through half, and
    both read TF32 numbers only, so their tensor-core loops take one TF32 product (fp32's
    three: float32 accuracy)."""
    module = load_source(tmp_path, '''
        import cuvil_aot as cv

        @cv.optimize(precision="tf32")
        def t(x: cv.f32["M", "K"], w: cv.f32["K", "N"]):
            return x @ w

        @cv.optimize(precision="bf16")
        def b(x: cv.f32["M", "K"], w: cv.f32["K", "N"]):
            return x @ w

        @cv.optimize(precision="fp16")
        def h(x: cv.f32["M", "K"], w: cv.f32["K", "N"]):
            return x @ w

        @cv.optimize
        def f(x: cv.f32["M", "K"], w: cv.f32["K", "N"]):
            return x @ w
    ''')
    targets = GpuTargets(sass=(90,), ptx=90)
    files = pipeline.generate_sources(module, pipeline.Options(cpu_levels=(1,)), targets)[3]
    assert sorted(n for n in files if n.endswith(".cu")) == [f"kernels_f{i}.cu" for i in range(4)]
    assert "cv_tf32_round(" in files["kernels_f0.cu"]
    assert "(cv_f16)" in files["kernels_f2.cu"]
    for unit, x3 in (("f0", "false"), ("f2", "false"), ("f3", "true")):
        assert f"cv_gemm_tc<true, 64, {x3}>(" in files[f"kernels_{unit}.cu"]
    assert "cv_bf16_round(" in files["kernels_f1.cu"]
    assert "cv_gemm_tiled<float, 128, cv_bf16>(" in files["kernels_f1.cu"]
    assert "cv_gpu_refused(" not in host_code(files)


NORM_SOURCE = """
import numpy as np
import cuvil_aot as cv

@cv.optimize(precision="bf16")
def norm_then_residual(x: cv.f32["B", "H"], g: cv.f32["H"], w: cv.f32["H", "H"]):
    a = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5) * g
    return a + a @ w.T
"""


def test_a_value_read_rounded_and_unrounded_is_computed_once(tmp_path):
    """A LayerNorm's output that a matmul reads rounded and the residual reads as it is:
    one row kernel stores both (as under fp32, plus the rounded copy); the GEMM's epilogue
    loads it rather than recompute the normalization."""
    module = load_source(tmp_path, NORM_SOURCE)
    _, _, functions = pipeline.compile_ir(module, pipeline.Options(cpu_levels=(1,)))
    fn = functions["norm_then_residual"][0][1]
    rows = [g for g in fn.groups if g.kind.name == "ROW"]
    assert len(rows) == 1  # the statistics and the normalization: one kernel
    assert sorted(d.buffer.dtype for d in rows[0].dests) == ["bfloat16", "float32"]
    assert [g.kind.name for g in fn.groups].count("GEMM") == 1


@pytest.fixture(scope="module")
def norm_module(tmp_path_factory):
    return compile_source(tmp_path_factory.mktemp("norm"), NORM_SOURCE)


@settings(max_examples=15, deadline=None)
@given(data=st.data(), b=dims, h=st.integers(2, 40))
def test_a_norm_read_rounded_and_unrounded_matches_float64(norm_module, data, b, h):
    x = _values(data.draw, (b, h), data.draw(st.sampled_from([1e-2, 1.0, 30.0])))
    g, w = _values(data.draw, (h,), 1.0), _values(data.draw, (h, h), 1.0)
    got, = _poisoned_call(norm_module.norm_then_residual, x, g, w)
    x64 = x.astype(np.float64)
    a = (x64 - x64.mean(-1, keepdims=True)) / np.sqrt(x64.var(-1, keepdims=True) + 1e-5) * g
    spread = np.abs(a) @ np.abs(w.T.astype(np.float64))
    u = UNIT["bf16"]  # the bound of the README, plus float32's normalization (~1e-6)
    bound = (2 * u + u * u + h * 2.0 ** -24 + 1e-5) * spread + 1e-5 * np.abs(a) + 1e-30
    np.testing.assert_array_less(np.abs(got - (a + a @ w.T)), bound)

