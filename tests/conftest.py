"""Shared helpers: compile a module written in a test, compare with NumPy."""

from __future__ import annotations

import importlib.util
import os
import sys
import textwrap
import warnings
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

import cuvil_aot as cv
from cuvil_aot.compiler import pipeline
from cuvil_aot.runtime import binding, extension

# CPU tests build CPU-only modules (nvcc for every architecture would dominate their
# time); GPU tests ask for their architectures through Options(cuda_archs=...). Modules
# built through the cache read the knob, those compile_source builds get cuda_archs=().
os.environ.setdefault("CUVIL_AOT_CUDA_ARCHS", "none")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--update-golden", action="store_true",
                     help="rewrite the expected output of golden-file tests")


def _has_gpu() -> bool:
    try:
        import ctypes

        lib = ctypes.CDLL("libcuda.so.1")
        count = ctypes.c_int(0)
        return lib.cuInit(0) == 0 and lib.cuDeviceGetCount(ctypes.byref(count)) == 0 \
            and count.value > 0
    except OSError:
        return False


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if _has_gpu():
        return
    skip = pytest.mark.skip(reason="no NVIDIA GPU and driver found")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


_counter = [0]


def load_source(directory: Path, source: str, name: str | None = None) -> ModuleType:
    """Write ``source`` as a module file in ``directory`` and import it (not compiled yet)."""
    _counter[0] += 1
    name = name or f"cvtest_mod{_counter[0]}"
    path = directory / f"{name}.py"
    path.write_text(textwrap.dedent(source))
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def compile_source(directory: Path, source: str, **options: Any) -> ModuleType:
    """Import ``source`` as a module and bind its marked functions to compiled code."""
    module = load_source(directory, source)
    build_dir = directory / f"build_{module.__name__}"
    build_dir.mkdir()
    opts = pipeline.Options(**{"cuda_archs": (), **options})  # CPU-only unless asked
    artifact = pipeline.build(module, opts, out_dir=build_dir)
    binding.bind(module, extension.load(artifact.ext_name, artifact.path),
                 refused=artifact.manifest.get("refused", {}))  # they raise when called
    module.__artifact__ = artifact  # type: ignore[attr-defined]
    return module


def built_emulator(directory: Path, source: str) -> Path:
    """A kernel emulator of tests/ (attention_emulator.cpp, ...: a CUDA header's kernel run
    by fibers on the CPU, tests/emulated_block.h) built with g++ into ``directory``."""
    import subprocess

    root = Path(__file__).resolve().parent.parent
    exe = directory / Path(source).stem
    subprocess.run(["g++", "-std=c++17", "-O1", f"-I{root / 'native' / 'include'}",
                    str(root / "tests" / source), "-o", str(exe)], check=True)
    return exe


def cuda_text(sources: dict[str, str]) -> str:
    """Every CUDA unit of a build's sources (kernels_f0.cu, ...), one after the other."""
    return "".join(text for name, text in sorted(sources.items()) if name.endswith(".cu"))


def host_code(sources: dict[str, str]) -> str:
    """The wrapper's C of a build's sources: module.c, then each function's GPU part
    (module_gpu_f0.c, ...)."""
    return "".join(text for name, text in sorted(sources.items())
                   if name.startswith("module") and name.endswith(".c"))


def generated_units(directory: Path, source: str, archs: tuple[str, ...]) -> dict[str, str]:
    """The CUDA units (kernels_f0.cu, ...) and the wrapper (module.c, module_gpu_f0.c, ...)
    generated for ``source``'s module with GPU code for ``archs``: text only, nothing
    compiled."""
    from cuvil_aot.compiler.gpu_targets import GpuTargets

    module = load_source(directory, source)
    files = pipeline.generate_sources(module, pipeline.Options(cpu_levels=(1,)),
                                      GpuTargets.of(archs))[3]
    return {name: text for name, text in files.items()
            if name.endswith(".cu") or name.startswith("module") and name.endswith(".c")}


def gpu_build(directory: Path, source: str) -> Any:
    """The artifact of ``source``'s module built with sm_90 code: nvcc compiles its CUDA
    and cc its GPU wrapper, so a test can check the GPU path compiles without a device.
    No GPU code is refused."""
    module = load_source(directory, source)
    out = directory / "build"
    out.mkdir()
    artifact = pipeline.build(module, pipeline.Options(cuda_archs=("sm_90",)), out_dir=out)
    assert artifact.manifest["refused"] == {}
    return artifact


@pytest.fixture(scope="module")
def compiled(request: pytest.FixtureRequest,
             tmp_path_factory: pytest.TempPathFactory) -> ModuleType:
    """Compile the test module's SOURCE once per test module."""
    source = request.module.SOURCE
    return compile_source(tmp_path_factory.mktemp("compiled"), source)


def poisoned(shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """An output array full of a value no correct kernel produces by accident."""
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return np.full(shape, np.nan, dtype)
    if dtype.kind == "b":
        return np.full(shape, True, dtype)
    return np.full(shape, np.iinfo(dtype).min + 7, dtype)


def to64(values: list[object]) -> list[object]:
    """Float arrays upcast to float64 for the reference; other values as they are."""
    return [np.asarray(v, np.float64) if isinstance(v, np.ndarray) and v.dtype.kind == "f"
            else v for v in values]


def tolerance(dtype: np.dtype) -> float:
    return {"float16": 2e-3, "float32": 2e-5, "float64": 1e-12}.get(np.dtype(dtype).name, 0.0)


def assert_close(got: np.ndarray, ref: np.ndarray, dtype: np.dtype | None = None,
                 scale: float = 1.0, same: np.ndarray | None = None) -> None:
    """``got`` against the float64 reference ``ref``; NaN and infinities against ``same``
    (NumPy on the real dtypes, which rounds Python scalars to the array dtype first)."""
    got, ref = np.asarray(got), np.asarray(ref)
    assert got.shape == ref.shape, f"shape {got.shape} != {ref.shape}"
    dtype = np.dtype(dtype or got.dtype)
    if dtype.kind != "f":
        np.testing.assert_array_equal(got, ref)
        return
    rtol = tolerance(dtype) * scale
    with np.errstate(all="ignore"):  # the exact result rounded to the result dtype
        g, r = got.astype(np.float64), ref.astype(dtype).astype(np.float64)
    s = r if same is None else np.asarray(same, np.float64)
    np.testing.assert_array_equal(np.isnan(g), np.isnan(s), err_msg="NaN positions differ")
    special = ~np.isfinite(s) & ~np.isnan(s)
    np.testing.assert_array_equal(g[special], s[special], err_msg="infinities differ")
    np.testing.assert_array_equal(np.isinf(g), np.isinf(s), err_msg="infinite where NumPy is not")
    finite = np.isfinite(r) & np.isfinite(g) & np.isfinite(s)
    if finite.any():
        magnitude = np.maximum(np.abs(r[finite]), 1.0)
        err = np.abs(g[finite] - r[finite]) / magnitude
        assert err.max() <= rtol, f"max relative error {err.max():.3g} > {rtol:.3g}"


def assert_refused(directory: Path, body: str, message: str,
                   params: str = "x: cv.f32[3]", args: tuple[Any, ...] | None = None) -> None:
    """``def f(params): body`` compiles to a refusal whose diagnostic matches ``message``
    and points at the line with a caret (raised when f is called)."""
    source = (f"import numpy as np\nimport cuvil_aot as cv\n\n@cv.optimize\n"
              f"def f({params}):\n    {body}\n")
    mod = compile_source(directory, source)
    with pytest.raises(cv.CompileError, match=message) as e:
        mod.f(*(args if args is not None else (np.ones(3, np.float32),)))
    assert "^" in str(e.value)


def check_exact(fn: Any, *args: object) -> None:
    """``fn``'s results NumPy's on the real dtypes exactly (dtype and every element, NaN
    equal to NaN), its out= arrays poisoned first; where NumPy raises ValueError or
    IndexError, the call raises the same type. NumPy's warnings are not under test."""
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            want = fn.py_func(*args)
        except (ValueError, IndexError) as exc:
            with pytest.raises(type(exc)):
                fn(*args)
            return
    wants = want if isinstance(want, tuple) else (want,)
    outs = tuple(poisoned(np.shape(w), np.asarray(w).dtype) for w in wants)
    got = fn(*args, out=outs if len(outs) > 1 else outs[0])
    for g, w in zip(got if isinstance(got, tuple) else (got,), wants):
        assert np.asarray(g).dtype == np.asarray(w).dtype
        np.testing.assert_array_equal(np.asarray(g), np.asarray(w))


def check(fn: object, *args: object, scale: float = 1.0) -> None:
    """Call the compiled ``fn`` with poisoned out= arrays and compare with NumPy in float64."""
    py = fn.py_func  # type: ignore[attr-defined]
    with np.errstate(all="ignore"), warnings.catch_warnings():  # NumPy's own warnings
        warnings.simplefilter("ignore")  # ("Mean of empty slice", overflow) are not under test
        try:
            expect_dtype = py(*args)  # NumPy on the real dtypes: the result dtype and shape
        except (ValueError, TypeError, ZeroDivisionError) as exc:  # then we raise the same
            with pytest.raises(type(exc)):
                fn(*args)  # type: ignore[operator]
            return
        ref = py(*to64(list(args)))
    expect = expect_dtype if isinstance(expect_dtype, tuple) else (expect_dtype,)
    refs = ref if isinstance(ref, tuple) else (ref,)
    outs = tuple(poisoned(np.shape(e), np.asarray(e).dtype) for e in expect)
    got = fn(*args, out=outs if len(outs) > 1 else outs[0])  # type: ignore[operator]
    gots = got if isinstance(got, tuple) else (got,)
    # Float results are judged against float64; bool and int results must equal NumPy's
    # on the real dtypes exactly (a float32 comparison is not a float64 comparison).
    refs = tuple(r if np.asarray(e).dtype.kind == "f" else e for r, e in zip(refs, expect))
    for g, o, e, r in zip(gots, outs, expect, refs):
        assert np.asarray(g).dtype == np.asarray(e).dtype, (g, e)
        assert_close(o, r, np.asarray(e).dtype, scale, e)
    fresh = fn(*args)  # type: ignore[operator]
    for g, r, e in zip(fresh if isinstance(fresh, tuple) else (fresh,), refs, expect):
        assert_close(g, r, np.asarray(e).dtype, scale, e)
