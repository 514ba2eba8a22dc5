"""Never old code after an edit: the cache keys see every value compiled code reads.

Each finding of the trust issue first, as a user would meet it (edit a module, import it
in a fresh process, compare with ``py_func``), then a property test that edits a module
and the module it imports at random, through reloads in one process and across fresh
processes, and checks that the compiled result always equals the Python function's.
"""

from __future__ import annotations

import importlib
import itertools
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from helpers.proc import Workspace, last_json
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cuvil_aot import install, uninstall

CHECK = """
import json
import numpy as np
import cuvil_aot
cuvil_aot.install()
import mod
x = np.linspace(-1.0, 1.0, 7)
got = np.asarray(mod.f(x), dtype=np.float64)
want = np.asarray(mod.f.py_func(x), dtype=np.float64)
print(json.dumps({"same": bool(np.allclose(got, want, rtol=1e-6)),
                  "dtype": [str(np.asarray(mod.f(x)).dtype),
                            str(np.asarray(mod.f.py_func(x)).dtype)],
                  "how": cuvil_aot.info()["modules"]["mod"]["how"]}))
"""

HEADER = "import numpy as np\nimport cuvil_aot as cv\n"
BODY = "\n@cv.optimize\ndef f(x: cv.f64['N']):\n    return {expr}\n"

# finding: (module text before, the edit (old, new))
FINDINGS = {
    "function alias": ("ACT = np.tanh\n", "ACT(x)", ("np.tanh", "np.sin")),
    "dtype alias": ("DT = np.float32\n", "x.astype(DT)", ("np.float32", "np.float64")),
    "dict item": ('CFG = {"scale": 2.0}\n', 'x * CFG["scale"]', ("2.0", "3.0")),
    "list item": ("W = [2.0, 3.0]\n", "x * W[0]", ("2.0, 3.0", "4.0, 3.0")),
    "class attribute": ("class K:\n    S = 2.0\n", "x * K.S", ("S = 2.0", "S = 5.0")),
    "helper default": ("T = 2.0\n\ndef act(x, t=T):\n    return x * t\n", "act(x)",
                       ("T = 2.0", "T = 7.0")),
}


@pytest.mark.parametrize("finding", sorted(FINDINGS))
def test_an_edited_value_is_never_served_from_the_old_build(tmp_path: Path,
                                                            finding: str) -> None:
    defs, expr, (old, new) = FINDINGS[finding]
    ws = Workspace.create(tmp_path)
    ws.write("mod.py", HEADER + defs + BODY.format(expr=expr))
    first = last_json(ws.run(CHECK))
    assert first["same"] and first["how"] == "built"
    ws.edit("mod.py", old, new)
    second = last_json(ws.run(CHECK))
    assert second["same"] and second["dtype"][0] == second["dtype"][1], second
    assert second["how"] == "built"  # a new build, not the old entry


RELOAD = """
import importlib, json
import numpy as np
import cuvil_aot
cuvil_aot.install()
import mod
x = np.ones(3)
before = float(mod.f(x)[0])
text = open("mod.py").read()
open("mod.py", "w").write(text.replace("2.0", "3.0"))
importlib.reload(mod)
print(json.dumps([before, float(mod.f(x)[0]), float(mod.f.py_func(x)[0])]))
"""


def test_edit_and_reload_in_one_process_compiles_the_new_source(tmp_path: Path) -> None:
    """The Jupyter/autoreload workflow: the frontend reads the file as it is now."""
    ws = Workspace.create(tmp_path)
    ws.write("mod.py", HEADER + BODY.format(expr="x * 2.0"))
    assert last_json(ws.run(RELOAD)) == [2.0, 3.0, 3.0]


def test_a_value_that_cannot_be_digested_is_refused_with_a_hint(tmp_path: Path) -> None:
    ws = Workspace.create(tmp_path)
    ws.write("mod.py", HEADER + "RNG = np.random.default_rng(0)\n"
             + BODY.format(expr="x * RNG.random()"))
    proc = ws.run(CHECK)
    assert proc.returncode != 0
    assert "mod.py:" in proc.stderr and "cannot tell when it changes" in proc.stderr
    assert "module-level constant" in proc.stderr


# --- the property test ---------------------------------------------------------------

DEP = """\
OFFSET = {offset}

def helper(x, k={k}):
    return x * k {op} OFFSET
"""

MOD = """\
import numpy as np
import cuvil_aot as cv
import {dep} as dep

ACT = np.{act}
DT = np.{dt}
CFG = {{"scale": {scale}}}
W = [{w}, 1.0]


class K:
    S = {s}


def act(x, t={t}):
    return ACT(x) * t


@cv.optimize
def f(x: cv.f64["N"]):
    return (act(x) * CFG["scale"] {sign} W[0] * K.S + dep.helper(x)).astype(DT)
"""

numbers = st.sampled_from([0.5, 1.0, 1.5, 2.0, -3.0])
STATE = st.fixed_dictionaries({
    "act": st.sampled_from(["tanh", "sin", "cos", "exp"]),
    "dt": st.sampled_from(["float32", "float64"]),
    "scale": numbers, "w": numbers, "s": numbers, "t": numbers, "sign": st.sampled_from("+-"),
    "offset": numbers, "k": numbers, "op": st.sampled_from("+-"),
})


def _write(folder: Path, name: str, state: dict[str, Any]) -> None:
    dep = f"{name}_dep"
    (folder / f"{dep}.py").write_text(DEP.format(**state))
    (folder / f"{name}.py").write_text(MOD.format(dep=dep, **state))


def _agrees(module: Any) -> bool:
    x = np.linspace(-1.0, 1.0, 9)
    got, want = module.f(x), module.f.py_func(x)
    return bool(got.dtype == want.dtype and np.allclose(got, want, rtol=1e-6))


@pytest.fixture
def hooked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(sys, "dont_write_bytecode", True)  # no .pyc from the same second
    install(cache_dir=tmp_path / "cache")
    yield tmp_path
    uninstall()


EDITS_PER_EXAMPLE = 6
_examples = itertools.count()


@settings(max_examples=35, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(states=st.lists(STATE, min_size=EDITS_PER_EXAMPLE, max_size=EDITS_PER_EXAMPLE))
def test_random_edits_with_reload_always_run_the_current_code(hooked: Path,
                                                              states: list[dict[str, Any]]
                                                              ) -> None:
    name = f"edited_{next(_examples)}"
    _write(hooked, name, states[0])
    module = importlib.import_module(name)
    try:
        assert _agrees(module)
        for state in states[1:]:
            _write(hooked, name, state)
            importlib.reload(sys.modules[f"{name}_dep"])
            module = importlib.reload(module)
            assert _agrees(module), state
    finally:
        sys.modules.pop(name, None)
        sys.modules.pop(f"{name}_dep", None)


FRESH = """
import json, sys
import numpy as np
import cuvil_aot
cuvil_aot.install()
import {name} as m
x = np.linspace(-1.0, 1.0, 9)
got, want = m.f(x), m.f.py_func(x)
print(json.dumps(bool(got.dtype == want.dtype and np.allclose(got, want, rtol=1e-6))))
"""


@settings(max_examples=4, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(states=st.lists(STATE, min_size=5, max_size=5))
def test_random_edits_across_fresh_processes_always_run_the_current_code(
        tmp_path: Path, states: list[dict[str, Any]]) -> None:
    ws = Workspace.create(tmp_path / f"w{next(_examples)}")
    for state in states:
        _write(ws.root, "edited", state)
        assert last_json(ws.run(textwrap.dedent(FRESH.format(name="edited")))), state
