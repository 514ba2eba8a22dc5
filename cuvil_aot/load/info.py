"""``cuvil_aot.info()``: what this process runs, for bug reports and for checking a wheel."""

from __future__ import annotations

import sys
from typing import Any


def _bound_extensions() -> dict[str, Any]:
    """module name -> the extension its marked functions are bound to, for every loaded
    module that has some (found by exact type: no attribute of foreign objects is read)."""
    from cuvil_aot.runtime.native import CompiledFunction  # type: ignore[attr-defined,import-untyped,unused-ignore]

    found: dict[str, Any] = {}
    for name, module in list(sys.modules.items()):
        for value in list(getattr(module, "__dict__", {}).values()):
            if type(value) is CompiledFunction:
                found[name] = value.compiled.__self__
                break
    return found


def info() -> dict[str, Any]:
    """cuvil_aot's version, the CPU as the runtime sees it (``detected_cpu_level``, and
    ``cpu_level``: the highest level kernels may use, lowered by CUVIL_AOT_CPU_LEVEL),
    the thread pool, and for each module bound to compiled code: the x86-64 level of
    the kernel table it picked at import, its extension file and how it was found
    (prebuilt, cached, built...)."""
    from cuvil_aot._version import __version__
    from cuvil_aot.load import artifacts
    from cuvil_aot.runtime import native  # type: ignore[attr-defined,import-untyped,unused-ignore]

    modules = {}
    for name, ext in sorted(_bound_extensions().items()):
        outcome = artifacts.last_outcome(name)
        modules[name] = {
            "cpu_level": getattr(ext, "cpu_level", None),
            "extension": getattr(ext, "__file__", None),
            "how": outcome.how if outcome is not None else None,
        }
    return {"version": __version__, **native.info(), "modules": modules}
