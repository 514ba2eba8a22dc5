"""The pass pipeline: a flat, named list of pure functions Function -> Function.

Dead code needs no pass of its own: every walk starts from the outputs, so a
node nothing returned is never visited.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from cuvil_aot.compiler.ir.node import Function
from cuvil_aot.compiler.ir.printer import format_function
from cuvil_aot.compiler.ir.verify import verify
from cuvil_aot.compiler.passes import canonicalize, cse, fusion, grouped_query, precision

Pass = Callable[[Function], Function]

PIPELINE: list[tuple[str, Pass]] = [
    ("grouped_query", grouped_query.run),
    ("precision", precision.run),
    ("canonicalize", canonicalize.run),
    ("cse", cse.run),
    ("fusion", fusion.run),
]
PASS_NAMES = ["frontend"] + [name for name, _ in PIPELINE]


@dataclass
class PassLog:
    """Seconds per pass, and the IR text after the passes asked for."""

    seconds: dict[str, float] = field(default_factory=dict)
    dumps: dict[str, str] = field(default_factory=dict)


def run_pipeline(fn: Function, dump: frozenset[str] = frozenset(), check: bool = True,
                 log: PassLog | None = None) -> Function:
    log = log if log is not None else PassLog()
    if "frontend" in dump:
        _append(log, "frontend", format_function(fn))
    for name, pass_fn in PIPELINE:
        start = time.perf_counter()
        fn = pass_fn(fn)
        log.seconds[name] = log.seconds.get(name, 0.0) + time.perf_counter() - start
        if check:
            verify(fn, after=name)
        if name in dump:
            _append(log, name, format_function(fn))
    return fn


def _append(log: PassLog, name: str, text: str) -> None:
    log.dumps[name] = f"{log.dumps[name]}\n\n{text}" if name in log.dumps else text
