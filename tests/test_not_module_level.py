"""A marked function defined inside another, a static method or a method of a nested class
is not compiled (a module's build compiles its top-level functions and the methods of its
top-level classes): a call raises a CompileError at its ``def`` line, with a caret and
what to write instead. A method whose class does not declare what it reads is refused at
that read. With ``fallback="python"`` a call warns and runs the original, the instance
passed as Python passes it. The module's top-level functions compile beside them."""

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

class Outer:
    class Inner:
        @cv.optimize
        def twice(self, x: cv.f32["N"]):
            return x * 2

    @staticmethod
    @cv.optimize
    def thrice(x: cv.f32["N"]):
        return x * 3

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


def test_an_undeclared_attribute_is_refused_where_it_is_read(m) -> None:
    x = np.ones((2, 4), np.float32)
    with pytest.raises(cv.CompileError) as e:
        m.Linear(np.ones((4, 3), np.float32)).forward(x)
    text = str(e.value)
    assert ":11:20: error: self.w: class Linear does not declare 'w'" in text
    assert "            return x @ self.w\n                       ^~~~~~\n" in text
    assert "declare it in class Linear: `w: ...`" in text


def test_a_nested_def_is_refused_at_its_def(m) -> None:
    with pytest.raises(cv.CompileError, match=r":30:5: error: make_step.<locals>.step is "
                       r"defined inside another function") as e:
        m.make_step(3.0)(np.ones(3, np.float32))
    assert "\n        ^~~~~~~~\n" in str(e.value)


def test_a_nested_class_or_static_method_is_refused_at_its_def(m) -> None:
    x = np.ones(3, np.float32)
    with pytest.raises(cv.CompileError, match=r":20:9: error: Outer.Inner.twice is a static "
                       "method or a method of a nested class"):
        m.Outer.Inner().twice(x)
    with pytest.raises(cv.CompileError, match=r":25:5: error: Outer.thrice is a static "
                       "method"):
        m.Outer.thrice(x)


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
