"""The pieces behind a fast cache hit, in-process (nothing here compiles C): the cheap
key, the shortcut records, the prebuilt manifest format, the hook's byte scan, targets."""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
from conftest import load_source

from cuvil_aot import importer
from cuvil_aot.cache import CacheError, CacheKey
from cuvil_aot.cli import targets
from cuvil_aot.compiler import pipeline
from cuvil_aot.load import prebuilt, prekey, shortcuts, toolstamp

MOD = """
import numpy as np
import cuvil_aot as cv
{imports}

SCALE = {scale}


def unrelated(y):
    return y + {unrelated}


@cv.optimize
def f(x: cv.f32["N"]):
    return {body}
"""


def module(tmp: Path, name: str, *, body: str = "x * SCALE", scale: str = "2.0",
           unrelated: str = "1", imports: str = "") -> ModuleType:
    return load_source(tmp, MOD.format(body=body, scale=scale, unrelated=unrelated,
                                       imports=imports), name)


@pytest.fixture
def tmp_syspath(tmp_path: Path) -> object:
    sys.path.insert(0, str(tmp_path))
    yield tmp_path
    sys.path.remove(str(tmp_path))


def test_environment_agrees_with_the_full_key(tmp_path: Path) -> None:
    mod = module(tmp_path, "pk_env")
    full = pipeline.key_components(mod)
    cheap = prekey.environment(())
    shared = set(cheap) & set(full)
    assert shared >= {"cuvil_aot", "python_abi", "numpy", "cpu_levels"}
    for name in shared:
        assert full[name] == cheap[name], name


def test_cheap_key_follows_what_the_full_key_follows(tmp_syspath: Path) -> None:
    tmp = tmp_syspath
    (tmp / "pk_helper.py").write_text("def act(x):\n    return x + 1.0\n")
    importlib.invalidate_caches()
    base = prekey.components(module(tmp, "pk_a", imports="from pk_helper import act",
                                    body="act(x) * SCALE"))
    assert base is not None
    same = prekey.components(module(tmp, "pk_a", imports="from pk_helper import act",
                                    body="act(x) * SCALE"))
    assert same == base
    constant = prekey.components(module(tmp, "pk_a", imports="from pk_helper import act",
                                        body="act(x) * SCALE", scale="3.0"))
    assert constant is not None and constant["deps"] != base["deps"]
    (tmp / "pk_helper.py").write_text("def act(x):\n    return x + 2.0\n")
    helper = prekey.components(module(tmp, "pk_a", imports="from pk_helper import act",
                                      body="act(x) * SCALE"))
    assert helper is not None and helper["deps"] != base["deps"]
    sys.modules.pop("pk_helper")


def test_cheap_key_follows_imports_inside_the_function(tmp_syspath: Path) -> None:
    """``from pk_inner import K`` in the body: the module's file and K's value are in the
    key; a module not loaded yet gives no cheap key (the full key decides)."""
    tmp = tmp_syspath
    (tmp / "pk_inner.py").write_text("K = 2.0\n")
    importlib.invalidate_caches()
    src = MOD.replace("    return {body}", "    from pk_inner import K\n    return {body}")
    load = lambda: load_source(tmp, src.format(body="x * K", scale="2.0", unrelated="1",
                                               imports=""), "pk_i")  # noqa: E731
    sys.modules.pop("pk_inner", None)
    assert prekey.components(load()) is None  # pk_inner not imported yet
    import pk_inner

    base = prekey.components(load())
    assert base is not None
    pk_inner.K = 3.0  # a value changed at run time
    assert prekey.components(load())["deps"] != base["deps"]
    pk_inner.K = 2.0
    (tmp / "pk_inner.py").write_text("K = 2.0  # edited\n")  # the file's bytes
    assert prekey.components(load())["deps"] != base["deps"]
    sys.modules.pop("pk_inner")


def test_cheap_key_follows_types_defined_elsewhere(tmp_syspath: Path) -> None:
    """A TypedDict or dict type from another module, also as a string annotation (``from
    __future__ import annotations``): an edit to it changes the key (the compiler reads it)."""
    tmp = tmp_syspath
    src = ("from __future__ import annotations\nimport cuvil_aot as cv\n"
           "from pk_types import Layer, Norm\n\n@cv.optimize\n"
           "def g(x: cv.f32['N'], p: Layer, n: Norm):\n    return x * p['w'] + n['g']\n")
    keys = []
    for size in ("'N'", "4"):
        (tmp / "pk_types.py").write_text(
            "from typing import TypedDict\nimport cuvil_aot as cv\n\n"
            f"class Layer(TypedDict):\n    w: cv.f32[{size}]\n\n"
            f"Norm = {{'g': cv.f32[{size}]}}\n")
        importlib.invalidate_caches()
        sys.modules.pop("pk_types", None)
        keys.append(prekey.components(load_source(tmp, src, "pk_t")))
    assert None not in keys and keys[0]["deps"] != keys[1]["deps"]
    sys.modules.pop("pk_types")
    (tmp / "pk_weights.py").write_text("P = {}\n")  # filled at run time, as weights load
    importlib.invalidate_caches()
    import pk_weights

    like = ("from __future__ import annotations\nimport numpy as np\nimport cuvil_aot as cv\n"
            "from pk_weights import P\n\n@cv.optimize\n"
            "def h(x: cv.f32['N'], p: cv.like(P)) -> np.ndarray:\n    return x\n")
    keys = []
    for n, value in ((1000, 0), (1000, 1), (2000, 0)):  # what the signature reads: shapes
        pk_weights.P["w"] = np.full((n, 1000), value, np.float32)
        keys.append(prekey.components(load_source(tmp, like, "pk_l")))
    assert None not in keys
    assert keys[0]["deps"] == keys[1]["deps"] != keys[2]["deps"]  # other weights: a hit
    import cuvil_aot.nn  # annotations for type checkers (npt.NDArray: a class's getsets)

    assert prekey.components(cuvil_aot.nn) is not None
    sys.modules.pop("pk_weights")


def test_cheap_key_follows_a_methods_classes(tmp_syspath: Path) -> None:
    """A marked method's class and the classes its attributes are declared as, defined in
    another module: an edit to their annotations or to a method ``self`` inlines changes
    the key; the method's own file is the module's."""
    tmp = tmp_syspath
    src = ("from __future__ import annotations\nimport cuvil_aot as cv\n"
           "from pk_layers import Lin\n\nclass Block:\n    lin: Lin\n\n    @cv.optimize\n"
           "    def f(self, x: cv.f32['N']):\n        return self.lin(x)\n")
    keys = []
    for size, body in (("'N'", "x * self.w"), ("4", "x * self.w"), ("4", "x + self.w")):
        (tmp / "pk_layers.py").write_text(
            f"import cuvil_aot as cv\n\nclass Lin:\n    w: cv.f32[{size}]\n\n"
            f"    def __call__(self, x):\n        return {body}\n")
        importlib.invalidate_caches()
        sys.modules.pop("pk_layers", None)
        keys.append(prekey.components(load_source(tmp, src, "pk_m")))
    assert None not in keys and len({k["deps"] for k in keys}) == 3
    sys.modules.pop("pk_layers")


def test_runtime_values_are_seen_even_when_the_bytes_are_equal(tmp_path: Path) -> None:
    mod = module(tmp_path, "pk_rt")
    before = prekey.dependencies(mod)
    mod.SCALE = 5.0  # e.g. read from the environment at import time
    after = prekey.dependencies(mod)
    assert before is not None and after is not None
    assert before["globals"]["pk_rt.SCALE"] == "float 2.0"
    assert after["globals"]["pk_rt.SCALE"] == "float 5.0"


def test_no_cheap_key_without_a_source_file() -> None:
    mod = ModuleType("pk_nofile")
    assert prekey.components(mod) is None


def test_compiler_stamp_does_not_run_anything(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    assert toolstamp.compiler_stamp("") is None  # no compiler on PATH, nothing run
    fake = tmp_path / "fakecc"
    fake.write_text("#!/bin/sh\nexit 1\n")
    fake.chmod(0o755)
    stamp = toolstamp.compiler_stamp(str(fake))
    assert stamp is not None and stamp["cc"].startswith(f"{fake}:") and stamp["nvcc"] == ""
    (tmp_path / "nvcc").write_text("#!/bin/sh\nexit 1\n")
    (tmp_path / "nvcc").chmod(0o755)
    assert toolstamp.compiler_stamp(str(fake))["nvcc"].startswith(f"{tmp_path / 'nvcc'}:")
    assert toolstamp.compiler_stamp(str(fake), with_nvcc=False)["nvcc"] == ""


def test_shortcuts_round_trip_and_garbage(tmp_path: Path) -> None:
    (tmp_path / "tmp").mkdir()
    key = CacheKey({"module": "m", "source": "abc"})
    stamp = {"command": "gcc", "cc": "/usr/bin/gcc:1:2", "nvcc": ""}
    shortcuts.record(tmp_path, "m", shortcuts.Record("p1", stamp, key))
    assert shortcuts.find(tmp_path, "m", "p1", stamp, False) == [key]
    other = dict(stamp, cc="/usr/bin/gcc:3:2")
    assert shortcuts.find(tmp_path, "m", "p1", other, False) == []  # compiler changed
    assert shortcuts.find(tmp_path, "m", "p1", other, True) == [key]  # strict: any will do
    assert shortcuts.find(tmp_path, "m", "p2", stamp, True) == []
    for path in (tmp_path / "shortcuts").iterdir():
        path.write_bytes(b"\xff garbage")
    assert shortcuts.load(tmp_path, "m") == []
    assert shortcuts.clear(tmp_path) == 1


PREBUILT = {
    "format": "cuvil_aot.prebuilt", "schema": 1, "module": "pkg.mod", "ext_name": "_cvk_x",
    "file": "mod.cuvil_aot.so", "sha256": "0" * 64, "size": 3,
    "prekey": {"module": "pkg.mod", "numpy": "2.0", "cpu_levels": "3"},
    "components": {"module": "pkg.mod"},
}


@pytest.mark.parametrize("change", [
    {"format": "other"}, {"size": -1}, {"sha256": "xyz"}, {"file": "../evil.so"},
    {"module": "not a module"}, {"prekey": []}, {"extra": 1},
])
def test_prebuilt_manifest_is_strict(change: dict[str, object]) -> None:
    doc = {**PREBUILT, **change}
    with pytest.raises(CacheError):
        prebuilt.parse(Path("m.json"), json.dumps(doc).encode())


def test_prebuilt_mismatch_names_components() -> None:
    pre = prebuilt.parse(Path("m.json"), json.dumps(PREBUILT).encode())
    same = {"module": "pkg.mod", "numpy": "2.0", "cpu_levels": "4"}
    assert prebuilt.mismatch(pre, "pkg.mod", same, host_level=4) == []
    reasons = prebuilt.mismatch(pre, "pkg.mod", dict(same, numpy="2.1"), host_level=2)
    assert any(r.startswith("numpy:") for r in reasons)
    assert any("levels [3]" in r for r in reasons)
    assert prebuilt.mismatch(pre, "other", same, 4) == ["it was built for module 'pkg.mod'"]


def test_byte_scan_and_stdlib_skip() -> None:
    assert importer.is_marked_source(b"import cuvil_aot as cv\n@cv.optimize\ndef f(): ...")
    assert not importer.is_marked_source(b"import cuvil_aot\n")
    assert not importer.is_marked_source(b"def optimize(): ...")
    finder = importer.CuvilFinder()
    assert not finder._may_be_marked(json.__file__)
    assert finder._may_be_marked(str(Path(__file__).parents[1] / "examples" / "models.py"))


def test_targets(tmp_path: Path) -> None:
    (tmp_path / "pkg" / "sub").mkdir(parents=True)
    for init in ("pkg/__init__.py", "pkg/sub/__init__.py"):
        (tmp_path / init).write_text("")
    (tmp_path / "pkg" / "sub" / "m.py").write_text("import cuvil_aot\n# optimize\n")
    (tmp_path / "pkg" / "plain.py").write_text("x = 1\n")
    assert targets.module_name(tmp_path / "pkg" / "sub" / "m.py") == (tmp_path, "pkg.sub.m")
    assert targets.module_name(tmp_path / "pkg" / "__init__.py") == (tmp_path, "pkg")
    assert targets.marked_files(tmp_path) == [tmp_path / "pkg" / "sub" / "m.py"]
    assert targets.split_function("pkg.mod:fn") == ("pkg.mod", "fn")
    assert targets.split_function("pkg.mod:Block.forward") == ("pkg.mod", "Block.forward")
    assert targets.split_function("pkg/mod.py") == ("pkg/mod.py", None)
