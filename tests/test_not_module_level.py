"""A marked method or a marked function defined inside another is not compiled (a module's
build compiles the functions at its top level): a call raises a CompileError at its
``def`` line, with a caret and what to write instead; with ``fallback="python"`` it warns
and runs the original, the instance passed as Python passes it. The module's top-level
functions compile beside them."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest
from conftest import load_source

import cuvil_aot as cv

SOURCE = '''
import numpy as np
import cuvil_aot as cv

class Linear:
    def __init__(self, w):
        self.w = w

    @cv.optimize
    def forward(self, x: cv.f32["N", 4]):
        return x @ self.w

    @cv.optimize(fallback="python")
    def forward_or_python(self, x: cv.f32["N", 4]):
        return x @ self.w + 1

def make_step(scale):
    @cv.optimize
    def step(x: cv.f32["N"]):
        return x * scale
    return step

@cv.optimize
def top(x: cv.f32["N"]):
    return x * 2
'''


@pytest.fixture(scope="module")
def m(tmp_path_factory):
    return load_source(tmp_path_factory.mktemp("not_module_level"), SOURCE)


def test_a_method_is_refused_at_its_def(m) -> None:
    x = np.ones((2, 4), np.float32)
    with pytest.raises(cv.CompileError) as e:
        m.Linear(np.ones((4, 3), np.float32)).forward(x)
    text = str(e.value)
    assert ":10:5: error: Linear.forward is a method of Linear" in text
    assert "        def forward(self, x" in text and "\n        ^~~~~~~~~~~\n" in text
    assert "return forward(x, self.w)" in text


def test_a_nested_def_is_refused_at_its_def(m) -> None:
    with pytest.raises(cv.CompileError, match=r":19:5: error: make_step.<locals>.step is "
                       r"defined inside another function") as e:
        m.make_step(3.0)(np.ones(3, np.float32))
    assert "\n        ^~~~~~~~\n" in str(e.value)


def test_fallback_runs_the_method_with_its_instance(m) -> None:
    rng = np.random.default_rng(0)
    w, x = rng.standard_normal((4, 3)), rng.standard_normal((5, 4)).astype(np.float32)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = m.Linear(w).forward_or_python(x)
    np.testing.assert_array_equal(got, x @ w + 1)
    assert any("Linear.forward_or_python was not compiled" in str(c.message) for c in caught)


def test_the_top_level_function_compiles(m, tmp_path: Path) -> None:
    x = np.arange(5, dtype=np.float32)
    np.testing.assert_array_equal(m.top(x), x * 2)
    assert m.top.__class__.__name__ == "CompiledFunction"
