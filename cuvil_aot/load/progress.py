"""The one status line a terminal shows while a build takes longer than a second:
which module, and what the compiler is doing (its stage, the architectures nvcc builds).
Nothing is written where stderr is no terminal (a log, CI), and the line is erased when
the build ends, so a quick build prints nothing at all."""

from __future__ import annotations

import sys
import threading
import time
from typing import TextIO

DELAY = 1.0
"""Seconds a build runs before its line appears."""


class Progress:
    """Told each stage as it starts (a Timeline's listener); close() when the build ends."""

    def __init__(self, module: str, stream: TextIO | None = None, delay: float = DELAY):
        self.module, self.stream = module, stream or sys.stderr
        self.stage, self.shown, self.began = "starting", False, time.monotonic()
        self.lock = threading.Lock()
        self.timer: threading.Timer | None = None
        self.closed = False
        if _is_terminal(self.stream):
            self._tick(delay)

    def __call__(self, stage: str) -> None:
        with self.lock:
            self.stage = stage
            if self.shown:
                self._draw()

    def close(self) -> None:
        with self.lock:
            self.closed = True
            if self.timer is not None:
                self.timer.cancel()
            if self.shown:
                self.stream.write("\r\033[K")
                self.stream.flush()
                self.shown = False

    def _tick(self, after: float) -> None:
        self.timer = threading.Timer(after, self._show)
        self.timer.daemon = True
        self.timer.start()

    def _show(self) -> None:
        """Draw the line, and again each second (the clock moves while a stage runs)."""
        with self.lock:
            if self.closed:
                return
            self.shown = True
            self._draw()
            self._tick(1.0)

    def _draw(self) -> None:
        seconds = time.monotonic() - self.began
        self.stream.write(f"\r\033[Kcuvil_aot: building {self.module}: {self.stage} "
                          f"({seconds:.0f} s)")
        self.stream.flush()


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # a closed or replaced stream
        return False
