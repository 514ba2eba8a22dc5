"""The backend's settings (one test per source, and their order), include/exclude globs,
and the reproducible wheel writer: fast, in-process."""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import zipfile
from pathlib import Path

import pytest

from cuvil_aot.build import scan
from cuvil_aot.build import wheel as wheelfile
from cuvil_aot.build.settings import Settings, SettingsError, resolve, split_config


def _project(tmp_path: Path, table: str) -> Path:
    (tmp_path / "pyproject.toml").write_text(f"[project]\nname = 'x'\n\n[tool.cuvil_aot]\n{table}")
    return tmp_path


def test_defaults_without_any_source(tmp_path: Path) -> None:
    settings = resolve(tmp_path, None, {})
    assert settings == Settings()
    assert settings.cpu_levels == (1, 2, 3, 4)
    assert settings.backend == "setuptools.build_meta" and settings.cuda == "auto"


def test_pyproject_source(tmp_path: Path) -> None:
    project = _project(tmp_path, 'cpu-targets = ["x86-64-v3", "x86-64-v4"]\ncuda = "off"\n'
                                 'include = ["pkg/**/*.py"]\njobs = 3\n')
    settings = resolve(project, None, {})
    assert settings.cpu_levels == (3, 4) and settings.cuda == "off"
    assert settings.include == ("pkg/**/*.py",) and settings.jobs == 3


def test_config_settings_source_overrides_pyproject(tmp_path: Path) -> None:
    project = _project(tmp_path, 'cpu-targets = ["x86-64-v3"]\ncuda = "off"\n')
    config = {"cuvil_aot.cpu-targets": "x86-64-v2,x86-64-v4", "--build-option": "--quiet"}
    settings = resolve(project, config, {})
    assert settings.cpu_levels == (2, 4) and settings.cuda == "off"
    assert split_config(config)[1] == {"--build-option": "--quiet"}  # the inner backend's


def test_config_settings_list_repeated(tmp_path: Path) -> None:
    config = {"cuvil_aot.include": ["a/*.py", "b/**/*.py"]}  # pip: -C k=a -C k=b
    assert resolve(tmp_path, config, {}).include == ("a/*.py", "b/**/*.py")


def test_environment_source_overrides_both(tmp_path: Path) -> None:
    project = _project(tmp_path, 'cpu-targets = ["x86-64-v3"]\n')
    env = {"CUVIL_AOT_BUILD_CPU_TARGETS": "x86-64", "CUVIL_AOT_BUILD_JOBS": "2"}
    settings = resolve(project, {"cuvil_aot.cpu-targets": "x86-64-v4"}, env)
    assert settings.cpu_levels == (1,) and settings.jobs == 2


@pytest.mark.parametrize(("table", "config", "env", "named"), [
    ("cpu_targets = ['x86-64']\n", None, {}, "'cpu_targets' in [tool.cuvil_aot]"),
    ("", {"cuvil_aot.targets": "x"}, {}, "'cuvil_aot.targets' in config settings"),
    ("", None, {"CUVIL_AOT_BUILD_ARCHS": "sm_90"}, "'CUVIL_AOT_BUILD_ARCHS' in the environment"),
])
def test_unknown_keys_are_errors_naming_them(tmp_path: Path, table: str,
                                            config: dict[str, str] | None,
                                            env: dict[str, str], named: str) -> None:
    with pytest.raises(SettingsError, match="unknown setting") as info:
        resolve(_project(tmp_path, table), config, env)
    assert named in str(info.value)
    assert "cpu-targets" in str(info.value)  # and lists the known ones


@pytest.mark.parametrize(("env", "message"), [
    ({"CUVIL_AOT_BUILD_CPU_TARGETS": "x86-64-v5"}, "cpu-targets"),
    ({"CUVIL_AOT_BUILD_CUDA": "maybe"}, "cuda"),
    ({"CUVIL_AOT_BUILD_CUDA_ARCHS": "sm90"}, "cuda-archs"),
    ({"CUVIL_AOT_BUILD_JOBS": "-1"}, "CUVIL_AOT_BUILD_JOBS"),
    ({"CUVIL_AOT_BUILD_JOBS": "many"}, "CUVIL_AOT_BUILD_JOBS .the environment.: expected"),
])
def test_bad_values_are_errors(tmp_path: Path, env: dict[str, str], message: str) -> None:
    with pytest.raises(SettingsError, match=message):
        resolve(tmp_path, None, env)


def test_pyproject_value_of_wrong_type(tmp_path: Path) -> None:
    with pytest.raises(SettingsError, match=r"include \(\[tool.cuvil_aot\]"):
        resolve(_project(tmp_path, "include = 3\n"), None, {})


@pytest.mark.parametrize(("pattern", "path", "hit"), [
    ("**/*.py", "a.py", True), ("**/*.py", "pkg/sub/a.py", True),
    ("pkg/*.py", "pkg/sub/a.py", False), ("pkg/**", "pkg/sub/a.py", True),
    ("pkg/**/*.py", "pkg/a.py", True), ("pkg/?.py", "pkg/ab.py", False),
])
def test_globs(pattern: str, path: str, hit: bool) -> None:
    assert scan.matches(path, [pattern]) is hit


def test_marked_modules_byte_scan_and_names() -> None:
    marked = b"import cuvil_aot\n@cuvil_aot.optimize\ndef f(x): return x\n"
    files = {"pkg/__init__.py": marked, "pkg/a.py": marked, "pkg/b.py": b"x = 1\n",
             "pkg/skip.py": marked, "pkg-1.0.data/purelib/c.py": marked, "pkg/d.txt": marked}
    found = scan.marked_modules(files, ["**/*.py"], ["pkg/skip.py"])
    assert found == [("pkg/__init__.py", "pkg"), ("pkg/a.py", "pkg.a")]


def _wheel() -> wheelfile.Wheel:
    wheel = wheelfile.Wheel("demo", "1.0", None, "py3-none-any")
    wheel.add("demo-1.0.dist-info/WHEEL", b"Wheel-Version: 1.0\nRoot-Is-Purelib: true\n"
                                          b"Tag: py3-none-any\n")
    wheel.add("demo-1.0.dist-info/METADATA", b"Name: demo\n")
    wheel.add("demo/b.py", b"b = 2\n")
    wheel.add("demo/a.cuvil_aot.so", b"\x7fELF", executable=True)
    return wheel


def test_written_wheel_is_sorted_dated_and_recorded(tmp_path: Path) -> None:
    wheel = _wheel()
    wheel.retag("cp311-cp311-linux_x86_64")
    path = wheel.write(tmp_path, 1700000000)
    assert path.name == "demo-1.0-cp311-cp311-linux_x86_64.whl"
    with zipfile.ZipFile(path) as archive:
        infos = archive.infolist()
        names = [i.filename for i in infos]
        assert names == ["demo/a.cuvil_aot.so", "demo/b.py", "demo-1.0.dist-info/METADATA",
                         "demo-1.0.dist-info/WHEEL", "demo-1.0.dist-info/RECORD"]
        assert {i.date_time for i in infos} == {(2023, 11, 14, 22, 13, 20)}
        assert [i.external_attr >> 16 for i in infos[:2]] == [0o100755, 0o100644]
        record = list(csv.reader(io.StringIO(archive.read(names[-1]).decode())))
        for name, digest, size in record[:-1]:
            data = archive.read(name)
            expected = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
            assert digest == "sha256=" + expected.decode() and int(size) == len(data)
        assert record[-1] == ["demo-1.0.dist-info/RECORD", "", ""]
        wheel_meta = archive.read("demo-1.0.dist-info/WHEEL").decode()
    assert "Root-Is-Purelib: false" in wheel_meta
    assert wheel_meta.count("Tag:") == 1 and "Tag: cp311-cp311-linux_x86_64" in wheel_meta


def test_same_inputs_same_bytes(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first, second = (_wheel().write(tmp_path / d, 0) for d in ("a", "b"))
    assert first.read_bytes() == second.read_bytes()


def test_native_tag_names_this_interpreter() -> None:
    import sys
    import sysconfig

    tag = wheelfile.native_tag()
    assert tag.startswith(f"cp{sys.version_info.major}{sys.version_info.minor}-") or \
        sys.implementation.name != "cpython"
    assert tag.endswith(sysconfig.get_platform().replace("-", "_").replace(".", "_"))
