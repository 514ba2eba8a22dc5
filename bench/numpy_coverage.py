"""Which NumPy functions a model might call compile, on the CPU: each in a function of its
own (one argument, a float32 3 x 5 array), compiled through the import hook into a scratch
cache, its result checked against NumPy's (rtol 1e-4, NaN equal). Prints the refused ones
with the first line of their diagnostic, then the count; a generality yardstick, not a
test (the functions that compile have their own hypothesis tests).

    python bench/numpy_coverage.py > bench/numpy_coverage.txt
"""

from __future__ import annotations

import importlib
import os
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

PROBES = {
    "log10": "np.log10(np.abs(x) + 1)",
    "log2": "np.log2(np.abs(x) + 1)",
    "exp2": "np.exp2(x)",
    "reciprocal": "np.reciprocal(x + 3)",
    "tan": "np.tan(x * 0.1)",
    "arctan": "np.arctan(x)",
    "arcsin": "np.arcsin(x * 0.1)",
    "sinh": "np.sinh(x)",
    "cosh": "np.cosh(x)",
    "isnan": "np.isnan(x)",
    "isinf": "np.isinf(x)",
    "isfinite": "np.isfinite(x)",
    "nan_to_num": "np.nan_to_num(x)",
    "any": "np.any(x > 1)",
    "all": "np.all(x > -10)",
    "count_nonzero": "np.count_nonzero(x > 0)",
    "fmax": "np.fmax(x, 0.1)",
    "fmin": "np.fmin(x, 0.1)",
    "hypot": "np.hypot(x, x)",
    "arctan2": "np.arctan2(x, x + 1)",
    "logaddexp": "np.logaddexp(x, x * 2)",
    "cbrt": "np.cbrt(x)",
    "trunc": "np.trunc(x)",
    "flip": "np.flip(x, axis=-1)",
    "roll": "np.roll(x, 1, axis=-1)",
    "diff": "np.diff(x, axis=-1)",
    "sigmoid": "1 / (1 + np.exp(-x))",
    "cumsum": "np.cumsum(x, axis=-1)",
    "fix": "np.fix(x)",
    "positive": "np.positive(x)",
    "rint": "np.rint(x)",
    "around": "np.around(x, 2)",
    "power": "np.power(np.abs(x), 1.5)",
    "float_power": "np.float_power(np.abs(x), 2)",
    "copysign": "np.copysign(x, -1)",
    "signbit": "np.signbit(x)",
    "heaviside": "np.heaviside(x, 0.5)",
    "log_softmax": "x - x.max(-1, keepdims=True) - np.log(np.exp(x - x.max(-1, keepdims=True))"
                   ".sum(-1, keepdims=True))",
    "median": "np.median(x, axis=-1)",
    "percentile": "np.percentile(x, 90, axis=-1)",
    "average": "np.average(x, axis=-1)",
    "ptp": "np.ptp(x, axis=-1)",
    "amax": "np.amax(x, axis=-1)",
    "nanmax": "np.nanmax(x, axis=-1)",
    "nansum": "np.nansum(x, axis=-1)",
    "argwhere": "np.argwhere(x > 0)",
    "nonzero": "np.nonzero(x > 0)",
    "unique": "np.unique(x)",
    "searchsorted": "np.searchsorted(np.sort(x[0]), 0.0)",
    "clip_method": "x.clip(-1, 1)",
    "minimum_reduce": "np.minimum.reduce(x, axis=-1)",
    "maximum_accumulate": "np.maximum.accumulate(x, axis=-1)",
    "add_outer": "np.add.outer(x[0], x[0])",
    "triu_indices": "x[np.triu_indices(3)]",
    "meshgrid": "np.meshgrid(x[0], x[0])[0]",
    "linspace": "np.linspace(0, 1, 5) * x[0, 0]",
    "full_like": "np.full_like(x, 2.0)",
    "zeros_like": "np.zeros_like(x)",
    "where_one_argument": "np.where(x > 0)",
    "atleast_2d": "np.atleast_2d(x[0])",
    "ravel": "np.ravel(x)",
    "vstack": "np.vstack([x, x])",
    "hstack": "np.hstack([x, x])",
    "column_stack": "np.column_stack([x[0], x[0]])",
    "dstack": "np.dstack([x, x])",
    "block": "np.block([x, x])",
    "squeeze": "np.squeeze(x[None])",
    "broadcast_arrays": "np.broadcast_arrays(x, x[0])[1]",
    "ones_like": "np.ones_like(x)",
    "isclose": "np.isclose(x, 0.5)",
    "allclose": "np.allclose(x, x)",
    "array_equal": "np.array_equal(x, x)",
    "greater": "np.greater(x, 0)",
    "logical_and": "np.logical_and(x > 0, x < 1)",
    "sort": "np.sort(x, axis=-1)",
    "lexsort": "np.lexsort((x[0], x[1]))",
    "max_initial": "np.max(x, axis=-1, initial=0.0)",
    "sum_where": "np.sum(x, axis=-1, where=x > 0)",
    "mean_dtype": "np.mean(x, axis=-1, dtype=np.float64)",
    "prod_dtype": "np.prod(x, axis=0, dtype=np.float64)",
    "min_where": "np.min(x, axis=0, where=x > 0, initial=5.0)",
    "average_returned": "np.average(x, axis=0, returned=True)[1]",
    "std_ddof": "np.std(x, axis=-1, ddof=1)",
    "linalg_inv": "np.linalg.inv(x[:, :3] @ x[:, :3].T + 3 * np.eye(3))",
    "linalg_solve": "np.linalg.solve(x[:, :3] @ x[:, :3].T + 3 * np.eye(3), x[:, 0])",
    "linalg_det": "np.linalg.det(x[:, :3])",
    "cross": "np.cross(x[:, :3], x[:, 1:4])",
    "inner": "np.inner(x, x)",
    "tensordot": "np.tensordot(x, x, axes=([1], [1]))",
    "kron": "np.kron(x[:2, :2], x[:2, :2])",
    "trace": "np.trace(x[:, :3])",
    "diagonal": "np.diagonal(x[:, :3])",
    "diag": "np.diag(x[0])",
    "round_decimals": "np.round(x, 3)",
    "interp": "np.interp(x, [0.0, 1.0], [0.0, 2.0])",
    "convolve": "np.convolve(x[0], x[1])",
    "correlate": "np.correlate(x[0], x[1, :2], \"same\")",
    "sliding_window_view": "np.lib.stride_tricks.sliding_window_view(x, 2, axis=1)",
    "histogram": "np.histogram(x, bins=4)[0]",
    "bincount": "np.bincount((np.abs(x[0]) * 3).astype(np.int64))",
    "digitize": "np.digitize(x, [0.0, 1.0])",
    "abs_builtin": "abs(x)",
    "conj": "np.conj(x)",
    "real": "np.real(x)",
    "angle": "np.angle(x)",
    "repeat": "np.repeat(x, 2, axis=0)",
    "tile": "np.tile(x, (2, 1))",
    "ufunc_out": "np.maximum(x * 2, 0, out=np.empty((3, 5), np.float32))",
    "clip_out": "np.clip(x, -0.5, 0.5, out=np.zeros_like(x))",
}


def module_text() -> str:
    lines = ["import numpy as np", "import cuvil_aot as cv", ""]
    for name, expr in PROBES.items():
        lines += ["@cv.optimize", f"def f_{name}(x: cv.f32[3, 5]):", f"    return {expr}", ""]
    return "\n".join(lines)


def agrees(got: object, want: object) -> bool:
    pairs = zip(got if isinstance(got, tuple) else (got,),
                want if isinstance(want, tuple) else (want,))
    return all(np.allclose(np.asarray(g, float), np.asarray(w, float), rtol=1e-4, atol=1e-5,
                           equal_nan=True) for g, w in pairs)


def main() -> None:
    import cuvil_aot

    work = Path(tempfile.mkdtemp(prefix="cuvil_coverage_"))
    (work / "coverage_probes.py").write_text(module_text())
    sys.path.insert(0, str(work))
    os.environ["CUVIL_AOT_CACHE_DIR"] = str(work / "cache")
    warnings.simplefilter("ignore")
    cuvil_aot.install()
    probes = importlib.import_module("coverage_probes")
    x = np.random.default_rng(0).standard_normal((3, 5)).astype(np.float32)
    refused, wrong = [], []
    for name in PROBES:
        fn = getattr(probes, f"f_{name}")
        try:
            if not agrees(fn(x), fn.py_func(x)):
                wrong.append(name)
        except cuvil_aot.CompileError as exc:
            first = str(exc).strip().splitlines()[0]
            refused.append(f"{name}: {first.split('error: ')[-1]}")
    print(f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}: {len(PROBES)} NumPy calls, "
          f"{len(PROBES) - len(refused) - len(wrong)} compile and agree with NumPy, "
          f"{len(refused)} refused, {len(wrong)} wrong\n")
    for line in refused:
        print(f"- refused {line}")
    for name in wrong:
        print(f"- WRONG {name}")


if __name__ == "__main__":
    main()
