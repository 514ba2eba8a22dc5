"""A marked module in a subpackage."""

import numpy as np

import cuvil_aot as cv


@cv.optimize
def gelu(x: cv.f32["N"]):
    return 0.5 * x * (1.0 + np.tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)))
