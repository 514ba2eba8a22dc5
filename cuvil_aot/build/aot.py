"""The AOT pass over a pure wheel: find the marked modules, compile them in a worker
process, put each prebuilt extension and its manifest next to its module, and add
a build manifest to ``.dist-info``."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from cuvil_aot.build import scan
from cuvil_aot.build.settings import Settings, describe
from cuvil_aot.build.wheel import Wheel, unpack

MANIFEST = "cuvil_aot_build.json"
FORMAT = "cuvil_aot.wheel"
_SKIP_DIRS = frozenset({".git", ".hg", ".venv", "venv", "build", "dist", "node_modules",
                        "__pycache__", ".tox", ".nox"})


class CompileFailed(RuntimeError):
    """Some marked module did not compile; its errors were printed already."""


def cpu_levels(settings: Settings) -> tuple[int, ...]:
    """x86-64 levels to build; elsewhere one baseline table (aarch64: NEON)."""
    x86 = platform.machine().lower() in ("x86_64", "amd64")
    return settings.cpu_levels if x86 else (1,)


def user_path(project: Path, arcname: str, data: bytes) -> str:
    """The project file a module of the wheel was copied from (for error messages)."""
    for candidate in (project / arcname, project / "src" / arcname):
        if candidate.is_file() and candidate.read_bytes() == data:
            return str(candidate)
    for root, dirs, files in os.walk(project):
        dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS and not d.startswith("."))
        path = Path(root) / Path(arcname).name
        if Path(arcname).name in files and path.as_posix().endswith("/" + arcname) \
                and path.read_bytes() == data:
            return str(path)
    return arcname


def _run_worker(request: dict[str, Any], staging: Path,
                env: Mapping[str, str]) -> dict[str, Any]:
    request_path = staging / "request.json"
    request_path.write_text(json.dumps(request))
    child_env = dict(env)
    # The unpacked wheel first: its modules, and for cuvil_aot's own build its compiler.
    child_env["PYTHONPATH"] = os.pathsep.join(filter(None, [request["root"],
                                                            env.get("PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, "-m", "cuvil_aot.build.worker", str(request_path)],
                          cwd=staging, env=child_env)
    if proc.returncode != 0:
        raise CompileFailed("compiling the marked modules failed (the errors are above)")
    result: dict[str, Any] = json.loads(Path(request["result"]).read_text())
    return result


def compile_wheel(wheel: Wheel, settings: Settings, project: Path, staging: Path,
                  env: Mapping[str, str]) -> tuple[list[dict[str, Any]], str]:
    """Compile the wheel's marked modules and add their prebuilt files to ``wheel``;
    (what was compiled, what the wheel holds for GPUs)."""
    modules = scan.marked_modules(wheel.files, settings.include, settings.exclude)
    if not modules:
        return [], "nothing compiled"
    root = staging / "cuvil_aot-unpacked"  # not an importable name
    unpack(wheel, root)
    request = {
        "root": str(root),
        "objects": str(staging / "cuvil_aot-objects"),
        "result": str(staging / "result.json"),
        "modules": modules,
        "sources": {a: user_path(project, a, wheel.files[a]) for a, _ in modules},
        "levels": list(cpu_levels(settings)),
        "jobs": settings.jobs or os.cpu_count() or 1,
        "cuda": settings.cuda,
        "cuda_archs": list(settings.cuda_archs),
    }
    result = _run_worker(request, staging, env)
    records: list[dict[str, Any]] = result["modules"]
    for record in records:
        folder = Path(record["source"]).parent
        for key in ("extension", "manifest"):
            arcname = (folder / record[key]).as_posix()
            record[key] = arcname
            wheel.add(arcname, (root / arcname).read_bytes(), executable=key == "extension")
    return records, str(result["gpu"])


def build_manifest(wheel: Wheel, settings: Settings, records: list[dict[str, Any]],
                   gpu: str) -> None:
    """``<dist-info>/cuvil_aot_build.json``: what was compiled, how, for which targets.
    No paths of the build machine, no times: it must not break reproducibility."""
    from cuvil_aot._version import __version__

    doc = {
        "format": FORMAT,
        "schema": 1,
        "cuvil_aot": __version__,
        "tag": wheel.tag,
        "settings": describe(settings),
        "cpu_levels": list(cpu_levels(settings)),
        "gpu": gpu,
        "modules": [{k: v for k, v in r.items() if k not in ("seconds", "how")}
                    for r in sorted(records, key=lambda r: str(r["module"]))],
    }
    data = json.dumps(doc, indent=1, sort_keys=True).encode() + b"\n"
    wheel.add(f"{wheel.dist_info}/{MANIFEST}", data)
