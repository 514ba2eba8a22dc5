"""BERT's exact GELU through scipy.special.erf, and the tanh form, compiled against NumPy +
SciPy on a (1024, 3072) float32 array (an 8 × 128 batch's FFN activations), median of
calls in ms:  python bench/gelu_erf.py  (needs SciPy)."""

import math
import time

import numpy as np
from scipy.special import erf

import cuvil_aot as cv


@cv.optimize
def gelu_erf(x: cv.f32["N", "D"]):
    return 0.5 * x * (1.0 + erf(x / math.sqrt(2.0)))


@cv.optimize
def gelu_tanh(x: cv.f32["N", "D"]):
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))


def median_ms(fn, x: np.ndarray, calls: int) -> float:
    fn(x)
    times = []
    for _ in range(calls):
        t0 = time.perf_counter()
        fn(x)
        times.append(time.perf_counter() - t0)
    return sorted(times)[calls // 2] * 1e3


def main() -> None:
    x = np.random.default_rng(0).standard_normal((1024, 3072)).astype(np.float32)
    for fn in (gelu_erf, gelu_tanh):
        np.testing.assert_allclose(fn(x), fn.py_func(x.astype(np.float64)), rtol=1e-5,
                                   atol=1e-6)
        print(f"{fn.__name__}: cuvil_aot {median_ms(fn, x, 30):.2f} ms, "
              f"NumPy + SciPy {median_ms(fn.py_func, x, 10):.2f} ms")


if __name__ == "__main__":
    main()
