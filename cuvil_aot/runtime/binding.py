"""Binding: a marked module's functions become calls straight into its extension."""

from __future__ import annotations

import types
from collections.abc import Mapping

from cuvil_aot.errors import SignatureError
from cuvil_aot.marks import Marked, marked


def bind(module: types.ModuleType, ext: types.ModuleType,
         functions: Mapping[str, Marked] | None = None) -> None:
    """Point the marked functions of ``module`` (default: all of them) at ``ext``.

    The module's globals become CompiledFunction objects, whose calls go straight to the
    extension (vectorcall, no Python frame); each mark kept elsewhere (a Dispatcher
    imported by another module) forwards to the same object."""
    from cuvil_aot._runtime import (  # type: ignore[attr-defined,import-untyped,unused-ignore]
        CompiledFunction,
    )

    for name, mark in (marked(module) if functions is None else functions).items():
        fallback = SignatureError if mark.fallback == "python" else None
        fast = CompiledFunction(getattr(ext, name), mark.py_func, fallback)
        fast.dispatcher = mark
        fast.signatures = mark.signatures
        mark.compiled = fast
        setattr(module, name, fast)
