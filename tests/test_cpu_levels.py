"""Kernels for every x86-64 level in one module; the best the CPU allows runs."""

from __future__ import annotations

import json
import platform
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import compile_source

import cuvil_aot

SOURCE = '''
import numpy as np
import cuvil_aot as cv

@cv.optimize
def f(x: cv.f32["B", "N"], w: cv.f32["N", 8]):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return np.tanh(e / e.sum(axis=1, keepdims=True)) @ w
'''

CHILD = '''
import json, sys
import numpy as np
sys.path.insert(0, {moddir!r})
import {modname} as m
from cuvil_aot.runtime import binding, extension
ext = extension.load({ext!r}, {path!r})
binding.bind(m, ext)
rng = np.random.default_rng(1)
x = rng.standard_normal((5, 37)).astype(np.float32)
w = rng.standard_normal((37, 8)).astype(np.float32)
ref = m.f.py_func(x.astype(np.float64), w.astype(np.float64))
err = float(np.max(np.abs(m.f(x, w) - ref)))
print(json.dumps([ext.cpu_level, err]))
'''


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="x86-64 levels")
def test_every_level_gives_numpys_answer(tmp_path):
    from cuvil_aot.runtime import native

    module = compile_source(tmp_path, SOURCE, cpu_levels=(1, 2, 3, 4))
    art = module.__artifact__
    script = textwrap.dedent(CHILD.format(moddir=str(tmp_path), modname=module.__name__,
                                          ext=art.ext_name, path=str(art.path)))
    root = str(Path(cuvil_aot.__file__).resolve().parents[1])
    detected = native.info()["detected_cpu_level"]
    for level in range(1, detected + 1):
        proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                              cwd=tmp_path, env={"PYTHONPATH": root,
                                                 "CUVIL_AOT_CPU_LEVEL": str(level)})
        assert proc.returncode == 0, proc.stderr
        chosen, err = json.loads(proc.stdout)
        assert chosen == level
        assert err < 1e-5
