"""cuvil_aot.cache: unsafe roots and entries, explain, verified loading, the parser."""

from __future__ import annotations

import ast
import contextlib
import json
import os
import shlex
import shutil
import subprocess
import sys
import sysconfig
import types
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers.cache_store import (
    EXT,
    SUFFIX,
    make_key,
    publish,
    rewrite,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cuvil_aot import cache
from cuvil_aot.cache import CacheError, CacheWarning, Store
from cuvil_aot.cache import entry as entry_mod
from cuvil_aot.cache import manifest as mf
from cuvil_aot.cache import store as store_mod
from cuvil_aot.runtime import extension

# ---- safety ----------------------------------------------------------------------


def test_root_and_parents_are_created_private(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        store = Store(tmp_path / "a" / "b" / "root")
    finally:
        os.umask(old)
    for path in (
        tmp_path / "a",
        tmp_path / "a" / "b",
        store.root,
        *(store.root / d for d in store_mod.SUBDIRS),
    ):
        assert path.stat().st_mode & 0o777 == 0o700


@pytest.mark.parametrize("mode", [0o777, 0o770, 0o702])
def test_group_or_other_writable_root_is_refused(tmp_path: Path, mode: int) -> None:
    root = tmp_path / "root"
    root.mkdir()
    root.chmod(mode)
    with pytest.raises(CacheError, match="writable by group or others"):
        Store(root)


def test_store_that_became_unsafe_is_refused_on_lookup(tmp_path: Path) -> None:
    store = Store(tmp_path / "root")
    publish(store)
    (store.root / "entries").chmod(0o777)
    with pytest.raises(CacheError, match="writable by group or others"):
        store.lookup(make_key())


def test_symlinked_root_is_refused(tmp_path: Path) -> None:
    real = tmp_path / "real"
    Store(real)
    (tmp_path / "link").symlink_to(real)
    with pytest.raises(CacheError, match="is a symlink"):
        Store(tmp_path / "link")
    (real / "entries").rename(real / "elsewhere")
    (real / "entries").symlink_to(real / "elsewhere")
    with pytest.raises(CacheError, match="is a symlink"):
        Store(real)


@pytest.mark.skipif(os.geteuid() != 0, reason="chown to another user needs root")
def test_foreign_owned_root_and_entry_are_refused(tmp_path: Path) -> None:
    store = Store(tmp_path / "root")
    entry = publish(store)
    os.chown(entry.path, 12345, 12345)
    with pytest.warns(CacheWarning, match="owned by uid 12345"):
        assert store.lookup(make_key()) is None
    os.chown(store.root, 12345, 12345)
    with pytest.raises(CacheError, match="owned by uid 12345"):
        Store(store.root)


@pytest.mark.parametrize(
    "what", ["entry dir writable", "file writable", "entry symlink", "file symlink"]
)
def test_unsafe_entries_are_never_used(tmp_path: Path, what: str) -> None:
    store = Store(tmp_path / "root")
    entry = publish(store)
    if what == "entry dir writable":
        entry.path.chmod(0o777)
    elif what == "file writable":
        entry.file(EXT).chmod(0o666)
    elif what == "entry symlink":
        entry.path.rename(tmp_path / "moved")
        entry.path.symlink_to(tmp_path / "moved")
    else:
        target = entry.file(EXT)
        target.rename(tmp_path / "moved.so")
        target.symlink_to(tmp_path / "moved.so")
    with pytest.warns(CacheWarning, match="writable by group|cannot be opened"):
        assert store.lookup(make_key()) is None


def test_root_deleted_while_running_is_recreated(tmp_path: Path) -> None:
    store = Store(tmp_path / "root")
    publish(store)
    shutil.rmtree(store.root)
    assert store.lookup(make_key()) is None
    assert (store.size(), store.entries(), store.evict(0), store.verify_all()) == (0, [], [], [])
    assert publish(store).path.exists() and store.root.stat().st_mode & 0o777 == 0o700


def test_default_and_private_locations(tmp_path: Path) -> None:
    if sys.platform != "darwin":
        env = {"HOME": "/home/u", "XDG_CACHE_HOME": "/xdg"}
        assert cache.default_cache_dir(env) == Path("/xdg/cuvil_aot")
        env["XDG_CACHE_HOME"] = "relative/ignored"
        assert cache.default_cache_dir(env) == Path("/home/u/.cache/cuvil_aot")
    private = cache.private_store()
    assert private.root.stat().st_mode & 0o777 == 0o700
    assert publish(private).path.is_relative_to(private.root)


# ---- explain ---------------------------------------------------------------------


def test_explain_names_the_changed_components(tmp_path: Path) -> None:
    store = Store(tmp_path)
    assert "no build is recorded" in store.explain("pkg.mod", make_key())
    publish(store)
    assert "only build recorded" in store.explain("pkg.mod", make_key())
    new = make_key(options="opt=3", source="x" * 300, cuda="12.4")
    text = store.explain("pkg.mod", new)
    assert "differs from the newest recorded build" in text
    assert "options: 'opt=2' -> 'opt=3'" in text and "cuda: (absent) -> '12.4'" in text
    assert "source: 'def f(x):\\n    return x + 1\\n' -> <300 chars, sha256" in text
    assert "signatures" not in text
    publish(store, new)
    assert "the newest build" in store.explain("pkg.mod", new) and "cuda" in store.explain(
        "pkg.mod", new
    )
    assert "no build is recorded" in store.explain("other.mod", new)


# ---- loading extensions ----------------------------------------------------------

TINY_C = r"""
#include <Python.h>
#include <stdio.h>
#include <stdlib.h>
__attribute__((constructor)) static void mark(void) {
    const char *path = getenv("CV_TEST_MARKER");
    FILE *f = path ? fopen(path, "a") : NULL;
    if (f) { fputs("loaded\n", f); fclose(f); }
}
static PyObject *answer(PyObject *self, PyObject *args) { return PyLong_FromLong(ANSWER); }
static PyMethodDef methods[] = {{"answer", answer, METH_NOARGS, NULL}, {NULL, NULL, 0, NULL}};
static struct PyModuleDef def = {PyModuleDef_HEAD_INIT, "cv_tiny", NULL, -1, methods};
PyMODINIT_FUNC PyInit_cv_tiny(void) { return PyModule_Create(&def); }
"""
TINY = "cv_tiny" + SUFFIX


@pytest.fixture(scope="module")
def tiny_ext(tmp_path_factory: pytest.TempPathFactory) -> dict[int, bytes]:
    """The tiny extension built with answer() returning 42 and 43."""
    cc = shlex.split(sysconfig.get_config_var("CC") or "cc")
    if shutil.which(cc[0]) is None:
        pytest.skip("no C compiler")
    folder = tmp_path_factory.mktemp("tiny")
    (folder / "tiny.c").write_text(TINY_C)
    built = {}
    for answer in (42, 43):
        out = folder / f"{answer}.so"
        include = sysconfig.get_paths()["include"]
        subprocess.run(
            [
                *cc,
                "-shared",
                "-fPIC",
                f"-DANSWER={answer}",
                f"-I{include}",
                "-o",
                str(out),
                str(folder / "tiny.c"),
            ],
            check=True,
        )
        built[answer] = out.read_bytes()
    return built


@pytest.fixture
def marker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("CV_TEST_MARKER", str(tmp_path / "marker"))
    return tmp_path / "marker"


def _publish_ext(store: Store, data: bytes, source: str = "tiny") -> cache.Entry:
    return publish(store, make_key(source=source), files={TINY: data})


def _load(entry: cache.Entry, loader: Callable[..., types.ModuleType] = extension.load
          ) -> types.ModuleType:
    """Load the entry's extension as the loader does: the verified bytes, then dlopen."""
    with entry.verified(TINY) as (origin, real_path):
        return loader("cv_tiny", origin, real_path)


@pytest.mark.parametrize("proc", [True, False], ids=["proc-fd", "private-copy"])
def test_load_extension_runs_the_verified_file(
    tmp_path: Path,
    tiny_ext: dict[int, bytes],
    marker: Path,
    proc: bool,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if not proc:
        monkeypatch.setattr(entry_mod, "_proc_fd_path", lambda fd: None)
    store = Store(tmp_path / "root")
    loaded = []
    for answer in (42, 43):  # two builds of one module name each load their own code
        entry = store.lookup(make_key(source=str(answer))) or _publish_ext(
            store, tiny_ext[answer], str(answer)
        )
        module = _load(entry)
        loaded.append(module.answer())
        assert module.__file__ == str(entry.file(TINY))
    sys.modules.pop("cv_tiny", None)  # single-phase init modules put themselves there
    assert loaded == [42, 43] and marker.read_text() == "loaded\n" * 2


@pytest.mark.parametrize("proc", [True, False], ids=["proc-fd", "private-copy"])
def test_file_swapped_after_verification_does_not_change_what_loads(
    tmp_path: Path,
    tiny_ext: dict[int, bytes],
    marker: Path,
    proc: bool,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if not proc:
        monkeypatch.setattr(entry_mod, "_proc_fd_path", lambda fd: None)
    entry = _publish_ext(Store(tmp_path / "root"), tiny_ext[42])

    def swap_then_exec(name: str, origin: Path, path: Path) -> types.ModuleType:
        swapped = path.with_name("swapped")
        swapped.write_bytes(tiny_ext[43])
        os.rename(swapped, path)  # between the hash check and dlopen
        return extension.load(name, origin, path)

    module = _load(entry, swap_then_exec)
    sys.modules.pop("cv_tiny", None)
    assert module.answer() == 42 and entry.file(TINY).read_bytes() == tiny_ext[43]


@pytest.mark.parametrize("proc", [True, False], ids=["proc-fd", "private-copy"])
def test_tampered_extension_is_refused_before_load(
    tmp_path: Path,
    tiny_ext: dict[int, bytes],
    marker: Path,
    proc: bool,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if not proc:
        monkeypatch.setattr(entry_mod, "_proc_fd_path", lambda fd: None)
    store = Store(tmp_path / "root")
    _publish_ext(store, tiny_ext[42])
    entry = store.lookup(make_key(source="tiny"))
    assert entry is not None
    rewrite(entry.file(TINY), tiny_ext[43])  # different code, after the lookup verified it
    with pytest.raises(CacheError, match="does not match its SHA-256|the manifest says"):
        _load(entry)
    assert not marker.exists()
    with pytest.warns(CacheWarning, match="does not match|the manifest says"):
        assert store.lookup(make_key(source="tiny")) is None
    assert not marker.exists()


# ---- the manifest parser and the code itself ---------------------------------------

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4)
    ),
    max_leaves=20,
)
GOOD = json.loads(
    mf.Manifest(
        key=make_key().digest,
        components=make_key().components,
        module="pkg.mod",
        created=1.0,
        files={EXT: mf.FileRecord(mf.stored_name(EXT, "a" * 64), "a" * 64, 3)},
        metadata={},
    ).to_json()
)


def _parse_or_cache_error(data: bytes) -> None:
    with contextlib.suppress(CacheError):
        mf.parse_manifest(data)


def test_the_good_document_parses() -> None:
    assert mf.parse_manifest(json.dumps(GOOD).encode()).files[EXT].size == 3


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=300) | JSON.map(lambda v: json.dumps(v).encode()))
def test_fuzz_parser_arbitrary_input_raises_only_cache_error(data: bytes) -> None:
    _parse_or_cache_error(data)


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(sorted(GOOD)),
    JSON,
    st.sampled_from(["path", "sha256", "size", "x"]),
    st.booleans(),
)
def test_fuzz_parser_mutated_manifest_raises_only_cache_error(
    field: str, value: object, file_field: str, in_file: bool
) -> None:
    doc = json.loads(json.dumps(GOOD))
    if in_file:
        doc["files"][EXT][file_field] = value
    else:
        doc[field] = value
    _parse_or_cache_error(json.dumps(doc).encode())


def test_cache_code_never_uses_pickle_marshal_eval_or_exec() -> None:
    banned_modules = {"pickle", "_pickle", "cPickle", "marshal", "shelve", "dill", "cloudpickle"}
    banned_calls = {"eval", "exec", "__import__"}
    for path in sorted(Path(cache.__file__).parent.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names = {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom):
                names = {(node.module or "").split(".")[0]}
            elif isinstance(node, ast.Name):
                names = {node.id} & banned_calls
            elif isinstance(node, ast.Attribute) and node.attr in banned_calls:
                names = {node.attr}
            else:
                continue
            assert not names & (banned_modules | banned_calls), (
                f"{path.name}:{node.lineno}: {names}"
            )
