"""The PEP 517 backend end to end: sample projects built by pip and pypa/build over each
inner backend, installed into fresh venvs, called with CUVIL_AOT_MODE=strict and no
compiler on PATH; editable installs, reproducibility, errors, the shipped libraries."""

from __future__ import annotations

import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tarfile
import textwrap
from pathlib import Path

import pytest
from helpers import wheels as W

from cuvil_aot.build import manylinux

pytestmark = pytest.mark.skipif(platform.system() != "Linux", reason="builds Linux wheels")
X86 = platform.machine() in ("x86_64", "AMD64")
BACKENDS = ["setuptools", "hatchling", "flit_core", "scikit_build_core"]
ALLOWED_NEEDED = {"libc.so.6", "libm.so.6", "libpthread.so.0", "libdl.so.2", "libgcc_s.so.1",
                  "ld-linux-x86-64.so.2"}


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One compile cache for this module's builds: the first compiles, later ones hit."""
    return tmp_path_factory.mktemp("build-cache")


def _check_wheel(wheel: Path) -> dict[str, bytes]:
    files = W.wheel_files(wheel)
    assert re.search(r"-cp3\d+-cp3\d+t?-(manylinux_2_\d+_|linux_)\w+\.whl$", wheel.name), \
        wheel.name
    dist_info = wheel.name.split("-")[0] + "-1.0.dist-info"
    assert "Root-Is-Purelib: false" in files[f"{dist_info}/WHEEL"].decode()
    manifest = json.loads(files[f"{dist_info}/cuvil_aot_build.json"])
    assert sorted(m["module"] for m in manifest["modules"]) == ["cvsample.ops",
                                                                 "cvsample.sub.extra"]
    for name in ("cvsample/ops", "cvsample/sub/extra"):
        assert f"{name}.cuvil_aot.json" in files
        assert any(f.startswith(f"{name}.cuvil_aot.") and f.endswith(".so") for f in files)
    assert not any("plain.cuvil_aot" in f for f in files)  # the byte scan's false positive
    return files


def _check_runs(wheel: Path, tmp: Path) -> Path:
    python = W.fresh_venv(tmp / "venv")
    W.pip_install(python, W.clean_env(tmp / "unused-cache"), str(wheel))
    runtime_cache = tmp / "runtime-cache"
    env = W.runtime_env(runtime_cache, W.empty_bin(tmp), CUVIL_AOT_MODE="strict")
    report = W.probe(python, env, cwd=tmp)
    assert max(report["errors"]) < 1e-4, report
    assert {m: v["how"] for m, v in report["modules"].items()} == {
        "cvsample.ops": "prebuilt", "cvsample.sub.extra": "prebuilt"}
    assert str(W.site_packages(tmp / "venv")) in report["ops_file"]
    assert W.cache_entries(runtime_cache) == []
    return python


@pytest.mark.slow
@pytest.mark.parametrize("frontend", ["pip", "build"])
@pytest.mark.parametrize("backend", BACKENDS)
def test_wheel_runs_strict_without_compiler(backend: str, frontend: str, cache: Path,
                                            tmp_path: Path) -> None:
    project = W.make_project(tmp_path / "project", backend)
    wheel = W.build_wheel(frontend, project, tmp_path / "dist", W.clean_env(cache))
    _check_wheel(wheel)
    _check_runs(wheel, tmp_path)


@pytest.mark.slow
@pytest.mark.skipif(not X86, reason="x86-64 levels")
def test_installed_wheel_picks_each_cpu_level(cache: Path, tmp_path: Path) -> None:
    from cuvil_aot.runtime import native

    project = W.make_project(tmp_path / "project", "setuptools")
    wheel = W.build_wheel("pip", project, tmp_path / "dist", W.clean_env(cache))
    python = _check_runs(wheel, tmp_path)
    for level in range(1, native.info()["detected_cpu_level"] + 1):
        env = W.runtime_env(tmp_path / "runtime-cache", W.empty_bin(tmp_path),
                            CUVIL_AOT_MODE="strict", CUVIL_AOT_CPU_LEVEL=str(level))
        report = W.probe(python, env, cwd=tmp_path)
        assert max(report["errors"]) < 1e-4, (level, report)
        assert report["cpu_level"] == level
        assert {v["cpu_level"] for v in report["modules"].values()} == {level}


@pytest.mark.slow
def test_editable_install_recompiles_an_edited_module(cache: Path, tmp_path: Path) -> None:
    project = W.make_project(tmp_path / "project", "setuptools")
    python = W.fresh_venv(tmp_path / "venv", build_tools=True)
    W.pip_install(python, W.clean_env(cache), "-e", str(project))
    env = W.runtime_env(tmp_path / "runtime-cache", os.environ["PATH"],  # with a compiler
                        CUVIL_AOT_CUDA_ARCHS="none")
    first = W.probe(python, env, cwd=tmp_path, compiles=True)
    assert first["modules"]["cvsample.ops"]["how"] == "built"
    assert first["ops_file"] == str(project / "cvsample" / "ops.py")
    ops = project / "cvsample" / "ops.py"
    ops.write_text(ops.read_text().replace("SCALE = 0.5", "SCALE = 0.25"))
    second = W.probe(python, env, cwd=tmp_path, compiles=True)
    assert second["scale"] == 0.25 and max(second["errors"]) < 1e-4
    assert second["modules"]["cvsample.ops"]["how"] == "built"
    third = W.probe(python, env, cwd=tmp_path, compiles=True)
    assert third["modules"]["cvsample.ops"]["how"] in ("shortcut", "cached")


@pytest.mark.slow
def test_reproducible_from_two_directories(tmp_path: Path) -> None:
    built = []
    for folder in ("a", "another-directory"):
        project = W.make_project(tmp_path / folder / "proj", "setuptools")
        env = W.clean_env(tmp_path / folder / "cache")  # fresh caches: both really compile
        built.append(W.build_wheel("pip", project, tmp_path / folder / "dist", env))
    assert built[0].name == built[1].name
    first, second = (W.wheel_files(w) for w in built)
    differ = sorted(n for n in first.keys() | second.keys() if first.get(n) != second.get(n))
    assert differ == []
    assert built[0].read_bytes() == built[1].read_bytes()


def _needed(library: Path) -> set[str]:
    out = subprocess.run(["readelf", "-d", str(library)], capture_output=True, text=True,
                         check=True).stdout
    return set(re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", out))


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("readelf") is None, reason="needs readelf")
def test_no_unexpected_libraries_and_never_libcuda(cache: Path, tmp_path: Path) -> None:
    from cuvil_aot.compiler.toolchain import nvcc

    project = W.make_project(tmp_path / "project", "setuptools")
    env = W.clean_env(cache, CUVIL_AOT_BUILD_CUDA="auto",  # a fatbin too where nvcc is
                      CUVIL_AOT_BUILD_CUDA_ARCHS="sm_90,compute_90")
    wheel = W.build_wheel("pip", project, tmp_path / "dist", env)
    files = _check_wheel(wheel)
    manifest = json.loads(files["cvsample-1.0.dist-info/cuvil_aot_build.json"])
    has_nvcc = nvcc.find_nvcc(os.environ.get("CUDA_HOME", "")) is not None
    assert manifest["gpu"].startswith("fatbin for sm_90, compute_90" if has_nvcc else "CPU-only")
    everything_needed: set[str] = set()
    for name, data in files.items():
        if name.endswith(".so"):
            library = tmp_path / Path(name).name
            library.write_bytes(data)
            needed = _needed(library)
            assert needed <= ALLOWED_NEEDED, (name, needed)
            assert not any("cuda" in lib for lib in needed)
            everything_needed |= needed
    if everything_needed <= manylinux.GLIBC_LIBRARIES:  # installable beyond this machine
        assert re.search(r"-manylinux_2_\d+_\w+\.whl$", wheel.name), wheel.name
    if shutil.which("auditwheel") is not None:
        proc = subprocess.run(["auditwheel", "show", str(wheel)], capture_output=True,
                              text=True)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert "libcuda" not in proc.stdout
    _check_runs(wheel, tmp_path)


BAD = '''
import numpy as np
import cuvil_aot as cv


@cv.optimize
def bad(x: cv.f32["N"]):
    while x.sum() > 0:
        x = x - 1
    return x
'''


def test_compile_error_shows_users_file_line_and_caret(cache: Path, tmp_path: Path) -> None:
    project = W.make_project(tmp_path / "project", "setuptools")
    (project / "cvsample" / "bad.py").write_text(BAD)
    proc = W.run(W.build_command("pip", project, tmp_path / "dist", []), W.clean_env(cache))
    assert proc.returncode != 0
    output = proc.stdout + proc.stderr
    line = BAD.splitlines().index("    while x.sum() > 0:") + 1
    assert f"{project / 'cvsample' / 'bad.py'}:{line}:" in output, output
    assert "    while x.sum() > 0:\n" in output and "^" in output
    assert "cuvil_aot-unpacked" not in output  # the user's path, not the build's copy
    assert not list(tmp_path.glob("dist/*.whl"))


def test_sdist_stays_pure_source(tmp_path: Path) -> None:
    project = W.make_project(tmp_path / "project", "setuptools")
    proc = W.run([sys.executable, "-m", "build", "--sdist", "--no-isolation", "--outdir",
                  str(tmp_path / "dist"), str(project)], W.clean_env(tmp_path / "cache"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (sdist,) = (tmp_path / "dist").glob("*.tar.gz")
    with tarfile.open(sdist) as archive:
        names = archive.getnames()
    assert any(n.endswith("cvsample/ops.py") for n in names)
    assert not any(".cuvil_aot." in n or n.endswith(".so") for n in names)


def test_settings_from_config_settings_reach_the_wheel(cache: Path, tmp_path: Path) -> None:
    """-C cuvil_aot.* for us, the rest for the inner backend; the manifest says what was built."""
    project = W.make_project(tmp_path / "project", "flit_core")
    env = W.clean_env(cache)
    wheel = W.build_wheel("build", project, tmp_path / "dist", env,
                          ["cuvil_aot.cpu-targets=x86-64-v2", "cuvil_aot.include=cvsample/ops.py"])
    manifest = json.loads(W.wheel_files(wheel)["cvsample-1.0.dist-info/cuvil_aot_build.json"])
    assert [m["module"] for m in manifest["modules"]] == ["cvsample.ops"]
    assert manifest["settings"]["cpu-targets"] == ["x86-64-v2"]
    assert manifest["cpu_levels"] == ([2] if X86 else [1])


def test_unknown_setting_fails_the_build_naming_it(tmp_path: Path) -> None:
    project = W.make_project(tmp_path / "project", "setuptools")
    proc = W.run(W.build_command("pip", project, tmp_path / "dist", ["cuvil_aot.cpu-target=x"]),
                 W.clean_env(tmp_path / "cache"))
    assert proc.returncode != 0
    assert "unknown setting 'cuvil_aot.cpu-target' in config settings" in proc.stdout + \
        proc.stderr


def test_cuda_required_without_nvcc_fails(tmp_path: Path) -> None:
    project = W.make_project(tmp_path / "project", "setuptools")
    env = W.clean_env(tmp_path / "cache", CUVIL_AOT_BUILD_CUDA="required",
                      PATH=str(Path(sys.executable).parent) + ":/usr/bin:/bin",
                      CUDA_HOME="/nonexistent", CUDA_PATH="/nonexistent")
    proc = W.run(W.build_command("pip", project, tmp_path / "dist", []), env)
    if shutil.which("nvcc", path=env["PATH"]) is not None:
        pytest.skip("nvcc is in /usr/bin here")
    assert proc.returncode != 0
    assert 'cuda = "required"' in proc.stdout + proc.stderr


@pytest.fixture(scope="module")
def own_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """cuvil_aot's own wheel, built by its own backend from this checkout."""
    if not (W.REPO / "build_backend").is_dir():
        pytest.skip("needs the source checkout")
    tmp = tmp_path_factory.mktemp("own-wheel")
    env = W.clean_env(tmp / "cache")
    proc = W.run([sys.executable, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps",
                  "-w", str(tmp / "dist"), str(W.REPO)], env, cwd=tmp)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (wheel,) = (tmp / "dist").glob("cuvil_aot-*.whl")
    return wheel


@pytest.mark.slow
def test_cuvil_aot_wheel_ships_nn_precompiled(own_wheel: Path, tmp_path: Path) -> None:
    """cuvil_aot built by its own backend: cuvil_aot.nn comes compiled in the wheel, and
    the wheel is a manylinux one (the runtime links glibc alone)."""
    wheel = own_wheel
    env = W.clean_env(tmp_path / "cache")
    assert re.search(r"-manylinux_2_\d+_\w+\.whl$", wheel.name), wheel.name  # glibc only
    files = W.wheel_files(wheel)
    assert "cuvil_aot/nn.cuvil_aot.json" in files
    python = W.fresh_venv(tmp_path / "venv", with_cuvil_aot=False)
    W.pip_install(python, env, str(wheel))
    code = W.NO_PROCESSES + textwrap.dedent("""
        import json, warnings
        warnings.simplefilter("error")
        import numpy as np
        import cuvil_aot, cuvil_aot.nn as nn
        x = np.random.default_rng(0).standard_normal((4, 33)).astype(np.float32)
        err = float(np.abs(nn.softmax(x) - nn.softmax.py_func(x.astype(np.float64))).max())
        print(json.dumps({"err": err, "file": cuvil_aot.__file__,
                          "how": cuvil_aot.info()["modules"]["cuvil_aot.nn"]["how"]}))
    """)
    run_env = W.runtime_env(tmp_path / "runtime-cache", W.empty_bin(tmp_path),
                            CUVIL_AOT_MODE="strict")
    proc = W.run([python, "-c", code], run_env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads(proc.stdout.splitlines()[-1])
    assert report["how"] == "prebuilt" and report["err"] < 1e-5
    assert str(tmp_path / "venv") in report["file"]


README_CHECK = """
import json
import numpy as np
import cuvil_aot
from cvsample import ops
x = np.random.default_rng(0).standard_normal((4, 33)).astype(np.float32)
err = float(np.abs(ops.softmax(x) - ops.softmax.py_func(x.astype(np.float64))).max())
print(json.dumps({"err": err, "how": cuvil_aot.info()["modules"]["cvsample.ops"]["how"]}))
"""


@pytest.mark.slow
def test_readme_wheel_recipe_builds_a_project(own_wheel: Path, tmp_path: Path) -> None:
    """The README's "Build your package's wheels", as a user copies it: cuvil-aot's wheel
    in a folder, a fresh venv, `pip install --find-links FOLDER .` with build isolation,
    then the installed package runs in strict mode."""
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    shutil.copy(own_wheel, wheels)
    project = W.make_project(tmp_path / "project", "setuptools")
    subprocess.run([sys.executable, "-m", "venv", str(tmp_path / "venv")], check=True)
    python = tmp_path / "venv" / "bin" / "python"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CUVIL_AOT_", "PYTHON"))}
    env.update(HOME=str(tmp_path), CUVIL_AOT_CACHE_DIR=str(tmp_path / "cache"),
               CUVIL_AOT_BUILD_CUDA="off")  # nvcc for 8 archs would take minutes
    proc = W.run([python, "-m", "pip", "install", "--find-links", str(wheels), str(project)],
                 env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    run_env = W.runtime_env(tmp_path / "runtime-cache", W.empty_bin(tmp_path),
                            CUVIL_AOT_MODE="strict")
    proc = W.run([python, "-c", README_CHECK], run_env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads(proc.stdout.splitlines()[-1])
    assert report["how"] == "prebuilt" and report["err"] < 1e-5
