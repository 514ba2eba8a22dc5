"""Versions of a signature decided by conditions the call knows (frontend/versions.py): an
``if`` on sizes and int arguments whose blocks cannot be picked per call (a name None in
one, a return in one block only, arrays of other shapes, a write into an array) compiles
once each way, each version checking its condition at the call. Checked against the
Python function on float64 copies of random inputs (hypothesis), outputs poisoned; also
what the call says where no version matches, and the limit on decisions."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import (
    check,
    compile_source,
    cuda_text,
    generated_units,
    gpu_build,
    host_code,
    load_source,
)
from hypothesis import given, settings
from hypothesis import strategies as st
from test_elementwise import view_of

import cuvil_aot as cv
from cuvil_aot.compiler import pipeline
from cuvil_aot.compiler.toolchain import nvcc

SOURCE = '''
import numpy as np
import cuvil_aot as cv


@cv.optimize
def causal_scores(q: cv.f32["T", "D"], k: cv.f32["T", "D"]):
    """Meta's LLaMA: no mask for one token."""
    T = q.shape[0]
    mask = None
    if T > 1:
        mask = np.triu(np.full((T, T), -np.inf, dtype=np.float32), k=1)
    s = q @ k.T
    if mask is not None:
        s = s + mask
    return np.exp(s - s.max(axis=-1, keepdims=True))


def repeat_kv(x, n_rep):
    if n_rep == 1:
        return x
    return np.repeat(x, n_rep, axis=0)


@cv.optimize
def grouped(q: cv.f32["H", "T", "D"], k: cv.f32["G", "T", "D"], v: cv.f32["G", "T", "D"],
            n_rep: int):
    """Hugging Face's repeat_kv, called for K and for V: one decision for both."""
    k, v = repeat_kv(k, n_rep), repeat_kv(v, n_rep)
    return (q @ k.transpose(0, 2, 1)) @ v


@cv.optimize
def kinds(x: cv.f32["N"], t: int):
    """Values of other shapes, dtypes and list lengths after each block; returns in loops."""
    parts = [x]
    if t > 0:
        y, s = x, 1
        parts.append(x * 2)
    else:
        y, s = 0.5, 2.5
    for i in range(2):
        if t > i + 1:
            return np.stack(parts).sum(axis=0) * s
        y = y * 2
    return np.stack(parts).sum(axis=0) * s + y


@cv.optimize
def outputs(x: cv.f32["N"], with_probs: bool = False):
    """Hugging Face's output_attentions: a tuple of another length by a flag."""
    p = np.exp(x - x.max())
    return (x * 2, p / p.sum()) if with_probs else (x * 2,)


@cv.optimize
def first_rows(x: cv.f32["N", "D"], n: int):
    y = x * 2
    if n > 0:
        y[0] = 0  # a write: not picked per call
    return y
'''


@pytest.fixture(scope="module")
def m(tmp_path_factory: pytest.TempPathFactory) -> Any:
    return compile_source(tmp_path_factory.mktemp("versions"), SOURCE)


@settings(max_examples=25, deadline=None)
@given(data=st.data(), t=st.integers(0, 6), d=st.integers(1, 5))
def test_a_mask_only_for_more_than_one_token(m: Any, data: st.DataObject, t: int,
                                             d: int) -> None:
    q, k = (data.draw(view_of((t, d), "float32", special=False)) for _ in range(2))
    check(m.causal_scores, q, k)


@settings(max_examples=25, deadline=None)
@given(data=st.data(), g=st.integers(1, 3), n_rep=st.integers(1, 3), t=st.integers(1, 4),
       d=st.integers(1, 4))
def test_one_decision_for_one_condition(m: Any, data: st.DataObject, g: int, n_rep: int,
                                        t: int, d: int) -> None:
    q = data.draw(view_of((g * n_rep, t, d), "float32", special=False))
    k, v = (data.draw(view_of((g, t, d), "float32", special=False)) for _ in range(2))
    check(m.grouped, q, k, v, n_rep, scale=4.0)  # two float32 products, one on the other


@settings(max_examples=15, deadline=None)
@given(data=st.data(), rows=st.integers(1, 4), n=st.integers(-2, 2))
def test_a_write_under_a_condition_the_call_knows(m: Any, data: st.DataObject, rows: int,
                                                  n: int) -> None:
    check(m.first_rows, data.draw(view_of((rows, 3), "float32", special=False)), n)


@settings(max_examples=15, deadline=None)
@given(data=st.data(), n=st.integers(0, 5), t=st.integers(-1, 4))
def test_shapes_dtypes_lists_and_returns_that_differ(m: Any, data: st.DataObject, n: int,
                                                      t: int) -> None:
    check(m.kinds, data.draw(view_of((n,), "float32", special=False)), t)


@settings(max_examples=10, deadline=None)
@given(data=st.data(), n=st.integers(1, 6), flag=st.booleans())
def test_a_flag_that_decides_the_outputs(m: Any, data: st.DataObject, n: int,
                                         flag: bool) -> None:
    check(m.outputs, data.draw(view_of((n,), "float32", special=False)), flag)
    assert len(m.outputs(np.ones(n, np.float32))) == 1


def test_each_version_says_where_it_runs(m: Any) -> None:
    doc = m.grouped.compiled.__doc__
    assert "where n_rep == 1" in doc and "where not (n_rep == 1)" in doc
    assert "where T > 1" in m.causal_scores.compiled.__doc__
    # the versions refuse it for one reason: said once
    with pytest.raises(cv.SignatureError, match=r"^causal_scores\(\): argument 'q': expected a "
                       r"float32 array f32\[T, D\], got numpy.float64 array of shape \(2, 3\) "
                       r"\(so in each of its 2 signatures\)$"):
        m.causal_scores(np.ones((2, 3), np.float64), np.ones((2, 3), np.float32))
    with pytest.raises(ValueError):  # NumPy's own error, from the version that runs
        m.grouped(np.ones((4, 2, 3), np.float32), np.ones((1, 2, 3), np.float32),
                  np.ones((1, 2, 3), np.float32), 3)


def test_at_most_three_decisions(tmp_path: Path) -> None:
    body = "\n".join(f"    if n > {i}:\n        y = y[0]" for i in range(4))
    mod = compile_source(tmp_path, "import numpy as np\nimport cuvil_aot as cv\n\n"
                         "@cv.optimize\ndef f(x: cv.f32['A', 'B', 'C', 'D', 'E'], n: int):\n"
                         f"    y = x\n{body}\n    return y\n")
    with pytest.raises(cv.CompileError, match="(?s)different shapes.*3 conditions of this "
                       "version are decided at build already"):
        mod.f(np.ones((1,) * 5, np.float32), 2)


def test_settings_of_a_model_past_three_decisions_are_told_to_be_class_constants(
        tmp_path: Path) -> None:
    """transformers' ``if self.is_decoder:`` in every layer: bool attributes of instances,
    each its own decision; the hint says how to have the build decide them."""
    flags = "abcd"
    ifs = "\n".join(f"        if self.{f}:\n            out = out + (x + {i},)"
                     for i, f in enumerate(flags))
    mod = compile_source(tmp_path, "import numpy as np\nimport cuvil_aot as cv\n\n"
                         "class Cfg:\n" + "".join(f"    {f}: bool\n" for f in flags) +
                         "\n    @cv.optimize\n    def f(self, x: cv.f32['N']):\n"
                         f"        out = ()\n{ifs}\n        return out\n")
    cfg = mod.Cfg()
    for f in flags:
        setattr(cfg, f, True)
    with pytest.raises(cv.CompileError, match=r"(?s)3 conditions of this version are decided.*"
                       r"where 'd' is a setting of the model, make it a constant of its class "
                       r"\(d = \.\.\. in the class body"):
        mod.Cfg.f(cfg, np.ones(2, np.float32))
    constants = "".join(f"    {f} = True\n" for f in flags)  # as the hint says: compiles
    (tmp_path / "constants").mkdir()
    mod = compile_source(tmp_path / "constants", "import numpy as np\nimport cuvil_aot as cv\n"
                         "\nclass Cfg:\n" + constants + "\n    @cv.optimize\n    def f(self, "
                         f"x: cv.f32['N']):\n        out = ()\n{ifs}\n        return out\n")
    cfg = mod.Cfg()
    cfg.a = True  # the class's value, set on the instance: fine
    x = np.arange(3, dtype=np.float32)
    got = mod.Cfg.f(cfg, x)
    assert len(got) == 4 and all(np.array_equal(g, x + i) for i, g in enumerate(got))


def test_versions_share_their_kernels(tmp_path: Path) -> None:
    """A kernel the same in several versions (or functions) is compiled once, and so is a
    version's exec (the host code that runs its kernels) the same as another's."""
    module = load_source(tmp_path, SOURCE)
    *_, sources = pipeline.generate_sources(module, pipeline.Options(cuda_archs=()))
    defined = re.findall(r"^static void (f\d+_s\d+_k\d+)\(", sources["kernels.c"], re.M)
    table = dict(re.findall(r"^\s*\.(f\d+_s\d+_k\d+) = (f\d+_s\d+_k\d+),",
                            sources["kernels.c"], re.M))
    assert len(set(defined)) == len(defined) < len(table) / 2
    assert set(table.values()) == set(defined) and set(table) == set(
        re.findall(r"^\s*cv_(?:range_fn|epilogue_f\d\d) (f\d+_s\d+_k\d+);",
                   sources["kernels.h"], re.M))
    # and so is the host code that runs a version's kernels: each text once
    execs = re.findall(r"^static int (f\d+_s\d+)_exec\(", sources["module.c"], re.M)
    runs = re.findall(r"^static PyObject \*(f\d+_s\d+)_run\(", sources["module.c"], re.M)
    called = re.findall(r"rc = (f\d+_s\d+)_exec\(in, buf, (c|&shared), gerr\)",
                        sources["module.c"])
    assert len(execs) < len(runs) and {a for a, _ in called} == set(execs)
    copies = re.findall(r"(f\d+_s\d+)_call shared; memcpy\(&shared, c, sizeof shared\);",
                        sources["module.c"])  # another version's call struct, as its type
    assert copies == [a for a, how in called[::2] if how == "&shared"] and copies


@pytest.mark.skipif(nvcc.find_nvcc() is None, reason="nvcc not found")
def test_versions_share_their_gpu_kernels(tmp_path: Path) -> None:
    """A GPU kernel the same in several versions is one kernel of the unit: its code and
    entries once, each version's host code filling its struct (nvcc and cc compile it)."""
    units = generated_units(tmp_path, SOURCE, ("sm_90",))
    cu = cuda_text(units)
    structs = re.findall(r"^\} (\w+)_args;", cu, re.M)
    assert len(structs) == len(set(structs))
    # each version's kernels, by the struct its host code fills: fewer kernels than uses
    used = re.findall(r"\b(f\d+_s\d+_g\d+)_args a\d+;", host_code(units))
    assert set(used) <= set(structs) and len(set(used)) < len(used) / 2
    (tmp_path / "build").mkdir()
    gpu_build(tmp_path / "build", SOURCE)


@pytest.mark.gpu
@pytest.mark.parametrize("framework", ["torch", "cupy"])
def test_versions_on_device_arrays(tmp_path: Path, framework: str) -> None:
    from gpu_harness import Framework, device_arch, run_check

    mod = compile_source(tmp_path, SOURCE, cuda_archs=(device_arch(),))
    fw, rng = Framework(framework), np.random.default_rng(2)

    def arr(*shape: int) -> np.ndarray:
        return rng.standard_normal(shape).astype(np.float32)

    for t in (1, 4, 33):
        run_check(mod.causal_scores, fw, [arr(t, 8), arr(t, 8)], "contiguous", 8.0)
    for n_rep in (1, 3):
        run_check(mod.grouped, fw, [arr(2 * n_rep, 5, 4), arr(2, 5, 4), arr(2, 5, 4), n_rep],
                  "contiguous", 8.0)
    for t in (-1, 1):
        run_check(mod.kinds, fw, [arr(6), t], "contiguous", 8.0)
