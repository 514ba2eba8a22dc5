"""The knobs the native runtime runs with (CUVIL_AOT_CUDA_ONE, CUVIL_AOT_CUDA_POOL,
CUVIL_AOT_CUDA_GRAPH, CUVIL_AOT_CUDA_WGMMA, CUVIL_AOT_CUDA_WGMMA_TRANSPOSE, CUVIL_AOT_MODE):
read and checked by cuvil_aot.knobs, handed to native.configure at import (the runtime
reads no environment), and reported by native.info()."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cuvil_aot import knobs
from cuvil_aot.runtime import native as rt

ROOT = Path(rt.__file__).resolve().parent.parent
"""Where this process imports cuvil_aot from: site-packages in CI, the checkout here."""
DEFAULTS = {"cuda_one": True, "cuda_pool": True, "mode": "import", "cuda_graph": 4,
            "cuda_wgmma": True, "cuda_wgmma_transpose": True, "cuda_attention": True}


@pytest.fixture(autouse=True)
def _restore_config():
    before = {name: rt.info()[name] for name in DEFAULTS}
    yield
    rt.configure(**before)


def test_defaults():
    k = knobs.read({})
    assert (k.cuda_one, k.cuda_pool, k.mode) == (True, True, "import")
    assert k == knobs.Knobs()


@pytest.mark.parametrize("name, field", [("CUVIL_AOT_CUDA_ONE", "cuda_one"),
                                         ("CUVIL_AOT_CUDA_POOL", "cuda_pool"),
                                         ("CUVIL_AOT_CUDA_WGMMA", "cuda_wgmma"),
                                         ("CUVIL_AOT_CUDA_WGMMA_TRANSPOSE",
                                          "cuda_wgmma_transpose"),
                                         ("CUVIL_AOT_CUDA_ATTENTION", "cuda_attention")])
def test_flags_are_parsed(name, field):
    assert getattr(knobs.read({name: "0"}), field) is False
    assert getattr(knobs.read({name: " 1 "}), field) is True
    assert getattr(knobs.read({name: ""}), field) is True
    for bad in ("yes", "2", "off", "true"):
        with pytest.raises(knobs.KnobError, match=name):
            knobs.read({name: bad})


def test_mode_is_checked():
    assert knobs.read({"CUVIL_AOT_MODE": "strict"}).mode == "strict"
    with pytest.raises(knobs.KnobError, match="CUVIL_AOT_MODE"):
        knobs.read({"CUVIL_AOT_MODE": "eager"})


def test_cuda_graph_is_a_launch_count():
    assert knobs.read({}).cuda_graph == 4
    assert knobs.read({"CUVIL_AOT_CUDA_GRAPH": "0"}).cuda_graph == 0
    assert knobs.read({"CUVIL_AOT_CUDA_GRAPH": " 12 "}).cuda_graph == 12
    for bad in ("-1", "off", "1025"):
        with pytest.raises(knobs.KnobError, match="CUVIL_AOT_CUDA_GRAPH"):
            knobs.read({"CUVIL_AOT_CUDA_GRAPH": bad})
    rt.configure(cuda_graph=0)
    assert rt.info()["cuda_graph"] == 0
    for bad in (-1, 1025, "4", 2.0):
        with pytest.raises(ValueError, match="cuda_graph="):
            rt.configure(cuda_graph=bad)
    assert rt.info()["cuda_graph"] == 0
    assert set(rt.info()["cuda_graph_stats"]) == {"replays", "builds", "node_updates", "plain",
                                                  "capturing"}


def test_configure_sets_and_reports():
    rt.configure(cuda_one=False, cuda_pool=False, mode="strict")
    info = rt.info()
    assert (info["cuda_one"], info["cuda_pool"], info["mode"]) == (False, False, "strict")
    rt.configure(mode="lazy")  # None leaves the others as they are
    info = rt.info()
    assert (info["cuda_one"], info["cuda_pool"], info["mode"]) == (False, False, "lazy")
    rt.configure(cuda_one=True, cuda_pool=True, mode="import")
    assert {name: rt.info()[name] for name in DEFAULTS} == DEFAULTS


def test_configure_rejects_a_bad_mode_and_keeps_the_settings():
    rt.configure(cuda_one=False)
    for bad in ("eager", 1, b"strict"):
        with pytest.raises(ValueError, match="mode="):
            rt.configure(cuda_one=True, mode=bad)
    assert rt.info()["cuda_one"] is False and rt.info()["mode"] == "import"


def _runtime_info(**env: str) -> subprocess.CompletedProcess[str]:
    """native.info() after ``import cuvil_aot`` in a child with these knobs set."""
    clean = {k: v for k, v in os.environ.items()
             if k not in ("CUVIL_AOT_CUDA_ONE", "CUVIL_AOT_CUDA_POOL", "CUVIL_AOT_CUDA_GRAPH",
                          "CUVIL_AOT_MODE")}
    clean["PYTHONPATH"] = os.pathsep.join([str(ROOT), clean.get("PYTHONPATH", "")])
    code = ("import json, cuvil_aot\nfrom cuvil_aot.runtime import native\n"
            "i = native.info()\nprint(json.dumps({k: i[k] for k in "
            f"{sorted(DEFAULTS)!r}}}))")
    # Not from the checkout's root: there `-c` would import the sources (no _runtime in CI).
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, env={**clean, **env}, cwd=ROOT)


@pytest.mark.parametrize("env, want", [
    ({}, DEFAULTS),
    ({"CUVIL_AOT_CUDA_ONE": "0"}, {**DEFAULTS, "cuda_one": False}),
    ({"CUVIL_AOT_CUDA_POOL": "0"}, {**DEFAULTS, "cuda_pool": False}),
    ({"CUVIL_AOT_CUDA_GRAPH": "0"}, {**DEFAULTS, "cuda_graph": 0}),
    ({"CUVIL_AOT_MODE": "strict", "CUVIL_AOT_CUDA_ONE": "1"}, {**DEFAULTS, "mode": "strict"}),
])
def test_import_hands_the_knobs_to_the_runtime(env, want):
    proc = _runtime_info(**env)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == want


def test_import_refuses_a_bad_knob():
    proc = _runtime_info(CUVIL_AOT_CUDA_POOL="no")
    assert proc.returncode != 0
    assert "KnobError" in proc.stderr and "CUVIL_AOT_CUDA_POOL" in proc.stderr


@pytest.mark.parametrize("name", ["cuda_wgmma", "cuda_wgmma_transpose", "cuda_attention"])
def test_gpu_paths_can_be_turned_off(name):
    rt.configure(**{name: False})
    assert rt.info()[name] is False
    rt.configure(**{name: True})
    assert rt.info()[name] is True
