"""native/include/cuvil_aot/vmath.h against NumPy, at every -march level this CPU runs.

A C shim wraps each function in a plain loop (`void f_arr(const T *x, T *y, int64_t n)`),
built with the flags generated kernels use. Every loop must be reported vectorized by gcc;
results are judged in ulps against float64 NumPy (float32 functions) or an extended-precision
reference (float64 functions: NumPy longdouble, mpmath for erf), on dense sweeps, random bit
patterns, special values and hypothesis-drawn arrays. Outputs are poisoned before each call.
"""

from __future__ import annotations

import ctypes
import math
import platform
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

INCLUDE = Path(__file__).resolve().parents[1] / "native" / "include"
CFLAGS = ["-O3", "-fno-math-errno", "-fno-trapping-math", "-fopenmp-simd"]
TRIG_F64_MAX = 2.0**32  # CV_TRIG_F64_MAX
FMOD_F64_EXACT = 2.0**76  # CV_FMOD_F64_EXACT_QUOTIENT

# /proc/cpuinfo flags each psABI level needs beyond the previous one.
LEVEL_FLAGS = {
    "x86-64": set(),
    "x86-64-v2": {"cx16", "lahf_lm", "popcnt", "sse4_1", "sse4_2", "ssse3"},
    "x86-64-v3": {"avx", "avx2", "bmi1", "bmi2", "f16c", "fma", "abm", "movbe", "xsave"},
    "x86-64-v4": {"avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"},
}


def runnable_levels() -> list[str]:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return []
    m = re.search(r"^flags\s*:(.*)$", text, re.M)
    have = set(m.group(1).split()) if m else set()
    levels, need = [], set()
    for level, flags in LEVEL_FLAGS.items():
        need |= flags
        if need <= have:
            levels.append(level)
    return levels


CC = shutil.which("gcc") or shutil.which("cc")
LEVELS = runnable_levels() if platform.machine() in ("x86_64", "AMD64") else []
pytestmark = pytest.mark.skipif(not (CC and LEVELS), reason="needs gcc and an x86-64 CPU")

F32 = ["expf", "expm1f", "logf", "log1pf", "tanhf", "sigmoidf", "sinf", "cosf", "erff"]
F64 = ["exp", "expm1", "log", "log1p", "tanh", "sigmoid", "sin", "cos", "erf"]
# Bounds the tests hold the functions to: the measured maxima in vmath.h's header rounded up
# (float32 maxima are exhaustive; float64 ones get more room, since samples may miss the worst).
ULP_BOUND = {
    **dict.fromkeys(F32, 2.0),
    "sigmoidf": 2.5,
    **dict.fromkeys(F64, 2.5),
    "sigmoid": 3.0,
}
# (name, C type, arity): every loop of the shim.
SHIM = (
    [(f"cv_{n}", "float", 1) for n in F32]
    + [(f"cv_{n}", "double", 1) for n in F64]
    + [
        (f"cv_{n}", t, 2)
        for t, ns in (
            ("float", ["fmaxf_np", "fminf_np", "floor_dividef", "remainderf"]),
            ("double", ["fmax_np", "fmin_np", "floor_divide", "remainder"]),
            ("int32_t", ["floor_divide_i32", "remainder_i32"]),
            ("int64_t", ["floor_divide_i64", "remainder_i64"]),
        )
        for n in ns
    ]
    + [("cv_signf", "float", 1), ("cv_sign", "double", 1)]
)
# Fused bodies as generated kernels have them: (name, C type, expression over x[i]).
FUSED = [
    ("lstm_gate", "float", "cv_sigmoidf(x[i]) * cv_tanhf(x[i] * 0.5f + 0.25f)"),
    ("gelu_erf", "float", "0.5f * x[i] * (1.0f + cv_erff(x[i] * 0.70710678f))"),
    ("mixed_f64", "double", "cv_exp(-x[i]) + cv_log1p(fabs(x[i])) * cv_sin(x[i])"),
    ("index_math", "int64_t", "cv_floor_divide_i64(x[i], 7) + cv_remainder_i64(x[i], -5)"),
]
# Generated code patches float64 sin/cos arguments beyond CV_TRIG_F64_MAX like this.
PATCHED_TRIG = """
void {f}_patched_arr(const double *restrict x, double *restrict y, int64_t n)
{{
    int big = 0;
    for (int64_t i = 0; i < n; i++) {{
        y[i] = cv_{f}(x[i]);
        big |= !(fabs(x[i]) <= CV_TRIG_F64_MAX);
    }}
    if (big)
        for (int64_t i = 0; i < n; i++)
            if (fabs(x[i]) > CV_TRIG_F64_MAX && isfinite(x[i]))
                y[i] = cv_{f}_big(x[i]);
}}
"""


def shim_source() -> tuple[str, dict[int, str]]:
    lines = ['#include "cuvil_aot/vmath.h"']
    loop_line = {}
    for name, ct, arity in SHIM:
        if arity == 1:
            args, call = f"const {ct} *restrict x", f"{name}(x[i])"
        else:
            args, call = f"const {ct} *restrict a, const {ct} *restrict b", f"{name}(a[i], b[i])"
        loop_line[len(lines) + 1] = name
        lines.append(
            f"void {name}_arr({args}, {ct} *restrict y, int64_t n) "
            f"{{ for (int64_t i = 0; i < n; i++) y[i] = {call}; }}"
        )
    for name, ct, expr in FUSED:
        loop_line[len(lines) + 1] = name
        lines.append(
            f"void {name}_arr(const {ct} *restrict x, {ct} *restrict y, int64_t n) "
            f"{{ for (int64_t i = 0; i < n; i++) y[i] = {expr}; }}"
        )
    lines += [PATCHED_TRIG.format(f="sin"), PATCHED_TRIG.format(f="cos")]
    return "\n".join(lines) + "\n", loop_line


@dataclass
class Shim:
    level: str
    lib: ctypes.CDLL
    vectorized: set[str]

    def __call__(self, name: str, *args: np.ndarray) -> np.ndarray:
        args = tuple(np.ascontiguousarray(a) for a in args)
        y = np.empty_like(args[0])
        y.view(np.uint8)[...] = 0x7F  # poison: NaN for floats, a large value for ints
        fn = getattr(self.lib, name + "_arr")
        ptrs = [ctypes.c_void_p(a.ctypes.data) for a in (*args, y)]
        fn(*ptrs, ctypes.c_int64(y.size))
        return y


@pytest.fixture(scope="session")
def shims(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Shim]:
    d = tmp_path_factory.mktemp("vmath")
    src, loop_line = shim_source()
    (d / "shim.c").write_text(src)
    procs = {}
    for level in LEVELS:
        cmd = [CC, *CFLAGS, f"-march={level}", "-Wall", "-Wextra", "-Werror", "-shared", "-fPIC"]
        cmd += ["-I", str(INCLUDE), str(d / "shim.c"), "-o", str(d / f"{level}.so"), "-lm"]
        cmd += ["-fopt-info-vec-optimized"]
        procs[level] = subprocess.Popen(
            cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
    out = {}
    for level, p in procs.items():
        _, err = p.communicate()
        assert p.returncode == 0, err
        lines = {
            int(m.group(1))
            for m in re.finditer(r"shim\.c:(\d+):\d+: optimized: loop vectorized", err)
        }
        vec = {name for ln, name in loop_line.items() if ln in lines}
        out[level] = Shim(level, ctypes.CDLL(str(d / f"{level}.so")), vec)
    return out


def each_shim(shims: dict[str, Shim]):
    return [shims[level] for level in LEVELS]


# ---- references and error measure ----------------------------------------------------------

EXTENDED = np.finfo(np.longdouble).nmant >= 63


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def _erf_float64(x: np.ndarray) -> np.ndarray:
    return np.frompyfunc(math.erf, 1, 1)(x).astype(np.float64)


REF_NP = {"exp": np.exp, "expm1": np.expm1, "log": np.log, "log1p": np.log1p, "tanh": np.tanh,
          "sigmoid": _sigmoid, "sin": np.sin, "cos": np.cos}  # fmt: skip


def ref32(name: str, x: np.ndarray) -> np.ndarray:
    """float64 reference for a float32 function (the f suffix dropped)."""
    base = name[:-1]
    with np.errstate(all="ignore"):
        x64 = x.astype(np.float64)
        return _erf_float64(x64) if base == "erf" else REF_NP[base](x64)


def ref64(name: str, x: np.ndarray):
    """Extended-precision reference for a float64 function."""
    if name != "erf" and EXTENDED:
        with np.errstate(all="ignore"):
            return REF_NP[name](x.astype(np.longdouble))
    mpmath = pytest.importorskip("mpmath")
    f = {"erf": mpmath.erf, "exp": mpmath.exp, "expm1": mpmath.expm1, "log": mpmath.log,
         "log1p": mpmath.log1p, "tanh": mpmath.tanh, "sin": mpmath.sin, "cos": mpmath.cos,
         "sigmoid": lambda v: 1 / (1 + mpmath.exp(-v))}[name]  # fmt: skip
    with np.errstate(all="ignore"):  # non-finite arguments: the float64 function is exact
        edge = _erf_float64(x) if name == "erf" else REF_NP[name](x.astype(np.float64))
    with mpmath.workdps(40):
        vals = [float(f(mpmath.mpf(float(v)))) if math.isfinite(v) else e for v, e in zip(x, edge)]
    return np.array(vals, dtype=np.float64)


def ulp_error(got: np.ndarray, ref: np.ndarray, ft) -> np.ndarray:
    """|got - ref| in ulps of ft at ref; 0 where got equals ref rounded to ft, inf where
    NaN-ness or infinity differ."""
    fi = np.finfo(ft)
    with np.errstate(all="ignore"):
        r = ref.astype(ft)
        a = np.abs(r)
        a = np.where(np.isinf(a), fi.max, a)
        ulp = np.where(np.abs(ref) < a, np.spacing(np.nextafter(a, ft(0))), np.spacing(a))
        ulp = np.maximum(ulp, fi.smallest_subnormal)
        wide = ref.dtype if ref.dtype.itemsize > 8 else np.float64
        err = (np.abs(got.astype(wide) - ref) / ulp.astype(wide)).astype(np.float64)
    err = np.where(np.isinf(got) | np.isinf(r) | np.isnan(got) | np.isnan(r), np.inf, err)
    same = (got == r) | (np.isnan(got) & np.isnan(r))
    return np.where(same, 0.0, err)


def assert_ulps(name: str, x: np.ndarray, got: np.ndarray, ref, ft, level: str) -> float:
    err = ulp_error(got, ref, ft)
    i = int(np.argmax(err)) if err.size else 0
    worst = float(err[i]) if err.size else 0.0
    assert worst <= ULP_BOUND[name], (
        f"{name} at {level}: {worst:.3f} ulp at x={float(x[i]).hex()}: "
        f"got {got[i]!r}, want {ref[i]!r}"
    )
    return worst


# ---- inputs ----------------------------------------------------------------------------------


def random_bits(ft, n: int, seed: int) -> np.ndarray:
    ut = np.uint32 if ft == np.float32 else np.uint64
    rng = np.random.default_rng(seed)
    return rng.integers(0, np.iinfo(ut).max, n, dtype=ut, endpoint=True).view(ft)


def special_values(ft) -> np.ndarray:
    fi = np.finfo(ft)
    # fmt: off
    edges = [0.0, 1.0, 0.5, 2.0, math.log(2) / 2, math.pi / 4, math.pi / 2, math.pi, 0.625, 0.875,
             0.4, 3.92, 5.92, 6.0, 9.01, 19.07, 20.0, 17.4, 37.5, 88.72, 89.0, 103.97, 104.0,
             709.78, 710.0, 745.13, 746.0, 2.0**22, 2.0**23, 2.0**24, 2.0**32, 2.0**52, 1e30,
             float(fi.max), float(fi.tiny), float(fi.smallest_subnormal), math.sqrt(0.5), 1e-8]
    # fmt: on
    vals = np.array(
        [v for e in edges for v in (e, -e)] + [math.inf, -math.inf, math.nan], np.float64
    )
    with np.errstate(over="ignore"):
        vals = vals.astype(ft)
        near = [np.nextafter(vals, ft(math.inf)), np.nextafter(vals, ft(-math.inf))]
    # float64 arguments that come closest to multiples of pi/2 (continued fractions)
    hard = [
        float.fromhex(h)
        for h in (
            "0x1.6c6cbc45dc8dep+5",
            "0x1.b951f1572eba5p+23",
            "0x1.b951f1572eba5p+29",
            "0x1.5c9508c58aafap+31",
            "0x1.39c6fd67805a7p+18",
            "0x1.921fb54442d18p+0",
        )
    ]
    hard_arr = np.array(hard + [-h for h in hard]).astype(ft)
    return np.concatenate([vals, *near, hard_arr])


def sweep(ft, name: str) -> np.ndarray:
    # fmt: off
    lo, hi = {"exp": (-110, 110), "expm1": (-40, 90), "log": (0, 10), "log1p": (-1, 10),
              "tanh": (-12, 12), "sigmoid": (-110, 110), "erf": (-7, 7)}.get(name, (-40, 40))
    if ft == np.float64:
        lo, hi = {"exp": (-750, 750), "expm1": (-40, 712), "sigmoid": (-750, 750),
                  "tanh": (-22, 22)}.get(name, (lo, hi))
    # fmt: on
    rng = np.random.default_rng(7)
    parts = [
        np.linspace(lo, hi, 200_001),
        np.linspace(-1.5, 1.5, 100_001),
        rng.uniform(-1e4, 1e4, 50_000),
        rng.uniform(-TRIG_F64_MAX, TRIG_F64_MAX, 50_000),
    ]
    if name in ("log", "log1p"):
        parts.append(np.exp(rng.uniform(-700, 700, 100_000)))
    with np.errstate(over="ignore"):
        return np.concatenate(parts).astype(ft)


INPUTS: dict[tuple[str, object], np.ndarray] = {}


def inputs(ft, name: str) -> np.ndarray:
    key = (name, ft)
    if key not in INPUTS:
        n = 400_000 if ft == np.float32 else 200_000
        INPUTS[key] = np.concatenate([sweep(ft, name), random_bits(ft, n, 3), special_values(ft)])
    return INPUTS[key]


# ---- tests -----------------------------------------------------------------------------------


def test_levels_found():
    assert "x86-64" in LEVELS


def test_every_loop_vectorizes(shims):
    for shim in each_shim(shims):
        missing = sorted({name for name, _, _ in SHIM + FUSED} - shim.vectorized)
        assert not missing, f"not vectorized at -march={shim.level}: {missing}"


REF_CACHE: dict[tuple[str, object], np.ndarray] = {}


def cached_ref(name: str, ft, x: np.ndarray):
    key = (name, ft)
    if key not in REF_CACHE:
        REF_CACHE[key] = ref32(name, x) if ft == np.float32 else ref64(name, x)
    return REF_CACHE[key]


@pytest.mark.parametrize("name", F32)
def test_f32_accuracy(shims, name):
    x = inputs(np.float32, name)
    ref = cached_ref(name, np.float32, x)
    for shim in each_shim(shims):
        assert_ulps(name, x, shim(f"cv_{name}", x), ref, np.float32, shim.level)


def f64_inputs(name: str) -> np.ndarray:
    x = inputs(np.float64, name)
    if name == "erf" or not EXTENDED:  # mpmath, element by element: a sample
        x = np.concatenate([x[::97], special_values(np.float64)])
    if name in ("sin", "cos"):
        x = x[~(np.abs(x) > TRIG_F64_MAX)]
    return x


@pytest.mark.parametrize("name", F64)
def test_f64_accuracy(shims, name):
    x = f64_inputs(name)
    ref = cached_ref(name, np.float64, x)
    for shim in each_shim(shims):
        assert_ulps(name, x, shim(f"cv_{name}", x), ref, np.float64, shim.level)


FINITE_OR_NOT = dict(allow_nan=True, allow_infinity=True, allow_subnormal=True)


@pytest.mark.parametrize("name", F32 + F64)
@settings(max_examples=40, deadline=None, database=None)
@given(data=st.data())
def test_hypothesis_arrays(shims, name, data):
    ft = np.float32 if name in F32 else np.float64
    x = data.draw(
        hnp.arrays(
            ft, st.integers(0, 40), elements=st.floats(width=8 * ft().itemsize, **FINITE_OR_NOT)
        )
    )
    if name in ("sin", "cos"):
        x = x[~(np.abs(x) > TRIG_F64_MAX)]
    ref = ref32(name, x) if ft == np.float32 else ref64(name, x)
    for shim in each_shim(shims):
        assert_ulps(name, x, shim(f"cv_{name}", x), ref, ft, shim.level)


def bits(a: np.ndarray) -> np.ndarray:
    return a.view(np.uint32 if a.dtype == np.float32 else np.uint64)


def assert_same(got: np.ndarray, want: np.ndarray, what: str, *args: np.ndarray):
    """Bit-identical, NaNs equal to NaNs whatever their payload."""
    if got.dtype.kind == "f":
        ok = (bits(got) == bits(want)) | (np.isnan(got) & np.isnan(want))
    else:
        ok = got == want
    if not ok.all():
        i = np.flatnonzero(~ok)[:5]
        cases = [(tuple(a[j] for a in args), got[j], want[j]) for j in i]
        pytest.fail(f"{what}: {int((~ok).sum())} differ, e.g. (args, got, want) {cases}")


@pytest.mark.parametrize("ft", [np.float32, np.float64])
def test_special_values(shims, ft):
    sfx = "f" if ft == np.float32 else ""
    inf, nan = ft(np.inf), ft(np.nan)
    # (function, argument, expected) where NumPy semantics fix the exact answer
    # fmt: off
    cases = [("exp", inf, inf), ("exp", -inf, 0), ("exp", nan, nan), ("exp", 1e5, inf),
             ("exp", -1e5, 0), ("expm1", -0.0, -0.0), ("expm1", -inf, -1), ("expm1", inf, inf),
             ("expm1", nan, nan), ("log", 0.0, -inf), ("log", -0.0, -inf), ("log", -1, nan),
             ("log", -inf, nan), ("log", inf, inf), ("log", 1, 0), ("log", nan, nan),
             ("log1p", -1, -inf), ("log1p", -2, nan), ("log1p", -0.0, -0.0), ("log1p", inf, inf),
             ("tanh", -0.0, -0.0), ("tanh", inf, 1), ("tanh", -inf, -1), ("tanh", nan, nan),
             ("sigmoid", inf, 1), ("sigmoid", -inf, 0), ("sigmoid", nan, nan),
             ("sigmoid", -0.0, 0.5), ("sin", -0.0, -0.0), ("sin", inf, nan), ("sin", -inf, nan),
             ("sin", nan, nan), ("cos", -0.0, 1), ("cos", inf, nan), ("cos", nan, nan),
             ("erf", -0.0, -0.0), ("erf", inf, 1), ("erf", -inf, -1), ("erf", nan, nan)]
    # fmt: on
    for shim in each_shim(shims):
        for f, x, want in cases:
            got = shim(f"cv_{f}{sfx}", np.array([x], ft))
            assert_same(
                got, np.array([want], ft), f"{f}{sfx}({x}) at {shim.level}", np.array([x], ft)
            )


def test_f64_trig_beyond_range(shims):
    """NaN beyond CV_TRIG_F64_MAX; the documented fix-up pass restores NumPy's values."""
    rng = np.random.default_rng(11)
    x = np.concatenate(
        [
            np.exp(rng.uniform(math.log(TRIG_F64_MAX), 700, 10_000)),
            np.array([TRIG_F64_MAX, 1e300, np.inf, np.nan, 1.0, 1e22]),
        ]
    )
    x = np.concatenate([x, -x])
    want = {f: ref64(f, x) for f in ("sin", "cos")}
    for shim in each_shim(shims):
        for f in ("sin", "cos"):
            plain = shim(f"cv_{f}", x)
            assert np.isnan(plain[np.abs(x) > TRIG_F64_MAX]).all()
            finite = np.isfinite(x)
            got = shim(f"{f}_patched", x)
            assert_ulps(f, x[finite], got[finite], want[f][finite], np.float64, shim.level)
            assert np.isnan(got[~finite]).all()


def beyond_exact(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Where the float64 remainder is past CV_FMOD_F64_EXACT_QUOTIENT (float32: nowhere)."""
    if a.dtype == np.float32:
        return np.zeros(a.shape, bool)
    with np.errstate(all="ignore"):
        ratio = np.log2(np.abs(a)) - np.log2(np.abs(b))
    return np.isfinite(ratio) & (ratio >= math.log2(FMOD_F64_EXACT) - 1)


def binary_inputs(ft, seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(seed)
    n = 200_000
    sp = special_values(ft)[::3]
    grid_a, grid_b = (g.ravel() for g in np.meshgrid(sp, sp))
    small = [rng.integers(-1000, 1000, n).astype(ft), rng.integers(-20, 21, n).astype(ft)]
    return [
        (random_bits(ft, n, seed), random_bits(ft, n, seed + 1)),
        (grid_a, grid_b),
        (rng.uniform(-100, 100, n).astype(ft), rng.uniform(-10, 10, n).astype(ft)),
        tuple(small),
        (random_bits(ft, n, seed + 2), rng.uniform(-10, 10, n).astype(ft)),
    ]


@pytest.mark.parametrize("ft", [np.float32, np.float64])
def test_numpy_float_helpers(shims, ft):
    sfx = "f" if ft == np.float32 else ""
    for a, b in binary_inputs(ft, 21):
        with np.errstate(all="ignore"):
            want = {
                "max": np.maximum(a, b),
                "min": np.minimum(a, b),
                "fdiv": np.floor_divide(a, b),
                "rem": np.remainder(a, b),
                "sign": np.sign(a),
            }
        beyond = beyond_exact(a, b)
        for shim in each_shim(shims):
            assert_same(shim(f"cv_fmax{sfx}_np", a, b), want["max"], "maximum", a, b)
            assert_same(shim(f"cv_fmin{sfx}_np", a, b), want["min"], "minimum", a, b)
            assert_same(shim(f"cv_sign{sfx}", a), want["sign"], "sign", a)
            assert_same(shim(f"cv_floor_divide{sfx}", a, b), want["fdiv"], "floor_divide", a, b)
            rem = shim(f"cv_remainder{sfx}", a, b)
            assert_same(rem[~beyond], want["rem"][~beyond], "remainder", a[~beyond], b[~beyond])
            # beyond the exact range: still on b's side and no larger than |b|
            r, bb = rem[beyond], b[beyond]
            assert np.all((np.abs(r) <= np.abs(bb)) & ~(r * np.sign(bb) < 0))


@pytest.mark.parametrize("it", [np.int32, np.int64])
def test_numpy_int_divmod(shims, it):
    ut = np.uint32 if it == np.int32 else np.uint64
    sfx = "i32" if it == np.int32 else "i64"
    rng = np.random.default_rng(5)
    n = 200_000
    a = rng.integers(0, np.iinfo(ut).max, n, dtype=ut, endpoint=True).view(it)
    b = rng.integers(0, np.iinfo(ut).max, n, dtype=ut, endpoint=True).view(it)
    shift = rng.integers(0, 8 * a.itemsize, n).astype(ut)
    b_any = (b.view(ut) >> shift).view(it)  # divisors of every magnitude
    mn, mx = np.iinfo(it).min, np.iinfo(it).max
    sp = np.array([0, 1, -1, 2, -2, 3, -3, 7, -7, mn, mx, mn + 1, mx - 1, mn // 2, mx // 2 + 1], it)
    ga, gb = (g.ravel() for g in np.meshgrid(sp, sp))
    for x, y in ((a, b), (a, b_any), (ga, gb), (b_any, (a.view(ut) >> shift[::-1]).view(it))):
        with np.errstate(all="ignore"):
            want_q, want_r = np.floor_divide(x, y), np.remainder(x, y)
        for shim in each_shim(shims):
            assert_same(shim(f"cv_floor_divide_{sfx}", x, y), want_q, "floor_divide", x, y)
            assert_same(shim(f"cv_remainder_{sfx}", x, y), want_r, "remainder", x, y)


@settings(max_examples=60, deadline=None, database=None)
@given(data=st.data())
def test_hypothesis_helpers(shims, data):
    ft = data.draw(st.sampled_from([np.float32, np.float64]))
    it = data.draw(st.sampled_from([np.int32, np.int64]))
    n = data.draw(st.integers(0, 30))
    elems = st.floats(width=8 * ft().itemsize, **FINITE_OR_NOT)
    a = data.draw(hnp.arrays(ft, n, elements=elems))
    b = data.draw(hnp.arrays(ft, n, elements=elems))
    ia = data.draw(hnp.arrays(it, n))
    ib = data.draw(hnp.arrays(it, n))
    sfx = "f" if ft == np.float32 else ""
    isfx = "i32" if it == np.int32 else "i64"
    exact = ~beyond_exact(a, b)
    with np.errstate(all="ignore"):
        want = (
            np.floor_divide(a, b),
            np.remainder(a, b),
            np.maximum(a, b),
            np.floor_divide(ia, ib),
            np.remainder(ia, ib),
        )
    for shim in each_shim(shims):
        assert_same(shim(f"cv_floor_divide{sfx}", a, b), want[0], "floor_divide", a, b)
        assert_same(
            shim(f"cv_remainder{sfx}", a, b)[exact], want[1][exact], "remainder", a[exact], b[exact]
        )
        assert_same(shim(f"cv_fmax{sfx}_np", a, b), want[2], "maximum", a, b)
        assert_same(shim(f"cv_floor_divide_{isfx}", ia, ib), want[3], "int floor_divide", ia, ib)
        assert_same(shim(f"cv_remainder_{isfx}", ia, ib), want[4], "int remainder", ia, ib)
