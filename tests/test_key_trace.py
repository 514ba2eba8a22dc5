"""The compile trace records everything a module reads, so the cache key changes with it."""

from __future__ import annotations

import functools

import numpy as np
from conftest import load_source

from cuvil_aot.compiler import pipeline


def test_constants_of_other_modules_are_part_of_the_key(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "kdep_consts.py").write_text("SCALE = 2.0\n\ndef helper(x):\n    return x * 3\n")
    module = load_source(tmp_path, """
        import numpy as np
        import cuvil_aot as cv
        import kdep_consts

        @cv.optimize
        def f(x: cv.f32["N"]):
            return kdep_consts.helper(x) * kdep_consts.SCALE
    """)
    before = pipeline.key_components(module)
    import kdep_consts

    monkeypatch.setattr(kdep_consts, "SCALE", 3.0)
    after = pipeline.key_components(module)
    assert before["globals"] != after["globals"]
    assert before["inlined"] == after["inlined"]
    assert {k for k in before if before[k] != after[k]} == {"globals"}


def test_names_imported_inside_the_function_are_part_of_the_key(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "kdep_inner.py").write_text("SCALE = 2.0\n")
    module = load_source(tmp_path, """
        import cuvil_aot as cv

        @cv.optimize
        def f(x: cv.f32["N"]):
            from kdep_inner import SCALE
            return x * SCALE
    """)
    before = pipeline.key_components(module)
    import kdep_inner

    monkeypatch.setattr(kdep_inner, "SCALE", 3.0)
    after = pipeline.key_components(module)
    assert {k for k in before if before[k] != after[k]} == {"globals"}


def test_attributes_of_a_module_imported_inside_the_function_are_part_of_the_key(
        tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "kdep_mod.py").write_text("SCALE = 2.0\n")
    module = load_source(tmp_path, """
        import cuvil_aot as cv

        @cv.optimize
        def f(x: cv.f32["N"]):
            import kdep_mod as k
            return x * k.SCALE
    """)
    before = pipeline.key_components(module)
    import kdep_mod

    monkeypatch.setattr(kdep_mod, "SCALE", 3.0)
    after = pipeline.key_components(module)
    assert {k for k in before if before[k] != after[k]} == {"globals"}


def test_the_arguments_of_a_functools_partial_are_part_of_the_key(tmp_path, monkeypatch):
    module = load_source(tmp_path, """
        import functools
        import numpy as np
        import cuvil_aot as cv

        ACT = functools.partial(np.clip, a_min=-1.0)

        @cv.optimize
        def f(x: cv.f32["N"]):
            return ACT(x, a_max=1.0)
    """)
    before = pipeline.key_components(module)
    monkeypatch.setattr(module, "ACT", functools.partial(np.clip, a_min=-2.0))
    after = pipeline.key_components(module)
    assert {k for k in before if before[k] != after[k]} == {"globals"}
