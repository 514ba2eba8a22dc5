"""A float32 array made float64 by a NumPy float64 scalar (NEP 50) warns at build time
(compiler/frontend/promotion.py): ``/ np.sqrt(d)`` in attention, ``* np.float64(2)``. The
result stays NumPy's (float64), the warning names the user's line with a caret and says how
to stay in float32, once per place and only when the module is built (a load from the
cache is quiet). Python numbers, float32 scalars, arrays of float64 and integer arrays are
NumPy's ordinary promotions and do not warn."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest
from conftest import compile_source

import cuvil_aot as cv

PROMOTED = '''
import numpy as np
import cuvil_aot as cv

@cv.optimize
def scores(q: cv.f32["T", "D"], k: cv.f32["T", "D"]):
    return q @ k.T / np.sqrt(q.shape[1])

@cv.optimize
def doubled(x: cv.f16["N"]):
    y = x * np.float64(2.0)
    return y + 1
'''

QUIET = '''
import math
import numpy as np
import cuvil_aot as cv

@cv.optimize
def quiet(q: cv.f32["T", "D"], k: cv.f32["T", "D"], z: cv.f64["D"], i: cv.i32["D"]):
    s = q @ k.T / math.sqrt(q.shape[1]) * q.shape[1] ** -0.5 / np.float32(2.0)
    return s, q + z, i * np.float64(2.0), q.astype(np.float64) * np.float64(3.0)
'''


def test_a_numpy_float64_scalar_warns_at_the_users_line(tmp_path: Path) -> None:
    with pytest.warns(cv.PromotionWarning) as caught:
        mod = compile_source(tmp_path, PROMOTED)
        q = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
        got = mod.scores(q, q)
    assert got.dtype == np.float64  # what NumPy computes
    np.testing.assert_allclose(got, mod.scores.py_func(q, q), rtol=1e-6)
    texts = [str(w.message) for w in caught]
    assert len(texts) == 2, texts  # one per place
    scores = next(t for t in texts if "np.sqrt" in t)
    assert ":7:12: warning: this float32 array is promoted to float64" in scores
    assert "return q @ k.T / np.sqrt(q.shape[1])" in scores and "^~~" in scores
    assert "to stay in float32: a Python number (math.sqrt(d)" in scores
    assert any("this float16 array" in t and "np.float64(2.0)" in t for t in texts)


def test_ordinary_promotions_are_quiet(tmp_path: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", cv.PromotionWarning)
        mod = compile_source(tmp_path, QUIET)
        q = np.ones((2, 3), np.float32)
        s, _, _, _ = mod.quiet(q, q, np.ones(3), np.ones(3, np.int32))
    assert s.dtype == np.float32


def test_only_the_build_warns_not_a_load_from_the_cache(tmp_path: Path) -> None:
    """Through the import hook, twice, in fresh interpreters: the first import builds and
    warns; the second loads the cached extension and says nothing."""
    import os
    import subprocess
    import sys

    (tmp_path / "promoted_mod.py").write_text(PROMOTED)
    run = [sys.executable, "-W", "default", "-c",
           "import cuvil_aot; cuvil_aot.install(); import promoted_mod"]
    env = dict(os.environ, CUVIL_AOT_CACHE_DIR=str(tmp_path / "cache"), CUVIL_AOT_CUDA_ARCHS="none",
               PYTHONPATH=os.pathsep.join([str(tmp_path), *sys.path]))
    first, second = (subprocess.run(run, env=env, cwd=tmp_path, capture_output=True, text=True,
                                    timeout=300) for _ in range(2))
    assert first.returncode == 0 and second.returncode == 0, first.stderr + second.stderr
    assert first.stderr.count("PromotionWarning") == 2, first.stderr
    assert "PromotionWarning" not in second.stderr, second.stderr
