"""The compile step of a wheel build, run in its own interpreter:

    python -m cuvil_aot.build.worker REQUEST.json

It imports the marked modules from the unpacked pure wheel (so every hash is taken
over the very bytes that get installed), gets each one's extension through the
compile cache (``artifacts.build_next_to``: built on a miss, in parallel), which writes
the prebuilt extension and its manifest next to the module, and writes what it did
to the request's ``result`` file. Errors go to stderr with the user's own file paths,
every failing module reported (a module with a refused function fails: a wheel ships
whole modules only; a crash of the compiler on one module fails that module only), and
the exit status is 1.

A separate process keeps the user's module-level code and imports out of the
backend's interpreter. The unpacked wheel comes first on its PYTHONPATH, so
cuvil_aot's own build runs the compiler of the wheel it builds, with the freshly
built ``cuvil_aot.runtime.native``.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import traceback
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from cuvil_aot import marks
from cuvil_aot.build import gpu

if TYPE_CHECKING:
    from cuvil_aot.load.artifacts import Settings as CacheSettings


class ModuleFailed(Exception):
    """One module could not be imported or compiled; the message is for the user."""


def _import(name: str) -> ModuleType:
    try:
        return importlib.import_module(name)
    except Exception as exc:
        tail = "".join(traceback.format_exception_only(type(exc), exc)).strip()
        raise ModuleFailed(f"cannot import {name} to compile it: {tail}\n  (a build "
                           "requirement missing? list it in [build-system] requires)") from None


def _compile(module: ModuleType, config: CacheSettings, arcname: str) -> dict[str, Any]:
    from cuvil_aot.load import artifacts, prebuilt

    path, outcome = artifacts.build_next_to(module, config)
    pre = prebuilt.read(path)
    if pre is None:
        raise ModuleFailed(f"{module.__name__}: {path} vanished after it was written")
    return {
        "module": module.__name__,
        "source": arcname,
        "extension": pre.file,
        "manifest": path.name,
        "ext_name": pre.ext_name,
        "sha256": pre.sha256,
        "size": pre.size,
        "functions": sorted(marks.marked(module)),
        "cpu_levels": pre.components.get("cpu_levels"),
        "cuda": pre.components.get("cuda"),
        "compiler": pre.components.get("cc"),
        "how": outcome.how,
        "seconds": round(outcome.seconds, 3),
    }


def _message(exc: BaseException, root: str, sources: dict[str, str]) -> str:
    """The error text with each unpacked file's path replaced by the user's source file."""
    text = str(exc)
    for arcname, original in sources.items():
        text = text.replace(os.path.join(root, arcname), original)
    return text


def _settings(request: dict[str, Any], archs: tuple[str, ...]) -> CacheSettings:
    from cuvil_aot import knobs
    from cuvil_aot.load import artifacts
    from cuvil_aot.options import Options

    options = Options(cpu_levels=tuple(request["levels"]), cuda_archs=archs)
    # Whatever CUVIL_AOT_MODE says at run time, a build builds.
    return artifacts.Settings.from_knobs(knobs.read(), options)._replace(mode="import")


def _import_all(request: dict[str, Any], failures: list[str]) -> list[ModuleType]:
    modules = []
    for _, name in request["modules"]:
        try:
            modules.append(_import(name))
        except ModuleFailed as exc:
            failures.append(f"error: {_message(exc, request['root'], request['sources'])}")
    return [m for m in modules if marks.marked(m)]  # the byte scan's false positives go


def run(request: dict[str, Any]) -> int:
    from cuvil_aot import importer
    from cuvil_aot.cache import CacheError
    from cuvil_aot.cli.commands import Progress, crash
    from cuvil_aot.errors import BuildError, CompileError

    importer.uninstall()  # an opted-in hook would bind (and build) at import already
    # Extensions import cuvil_aot.runtime.native when loaded; two threads doing the first
    # import at once see a partly initialized package, so it is done here, once.
    importlib.import_module("cuvil_aot.runtime.native")
    try:
        archs, note = gpu.plan(request["cuda"], tuple(request["cuda_archs"]))
    except gpu.CudaRequired as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    failures: list[str] = []
    modules = _import_all(request, failures)
    config = _settings(request, archs)
    arcnames = {name: arcname for arcname, name in request["modules"]}
    progress = Progress(max(1, len(modules)), sys.stderr)

    def one(module: ModuleType) -> dict[str, Any] | None:
        try:
            record = _compile(module, config, arcnames[module.__name__])
        except (CompileError, BuildError, CacheError, ModuleFailed, OSError) as exc:
            message = _message(exc, request["root"], request["sources"])
        except Exception as exc:  # a crash of cuvil_aot: report it, compile the others
            message = _message(RuntimeError(crash(exc)), request["root"], request["sources"])
        else:
            progress.step(f"{module.__name__}: {record['how']} in {record['seconds']:.2f} s")
            return record
        failures.append(f"error: {module.__name__}: {message}")
        progress.step(f"{module.__name__}: FAILED")
        return None

    with ThreadPoolExecutor(max(1, request["jobs"])) as pool:
        records = [r for r in pool.map(one, modules) if r is not None]
    for failure in failures:
        print(failure, file=sys.stderr)
    result = {"modules": records, "gpu": note}
    Path(request["result"]).write_text(json.dumps(result, sort_keys=True))
    return 1 if failures else 0


def main(argv: list[str]) -> int:
    request = json.loads(Path(argv[0]).read_text())
    del sys.path[0]  # the working directory -m put there; the wheel comes by PYTHONPATH
    sys.dont_write_bytecode = True  # nothing but what we write lands in the wheel
    return run(request)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
