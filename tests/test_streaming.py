"""Large elementwise outputs of cheap float math go out through non-temporal stores a
tile at a time (kernel.h cv_stream_*): checked against NumPy in float64 at sizes past
the threshold, with unaligned and strided outputs, rows, several outputs and float64."""

from __future__ import annotations

import json
import platform
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import assert_close, check, compile_source, load_source, poisoned

import cuvil_aot
from cuvil_aot.compiler import pipeline
from cuvil_aot.runtime import native

SOURCE = """
import numpy as np
import cuvil_aot as cv

@cv.optimize(signatures=["f32[A,N], f32[A,N]", "f64[A,N], f64[A,N]"])
def axpy(x, y):
    return x * 0.5 + y

@cv.optimize(signatures=["f32[N], f32[N]"])
def pair(x, y):
    return x + y, np.maximum(x, y) * 3.0

@cv.optimize(signatures=["f32[N], f32[N]"])
def costly(x, y):
    return np.tanh(x) + y
"""
BIG = (1 << 22) + 37  # float32 elements: past the 16 MiB threshold, not a multiple of a tile


def _rand(shape: tuple[int, ...], dtype: str, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


@pytest.mark.parametrize("shape", [(1, BIG), (1030, 4099), (3, 5)])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_streamed_outputs_match_numpy(compiled, shape, dtype):
    x, y = _rand(shape, dtype, 1), _rand(shape, dtype, 2)
    check(compiled.axpy, x, y)


def test_several_outputs(compiled):
    x, y = _rand((BIG,), "float32", 3), _rand((BIG,), "float32", 4)
    check(compiled.pair, x, y)


def test_unaligned_and_strided_outputs(compiled):
    x, y = _rand((1, BIG), "float32", 5), _rand((1, BIG), "float32", 6)
    want = x.astype(np.float64) * 0.5 + y
    buf = poisoned((BIG + 1,), np.float32)
    out = buf[1:].reshape(1, BIG)  # 4 bytes past a 64-byte boundary: the head is peeled
    compiled.axpy(x, y, out=out)
    assert_close(out, want)
    assert np.isnan(buf[0])
    wide = poisoned((1, 2 * BIG), np.float32)
    compiled.axpy(x, y, out=wide[:, ::2])
    assert_close(wide[:, ::2], want)
    assert np.isnan(wide[:, 1::2]).all()
    xs = _rand((1, 2 * BIG), "float32", 7)[:, ::2]  # strided input: the plain loops
    assert_close(compiled.axpy(xs, y), xs.astype(np.float64) * 0.5 + y)


def test_only_cheap_math_streams(tmp_path):
    module = load_source(tmp_path, SOURCE)
    kernels = pipeline.generate_sources(module, pipeline.Options(cpu_levels=(1,)))[3]["kernels.c"]
    code = {m.group(1): m.group(0) for m in re.finditer(r"static void (f\d)_s0_k0\(.*?\n}\n",
                                                         kernels, re.S)}
    assert "cv_stream_f32(" in code["f0"] and "cv_stream_f32(" in code["f1"]
    assert "cv_stream" not in code["f2"]  # tanh: bound by its math, plain stores


CHILD = """
import json, sys
import numpy as np
sys.path.insert(0, {moddir!r})
import {modname} as m
from cuvil_aot.runtime import binding, extension
ext = extension.load({ext!r}, {path!r})
n = {n}
rng = np.random.default_rng(1)
x, y = rng.standard_normal((2, 1, n)).astype(np.float32)
out = np.full(n + 1, np.nan, np.float32)[1:].reshape(1, n)  # unaligned: the peeled head
ext.axpy(x, y, out=out)
err = float(np.max(np.abs(out - (x.astype(np.float64) * 0.5 + y))))
print(json.dumps([ext.cpu_level, err]))
"""


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="x86-64 levels")
def test_every_level_streams_right(tmp_path):
    module = compile_source(tmp_path, SOURCE, cpu_levels=(1, 2, 3, 4))
    art = module.__artifact__
    script = CHILD.format(moddir=str(tmp_path), modname=module.__name__, ext=art.ext_name,
                          path=str(art.path), n=BIG)
    root = str(Path(cuvil_aot.__file__).resolve().parents[1])
    for level in range(1, native.info()["detected_cpu_level"] + 1):
        proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                              cwd=tmp_path, env={"PYTHONPATH": root,
                                                 "CUVIL_AOT_CPU_LEVEL": str(level)})
        assert proc.returncode == 0, proc.stderr
        chosen, err = json.loads(proc.stdout)
        assert chosen == level and err < 1e-5
