"""cuvil_aot.nn against NumPy float64: every function, dtype and rank it declares, called
directly (the prebuilt extension when cuvil_aot is installed from its wheel), and
inlined into a user's marked function."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from conftest import check, compile_source


@pytest.fixture(scope="module", autouse=True)
def private_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Where nn compiles when it is not prebuilt (a source checkout): not the user's cache."""
    patch = pytest.MonkeyPatch()
    patch.setenv("CUVIL_AOT_CACHE_DIR", str(tmp_path_factory.mktemp("nn-cache")))
    patch.setenv("CUVIL_AOT_CUDA_ARCHS", "none")
    yield
    patch.undo()


def _rand(shape: tuple[int, ...], dtype: type, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


ROWS = [(4, 33), (2, 3, 17)]
DTYPES = [np.float32, np.float64]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", ROWS)
@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_row_functions(name: str, shape: tuple[int, ...], dtype: type) -> None:
    from cuvil_aot import nn

    check(getattr(nn, name), _rand(shape, dtype) * 4)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(7,), *ROWS])
@pytest.mark.parametrize("name", ["gelu", "silu"])
def test_activations(name: str, shape: tuple[int, ...], dtype: type) -> None:
    from cuvil_aot import nn

    check(getattr(nn, name), _rand(shape, dtype) * 3)


@pytest.mark.parametrize("dtype", DTYPES)
def test_norms(dtype: type) -> None:
    from cuvil_aot import nn

    x, weight, bias = _rand((5, 24), dtype), _rand((24,), dtype, 1), _rand((24,), dtype, 2)
    check(nn.layer_norm, x, weight, bias, 1e-5)
    check(nn.rms_norm, x, weight, 1e-6)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", ["linear", "linear_relu", "linear_gelu", "linear_silu"])
def test_linear(name: str, dtype: type) -> None:
    from cuvil_aot import nn

    x, w, b = _rand((6, 40), dtype), _rand((40, 12), dtype, 1) * 0.2, _rand((12,), dtype, 2)
    check(getattr(nn, name), x, w, b, scale=4.0)


USER = """
import numpy as np
import cuvil_aot as cv
from cuvil_aot import nn


@cv.optimize
def head(x: cv.f32["B", 16], w: cv.f32[16, 8], b: cv.f32[8]):
    return nn.log_softmax(nn.linear_gelu(x, w, b) * 2.0)
"""


def test_inlined_into_a_users_function(tmp_path: Path) -> None:
    module = compile_source(tmp_path, USER)
    x, w, b = (_rand(s, np.float32, i) for i, s in enumerate([(3, 16), (16, 8), (8,)]))
    check(module.head, x, w * 0.3, b, scale=4.0)
