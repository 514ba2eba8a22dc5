"""What a call may trust about its arguments: shapes whose arithmetic overflows, ndarray
subclasses with other semantics, non-native byte order.

1. Symbols bound from two broadcast views can make a dimension (``N*M``, ``16*H``) or
   an array's size overflow int64: the call must raise NumPy's "array is too big"
   ValueError, never wrap, crash or loop for ever.
2. ``np.matrix`` and masked arrays are refused with a TypeError naming the argument and
   what to pass (NumPy would compute something else on them); other subclasses work.
3. A big-endian ``out=`` is named as such; a big-endian input is converted (NumPy's
   answer).

Every call runs in its own child process (with a time limit): a crash or a hang fails
one test, not the runner.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from types import ModuleType

import pytest
from conftest import compile_source
from helpers.proc import REPO

SOURCE = '''
import numpy as np
import cuvil_aot as cv

@cv.optimize(signatures=["f32[N], f32[M], f32[N*M]"])
def outer(x, y, z):
    return (z.reshape(x.shape[0], y.shape[0]) * y).sum(axis=1) + x

@cv.optimize(signatures=["f32[H], f32[B,16H]"])
def groups(h, x):
    return x.reshape(x.shape[0], 16, h.shape[0]).sum(axis=2)

@cv.optimize
def rowdot(x: cv.f32["N"], y: cv.f32["M"]):
    return (x[:, None] * y).sum(axis=1)

@cv.optimize
def mul(x: cv.f32["R", "C"], y: cv.f32["R", "C"]):
    return x * y + 1.0

@cv.optimize
def total(x: cv.f32["R", "C"]):
    return x.sum(axis=1)

@cv.optimize
def mm(x: cv.f32["R", "K"], w: cv.f32["K", "C"]):
    return x @ w

@cv.optimize
def flat(x: cv.f32["R", "C"]):
    return x.reshape(-1) * 2.0

@cv.optimize(signatures=["f32[R,C], f32[R,C]"], fallback="python")
def lenient(x, y):
    return x * y
'''

CHILD = '''
import json, sys, tempfile
import numpy as np
sys.path.insert(0, {moddir!r})
import {modname} as m
from cuvil_aot.runtime import binding, extension
binding.bind(m, extension.load({ext!r}, {path!r}))

def big(n):
    return np.broadcast_to(np.float32(1), n)

class Plain(np.ndarray):
    pass

rng = np.random.default_rng(0)
a = rng.standard_normal((3, 4)).astype(np.float32)
b = rng.standard_normal((3, 4)).astype(np.float32)
w = rng.standard_normal((4, 5)).astype(np.float32)
scratch = tempfile.mkdtemp()
mm_a = np.memmap(scratch + "/a", np.float32, "w+", shape=(3, 4))
mm_a[:] = a
mm_out = np.memmap(scratch + "/out", np.float32, "w+", shape=(3,))
try:
    got = eval({code!r})
except Exception as exc:
    print(json.dumps({{"error": type(exc).__name__, "message": str(exc),
                      "value_error": isinstance(exc, ValueError),
                      "type_error": isinstance(exc, TypeError)}}))
else:
    ref = {ref}
    same = ref is None or (np.shape(got) == np.shape(ref)
                           and np.allclose(np.asarray(got), np.asarray(ref), rtol=1e-5))
    print(json.dumps({{"value": repr(got)[:300], "ref": repr(ref)[:300], "same": bool(same),
                      "type": type(got).__name__}}))
'''


@pytest.fixture(scope="module")
def module(tmp_path_factory: pytest.TempPathFactory) -> ModuleType:
    return compile_source(tmp_path_factory.mktemp("trust_calls"), SOURCE)


def call(module: ModuleType, code: str, ref: str = "None", timeout: float = 60) -> dict:
    """Runs ``m.<code>`` in a child; its outcome (``ref``: NumPy's answer, to compare)."""
    art = module.__artifact__
    directory = Path(module.__file__).parent
    script = CHILD.format(moddir=str(directory), modname=module.__name__, ext=art.ext_name,
                          path=str(art.path), code=code, ref=ref)
    try:
        proc = subprocess.run([sys.executable, "-c", textwrap.dedent(script)],
                              capture_output=True, text=True, cwd=directory, timeout=timeout,
                              env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})
    except subprocess.TimeoutExpired:
        pytest.fail(f"{code} still ran after {timeout} s")
    assert proc.returncode == 0, f"{code}: child died ({proc.returncode}):\n{proc.stderr}"
    return json.loads(proc.stdout.strip().splitlines()[-1])


TOO_BIG = "array is too big; `arr.size * arr.dtype.itemsize` is larger than the maximum"


# 1. Shape arithmetic that overflows int64 -----------------------------------------------

OVERFLOWS = {
    # N*M = 2^64 wraps to 0: the zero-size z passed the check, then the kernel read 2^64
    # elements of it.
    "dimension_product": ("m.outer(big(2**32), big(2**32), np.empty(0, np.float32))",
                          "argument 'z': dimension 0 is M*N with M = 4294967296"),
    # 16*H = 2^64 wraps to 0: rows of 2^60 elements over an empty x.
    "scaled_dimension": ("m.groups(big(2**60), np.empty((1, 0), np.float32))",
                         "argument 'x': dimension 1 is 16H with H = 1152921504606846976"),
    # A fused intermediate of 2^32 x 2^32 (NumPy would allocate it: too big).
    "intermediate": ("m.rowdot(big(2**32), big(2**32))", "shape (N, M)"),
}


@pytest.mark.parametrize("name", sorted(OVERFLOWS))
def test_shape_overflow_raises_numpys_error(module: ModuleType, name: str) -> None:
    code, where = OVERFLOWS[name]
    got = call(module, code)
    assert got.get("value_error"), got
    assert TOO_BIG in got["message"] and where in got["message"], got["message"]
    assert got["message"].startswith(code[2:].split("(")[0] + "()"), got["message"]


def test_large_but_valid_shapes_still_run(module: ModuleType) -> None:
    # Zero-size results over huge broadcast dims: every size fits, NumPy gives [].
    got = call(module, "m.outer(big(2**31)[:0], big(2**31), np.empty(0, np.float32))",
               "np.empty(0, np.float32)")
    assert got.get("same"), got
    got = call(module, "m.groups(big(2**20), np.empty((0, 2**24), np.float32))",
               "np.empty((0, 16), np.float32)")
    assert got.get("same"), got


# 2. ndarray subclasses --------------------------------------------------------------------

REFUSED = {
    "matrix": ("m.mul(np.asmatrix(a), b)", "argument 'x'", "np.asarray(x)"),
    "matrix_second": ("m.mul(a, np.asmatrix(b))", "argument 'y'", "np.asarray(y)"),
    "masked": ("m.total(np.ma.masked_array(a, a > 0))", "argument 'x'", "x.filled("),
    "masked_second": ("m.mm(a, np.ma.masked_array(w, w > 0))", "argument 'w'", "w.filled("),
    "matrix_keyword": ("m.mm(a, w=np.asmatrix(w))", "argument 'w'", "np.asarray(w)"),
    "matrix_out": ("m.mul(a, b, out=np.asmatrix(np.empty((3, 4), np.float32)))", "out[0]",
                   "np.asarray"),
    "masked_out": ("m.total(a, out=np.ma.masked_array(np.empty(3, np.float32)))", "out[0]",
                   "out.data"),
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_matrix_and_masked_arrays_are_refused(module: ModuleType, name: str) -> None:
    code, argument, instead = REFUSED[name]
    got = call(module, code)
    assert got.get("type_error"), got
    message = got["message"]
    assert argument in message and instead in message, message
    assert message.startswith(code[2:].split("(")[0] + "()"), message


SUBCLASSES = {
    "memmap": ("m.mul(mm_a, b)", "a * b + 1"),
    "memmap_out": ("m.total(a, out=mm_out)", "a.sum(axis=1)"),
    "plain_subclass": ("m.mul(a.view(Plain), b.view(Plain))", "a * b + 1"),
    "plain_subclass_reduction": ("m.total(a.view(Plain))", "a.sum(axis=1)"),
    "plain_subclass_matmul": ("m.mm(a.view(Plain), w)", "a @ w"),
    "plain_subclass_out": ("m.mul(a, b, out=np.empty((3, 4), np.float32).view(Plain))",
                           "a * b + 1"),
}


@pytest.mark.parametrize("name", sorted(SUBCLASSES))
def test_other_subclasses_keep_working(module: ModuleType, name: str) -> None:
    code, ref = SUBCLASSES[name]
    got = call(module, code, ref)
    assert got.get("same"), got


def test_python_fallback_gives_numpys_answer_for_a_matrix(module: ModuleType) -> None:
    """fallback="python" runs the function itself on a refused argument (a matrix: ``*``
    is its matrix product)."""
    sq = "np.asmatrix(a[:3, :3])"
    got = call(module, f"m.lenient({sq}, {sq})", f"{sq} * {sq}")
    assert got.get("same") and got["type"] == "matrix", got


# 3. Byte order ---------------------------------------------------------------------------

def test_big_endian_out_is_named(module: ModuleType) -> None:
    got = call(module, "m.mul(a, b, out=np.empty((3, 4), '>f4'))")
    assert got.get("type_error"), got
    message = got["message"]
    assert "big-endian float32 (>f4)" in message, message
    assert "pass a native-byte-order array, e.g. np.empty((3, 4), np.float32)" in message, \
        message
    got = call(module, "m.flat(a, out=np.empty(12, '>f4'))")
    assert "e.g. np.empty(12, np.float32)" in got["message"], got


BIG_ENDIAN_INPUTS = {
    "elementwise": "m.mul(a.astype('>f4'), b)",
    "reduction": "m.total(a.astype('>f4'))",
    "matmul": "m.mm(a.astype('>f4'), w.astype('>f4'))",
    "reshape": "m.flat(a.astype('>f4'))",
    "strided": "m.mul(a.astype('>f4')[:, ::2], b[:, 1::2])",
}


@pytest.mark.parametrize("name", sorted(BIG_ENDIAN_INPUTS))
def test_big_endian_inputs_give_numpys_answer(module: ModuleType, name: str) -> None:
    code = BIG_ENDIAN_INPUTS[name]
    fn = code[2:].split("(")[0]
    got = call(module, code, f"m.{fn}.py_func({code.split('(', 1)[1]}")
    assert got.get("same"), got


def test_big_endian_input_of_another_dtype_is_named(module: ModuleType) -> None:
    got = call(module, "m.mul(a.astype('>f8'), b)")
    assert got.get("type_error"), got
    assert "big-endian float64 (>f8)" in got["message"], got["message"]
