"""Bad input at the boundary of a compiled function: a clear exception or NumPy's answer.

Every call runs in a child process, so a crash fails the test instead of the runner.
"""

from __future__ import annotations

import json
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
def matmul_relu(x: cv.f32["B", 128], w: cv.f32[128, 64], b: cv.f32[64]):
    return np.maximum(0, x @ w + b)

@cv.optimize
def chain(x: cv.f32["N"], y: cv.f32["N"]):
    return np.tanh(x * 0.5 + y) - x

@cv.optimize(signatures=["f32[B,H], f32[B,H]", "f64[B,H], f64[B,H]"])
def pair(h, c):
    return h * c, h + c

@cv.optimize(signatures=["f32[B,H], f32[B,H]"], fallback="python")
def lenient(h, c):
    return h - c
'''

# Each case: (name, code building `args`/`kwargs` and the expected outcome).
CASES = {
    "wrong_dtype": ("matmul_relu(x.astype(np.float64), w, b)", "TypeError",
                    "argument 'x': expected a float32 array f32[B, 128], got numpy.float64"),
    "wrong_ndim": ("matmul_relu(x[0], w, b)", "ValueError", "expected 2 dimensions"),
    "a_list": ("matmul_relu(x.tolist(), w, b)", "TypeError", "got list"),
    "none": ("matmul_relu(None, w, b)", "TypeError", "got NoneType"),
    "object_array": ("matmul_relu(x.astype(object), w, b)", "TypeError", "numpy.object_"),
    "zero_d": ("matmul_relu(np.ones((), np.float32), w, b)", "ValueError",
               "expected 2 dimensions"),
    "numpy_scalar": ("matmul_relu(np.float32(1.0), w, b)", "TypeError", "got numpy.float32"),
    "static_dim": ("matmul_relu(x[:, :127], w, b)", "ValueError",
                   "argument 'x': dimension 1 is 127, expected 128"),
    "symbolic_dims_disagree": ("pair(h, c[:2])", "ValueError",
                               "'c': dimension 0 is 2, expected B = 3"),
    "missing_argument": ("matmul_relu(x, w)", "TypeError", "missing required argument 'b'"),
    "extra_argument": ("matmul_relu(x, w, b, b)", "TypeError", "takes 3 arguments but 4"),
    "unknown_keyword": ("matmul_relu(x, w, b=b, bias=b)", "TypeError",
                        "unexpected keyword argument 'bias'"),
    "twice": ("matmul_relu(x, w, b, x=x)", "TypeError", "multiple values for argument 'x'"),
    "readonly_out": ("matmul_relu(x, w, b, out=readonly((3, 64)))", "ValueError", "read-only"),
    "wrong_out_shape": ("matmul_relu(x, w, b, out=np.empty((3, 63), np.float32))", "ValueError",
                        "out[0] must be a numpy.float32 array of shape (3, 64)"),
    "wrong_out_dtype": ("matmul_relu(x, w, b, out=np.empty((3, 64)))", "TypeError",
                        "out[0] must be a numpy.float32 array"),
    "out_not_tuple": ("pair(h, c, out=np.empty((3, 4), np.float32))", "TypeError",
                      "out must be a tuple of 2 arrays"),
    "no_signature": ("pair(h.astype(np.int64), c)", "TypeError",
                     "no signature matches the arguments"),
}
# Calls that must give NumPy's answer.
VALUES = {
    "fortran_order": "matmul_relu(np.asfortranarray(x), w, b)",
    "negative_strides": "matmul_relu(x[::-1], w[::-1][::-1], b[::-1][::-1])",
    "zero_strides": "matmul_relu(np.broadcast_to(x[:1], x.shape), w, b)",
    "misaligned": "chain(misaligned(y), y)",
    "byteswapped": "chain(y.astype('>f4'), y)",
    "out_is_input": "chain(yy, y, out=yy)",
    "out_overlaps_input": "chain(big[1:9], big[0:8], out=big[2:10])",
    "strided_out": "chain(y, y, out=np.empty(16, np.float32)[::2])",
    "zero_size": "matmul_relu(x[:0], w, b)",
    "fallback": "lenient(h.astype(np.int64), c)",
}

CHILD = '''
import json, sys, warnings
import numpy as np
sys.path.insert(0, {moddir!r})
import {modname} as m
from cuvil_aot.runtime import binding, extension
binding.bind(m, extension.load({ext!r}, {path!r}))
rng = np.random.default_rng(0)
x = rng.standard_normal((3, 128)).astype(np.float32)
w = rng.standard_normal((128, 64)).astype(np.float32)
b = rng.standard_normal(64).astype(np.float32)
h = rng.standard_normal((3, 4)).astype(np.float32)
c = rng.standard_normal((3, 4)).astype(np.float32)
y = rng.standard_normal(8).astype(np.float32)
big = rng.standard_normal(12).astype(np.float32)
def readonly(shape):
    a = np.empty(shape, np.float32); a.flags.writeable = False; return a
def misaligned(a):
    buf = np.zeros(a.nbytes + 1, np.uint8)
    v = np.frombuffer(buf.data, np.float32, count=a.size, offset=1); v[...] = a; return v
matmul_relu, chain, pair, lenient = m.matmul_relu, m.chain, m.pair, m.lenient
for name, code in {cases!r}.items():
    try:
        eval(code)
        print(json.dumps([name, "ok", ""]))
    except Exception as exc:
        print(json.dumps([name, type(exc).__name__, str(exc)]))
for name, code in {values!r}.items():
    yy = y.copy()
    big = rng.standard_normal(12).astype(np.float32)
    inputs = (big.copy(),)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref_env = dict(globals(), matmul_relu=m.matmul_relu.py_func, chain=m.chain.py_func,
                       pair=m.pair.py_func, lenient=m.lenient.py_func, yy=y.copy(), big=big.copy())
        ref = eval(code.replace(", out=yy", "").replace(", out=big[2:10]", "")
                   .replace(", out=np.empty(16, np.float32)[::2]", ""), ref_env)
        got = eval(code, dict(globals(), yy=yy, big=big))
    ok = np.allclose(np.asarray(got, np.float64), np.asarray(ref, np.float64), rtol=1e-5,
                     atol=1e-5) and np.shape(got) == np.shape(ref)
    print(json.dumps([name, "value", "equal" if ok else f"differs: {{got!r}} vs {{ref!r}}"]))
'''


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[str, str]]:
    directory = tmp_path_factory.mktemp("bad_input")
    module = compile_source(directory, SOURCE)
    art = module.__artifact__
    script = CHILD.format(moddir=str(directory), modname=module.__name__, ext=art.ext_name,
                          path=str(art.path), cases={k: v[0] for k, v in CASES.items()},
                          values=VALUES)
    env_path = str(Path(cuvil_aot.__file__).resolve().parents[1])
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(script)], capture_output=True,
                          text=True, cwd=directory, timeout=300,
                          env={"PYTHONPATH": env_path, "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, f"child crashed ({proc.returncode}):\n{proc.stderr}"
    return {n: (kind, msg) for n, kind, msg in map(json.loads, proc.stdout.splitlines())}


@pytest.mark.parametrize("name", sorted(CASES))
def test_bad_call_raises_a_clear_error(outcomes, name):
    _, kind, fragment = CASES[name]
    got_kind, message = outcomes[name]
    assert got_kind in (kind, "SignatureError", "SignatureShapeError"), (got_kind, message)
    if got_kind.startswith("Signature"):
        base = {"SignatureError": "TypeError", "SignatureShapeError": "ValueError"}[got_kind]
        assert kind in (base, "TypeError"), (kind, got_kind)
    assert fragment in message, message
    fn = CASES[name][0].split("(")[0]
    assert message.startswith(f"{fn}()"), message  # the function is named


@pytest.mark.parametrize("name", sorted(VALUES))
def test_unusual_but_valid_input_gives_numpys_answer(outcomes, name):
    assert outcomes[name] == ("value", "equal")
