"""When each stage of a build ran: for ``show --timings``, the manifest, and the progress
line a terminal shows during a long build (the listener hears each stage as it starts)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Timeline:
    listener: Callable[[str], None] | None = None
    started: float = field(default_factory=time.perf_counter)
    spans: list[tuple[str, float, float]] = field(default_factory=list)

    def starting(self, stage: str) -> float:
        if self.listener is not None:
            self.listener(stage)
        return time.perf_counter()

    def record(self, stage: str, begin: float, end: float | None = None) -> None:
        self.spans.append((stage, begin, time.perf_counter() if end is None else end))

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        begin = self.starting(name)
        try:
            yield
        finally:
            self.record(name, begin)

    def as_list(self) -> list[dict[str, Any]]:
        """Each stage with its start (seconds since the build began) and duration."""
        return [{"stage": name, "start": round(begin - self.started, 3),
                 "seconds": round(end - begin, 3)} for name, begin, end in self.spans]


def table(timings: list[dict[str, Any]]) -> str:
    """The timeline as aligned text lines, in the order the stages started."""
    rows = sorted(timings, key=lambda t: t["start"])
    width = max((len(str(t["stage"])) for t in rows), default=5)
    lines = [f"{'stage':<{width}}  {'start':>7}  {'seconds':>7}"]
    lines += [f"{t['stage']:<{width}}  {t['start']:7.2f}  {t['seconds']:7.2f}" for t in rows]
    return "\n".join(lines)
