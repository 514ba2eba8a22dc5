"""A module compiles function by function: a refused function raises its diagnostic when
it is called, the rest of its module compiles and runs (issue "A module compiles
function by function"). ``build`` and wheels still fail on any refused function."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pytest
from conftest import load_source
from helpers.proc import HOOK, Workspace, last_json

import cuvil_aot as cv

# Line 6 holds the refused call: the caret must point there.
MODELS = """\
import numpy as np
import cuvil_aot as cv

@cv.optimize
def bad(x: cv.f64["B", 4]):
    return np.fft.fft(x).real * 2.0

@cv.optimize
def scaled(x: cv.f64["B", 4]):
    return x * (1.0 / x.shape[1] ** 0.5)

@cv.optimize
def gelu(x: cv.f64["B", 4]):
    return 0.5 * x * (1.0 + np.tanh(0.7978845608 * (x + 0.044715 * x * x * x)))

@cv.optimize
def row_softmax(x: cv.f64["B", 4]):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)
"""

X = np.linspace(-2.0, 2.0, 12).reshape(3, 4)


def expected() -> dict[str, np.ndarray]:
    e = np.exp(X - X.max(axis=1, keepdims=True))
    return {
        "bad": np.fft.fft(X).real * 2.0,
        "scaled": X * (1.0 / X.shape[1] ** 0.5),
        "gelu": 0.5 * X * (1.0 + np.tanh(0.7978845608 * (X + 0.044715 * X * X * X))),
        "row_softmax": e / e.sum(axis=1, keepdims=True),
    }


GOOD = ("scaled", "gelu", "row_softmax")


def check_refusal(text: str, file: str) -> None:
    """The diagnostic of ``bad``: file:line:col, the line, a caret under the call."""
    lines = text.strip("\n").splitlines()
    assert lines[0].endswith(f"{file}:6:12: error: calling fft is not supported"), text
    assert lines[1].strip() == "return np.fft.fft(x).real * 2.0"
    assert lines[2].index("^") == lines[1].index("np.fft.fft(x)")


def test_good_functions_run_and_the_refused_one_raises_at_its_call(tmp_path: Path) -> None:
    module = load_source(tmp_path, MODELS, name="mbf_models")
    artifact = cv.compile_module(module)
    assert sorted(artifact.manifest["functions"]) == sorted(GOOD)
    assert list(artifact.refused) == ["bad"]
    artifact.load()
    want = expected()
    for name in GOOD:
        np.testing.assert_allclose(getattr(module, name)(X), want[name], rtol=1e-12, atol=1e-12)
    with pytest.raises(cv.CompileError) as info:
        module.bad(X)
    check_refusal(str(info.value), "mbf_models.py")


def test_fallback_python_runs_the_original_and_warns_once(tmp_path: Path) -> None:
    source = MODELS.replace("@cv.optimize\ndef bad", "@cv.optimize(fallback=\"python\")\ndef bad")
    module = load_source(tmp_path, source, name="mbf_fallback")
    cv.compile_module(module).load()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        first, second = module.bad(X), module.bad(X)
    np.testing.assert_allclose(first, expected()["bad"], rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(first, second)
    assert [w.category for w in caught] == [RuntimeWarning]
    message = str(caught[0].message)
    assert "bad was not compiled" in message and "calling fft is not supported" in message
    assert caught[0].filename == __file__  # attributed to the caller, not to cuvil_aot
    np.testing.assert_allclose(module.gelu(X), expected()["gelu"], rtol=1e-12, atol=1e-12)


CALL_ALL = """
import json
import numpy as np
{setup}
import {module} as target
from cuvil_aot.load import artifacts
x = np.linspace(-2.0, 2.0, 12).reshape(3, 4)
out, errors = {{}}, {{}}
for name in {names!r}:
    try:
        out[name] = getattr(target, name)(x).tolist()
    except Exception as exc:
        errors[name] = [type(exc).__name__, str(exc)]
o = artifacts.last_outcome(target.__name__)
print(json.dumps({{"out": out, "errors": errors, "how": o.how if o else None}}))
"""


def call_all(module: str, names: tuple[str, ...], setup: str = HOOK) -> str:
    return CALL_ALL.format(setup=setup, module=module, names=list(names))


ALL_NAMES = ("bad", *GOOD)


def check_outputs(result: dict[str, object], names: tuple[str, ...]) -> None:
    out = result["out"]
    assert isinstance(out, dict) and sorted(out) == sorted(names), result
    want = expected()
    for name in names:
        np.testing.assert_allclose(np.array(out[name]), want[name], rtol=1e-12, atol=1e-12)


def test_import_hook_imports_the_module_and_a_fix_rebuilds(tmp_path: Path) -> None:
    ws = Workspace.create(tmp_path)
    ws.write("models.py", MODELS)
    ws.write("allbad.py", MODELS.split("@cv.optimize\ndef scaled")[0])
    result = last_json(ws.run(call_all("models", ALL_NAMES)))
    assert result["how"] == "built"
    check_outputs(result, GOOD)
    kind, text = result["errors"]["bad"]
    assert kind == "CompileError"
    check_refusal(text, "models.py")

    # A second process: a hit (no build), the same refusal.
    again = last_json(ws.run(call_all("models", ALL_NAMES)))
    assert again["how"] in ("shortcut", "cached") and again["errors"] == result["errors"]

    # A module whose every function is refused still imports; its call raises.
    only = last_json(ws.run(call_all("allbad", ("bad",))))
    assert list(only["errors"]) == ["bad"] and only["errors"]["bad"][0] == "CompileError"
    check_refusal(only["errors"]["bad"][1], "allbad.py")

    # Fixing the refused function is a miss: rebuilt, and it now runs compiled.
    ws.edit("models.py", "np.fft.fft(x).real * 2.0", "np.abs(x) * 2.0")
    fixed = last_json(ws.run(call_all("models", ALL_NAMES)))
    assert fixed["how"] == "built" and fixed["errors"] == {}
    np.testing.assert_allclose(np.array(fixed["out"]["bad"]), np.abs(X) * 2.0, rtol=1e-12)
    check_outputs({"out": {k: v for k, v in fixed["out"].items() if k != "bad"}}, GOOD)


# Patches, in the child, that make the compiler itself fail on chosen functions: the
# frontend on np.tanh (gelu, line 14), codegen on row_softmax (no span: its def line).
CRASH = HOOK + """
import numpy as np
from cuvil_aot.compiler.codegen import ops_c, pymodule
from cuvil_aot.compiler.frontend import numpy_api
_call, _lower = numpy_api.call, pymodule.lower_signature
def call(fn, *args, **kwargs):
    if fn is np.tanh:
        raise KeyError("simulated frontend bug")
    return _call(fn, *args, **kwargs)
def lower_signature(symbol, name, *args):
    if name == "row_softmax":
        raise ops_c.Unsupported("matmul inside a elementwise kernel")
    return _lower(symbol, name, *args)
numpy_api.call, pymodule.lower_signature = call, lower_signature
"""


def test_a_crash_of_the_compiler_refuses_that_function_only(tmp_path: Path) -> None:
    ws = Workspace.create(tmp_path)
    ws.write("models.py", MODELS)
    result = last_json(ws.run(call_all("models", ALL_NAMES, CRASH)))
    check_outputs({"out": result["out"]}, ("scaled",))
    assert sorted(result["errors"]) == ["bad", "gelu", "row_softmax"]
    kind, text = result["errors"]["gelu"]
    lines = text.strip("\n").splitlines()
    assert kind == "CompileError"
    assert "models.py:14:5: error: internal cuvil_aot error" in lines[0]
    assert "please report it" in lines[0] and "KeyError: 'simulated frontend bug'" in lines[0]
    assert lines[1].strip().startswith("return 0.5 * x") and "^" in lines[2]
    kind, text = result["errors"]["row_softmax"]
    assert kind == "CompileError"
    assert "models.py:17:1: error: matmul inside a elementwise kernel" in text
    check_refusal(result["errors"]["bad"][1], "models.py")


TWO_BAD = """\
import numpy as np
import cuvil_aot as cv

@cv.optimize
def f(x: cv.f64["N"]):
    return np.fft.fft(x)

@cv.optimize
def g(x: cv.f64["N"]):
    return x * 2.0
"""

BUILD_CRASHING = """
import sys
from cuvil_aot.compiler import pipeline
_build = pipeline.build
def build(module, *args, **kwargs):
    if module.__name__ == "pkg.crashy":
        raise KeyError("simulated crash of the compiler")
    return _build(module, *args, **kwargs)
pipeline.build = build
from cuvil_aot.cli import main
sys.exit(main(["build", *sys.argv[1:]]))
"""


def test_build_fails_listing_every_module_and_writes_nothing_refused(tmp_path: Path) -> None:
    ws = Workspace.create(tmp_path)
    ws.write("pkg/__init__.py", "")
    ws.write("pkg/bad_one.py", TWO_BAD)
    ws.write("pkg/bad_two.py", TWO_BAD.replace("np.fft.fft(x)", "np.fft.ifft(x)"))
    ws.write("pkg/good.py", TWO_BAD.replace("np.fft.fft(x)", "x + 1.0"))
    ws.write("pkg/crashy.py", TWO_BAD.replace("np.fft.fft(x)", "x - 1.0"))
    proc = ws.run(BUILD_CRASHING, "pkg")
    assert proc.returncode == 1, proc.stderr
    err = proc.stderr
    assert "error: pkg.bad_one: " in err and "bad_one.py:6:12: error: calling fft" in err
    assert "error: pkg.bad_two: " in err and "bad_two.py:6:12: error: calling ifft" in err
    assert "error: pkg.crashy: internal cuvil_aot error" in err
    assert "simulated crash of the compiler" in err
    assert "pkg.good: built" in err

    # --inplace writes no prebuilt extension for a module with a refused function.
    proc = ws.cli("build", "--inplace", "pkg")
    assert proc.returncode == 1 and "bad_one.py:6:12" in proc.stderr
    written = sorted(p.name for p in (ws.root / "pkg").iterdir() if ".cuvil_aot" in p.name)
    assert written and all(name.startswith(("good.", "crashy.")) for name in written), written
    assert json.loads((ws.root / "pkg" / next(n for n in written if n.endswith(".json")))
                      .read_text())
