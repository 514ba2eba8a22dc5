"""A long build's progress line (terminals only, erased at the end) and its timeline
(``python -m cuvil_aot show --timings``)."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import time
from pathlib import Path

from cuvil_aot.compiler.timeline import Timeline, table
from cuvil_aot.load.progress import Progress


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_line_shows_the_stage_and_is_erased_at_the_end() -> None:
    out = Terminal()
    progress = Progress("models", out, delay=0.0)
    progress("nvcc sm_90")
    deadline = time.monotonic() + 5
    while "nvcc sm_90" not in out.getvalue() and time.monotonic() < deadline:
        time.sleep(0.01)
    progress.close()
    text = out.getvalue()
    assert "cuvil_aot: building models: nvcc sm_90" in text
    assert text.endswith("\r\033[K")


def test_nothing_is_written_where_stderr_is_no_terminal_or_the_build_is_quick() -> None:
    log, quick = io.StringIO(), Terminal()
    for stream in (log, quick):
        progress = Progress("models", stream, delay=60.0)
        progress("code generation")
        progress.close()
        assert stream.getvalue() == ""


def test_the_timeline_keeps_each_stage_in_order() -> None:
    heard: list[str] = []
    timeline = Timeline(heard.append)
    with timeline.stage("frontend"):
        pass
    began = timeline.starting("nvcc")
    with timeline.stage("C"):
        pass
    timeline.record("nvcc", began)
    assert heard == ["frontend", "nvcc", "C"]
    rows = timeline.as_list()
    assert [r["stage"] for r in rows] == ["frontend", "C", "nvcc"]
    assert all(r["seconds"] >= 0 and r["start"] >= 0 for r in rows)
    assert table(rows).splitlines()[1].startswith("frontend")


def test_show_timings_builds_and_prints_the_stages(tmp_path: Path) -> None:
    (tmp_path / "tiny.py").write_text(
        "import numpy as np\nimport cuvil_aot as cv\n\n@cv.optimize\n"
        "def f(x: cv.f32['N']):\n    return np.tanh(x) * 2\n")
    env = {**os.environ, "CUVIL_AOT_CUDA_ARCHS": "none", "CUVIL_AOT_CACHE_DIR": str(tmp_path)}
    proc = subprocess.run([sys.executable, "-m", "cuvil_aot", "show", "tiny.py", "--timings"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "=== tiny: built in" in proc.stdout
    for stage in ("frontend and passes", "code generation", "C compiler"):
        assert stage in proc.stdout
