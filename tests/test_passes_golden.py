"""The IR after every pass of the pipeline, for representative functions, against a golden file.

Each case of ``data/passes.test`` is a module body; its expected output is the
printed IR of every compiled signature after the frontend and after each pass
of ``PIPELINE``. Regenerate it with ``pytest tests/test_passes_golden.py --update-golden``.
"""

from __future__ import annotations

import fcntl
from pathlib import Path

import pytest
from conftest import load_source
from helpers.golden import HEADER, parse_cases

from cuvil_aot.compiler.frontend import lower_module
from cuvil_aot.compiler.passes import PASS_NAMES, PassLog, run_pipeline

DATA = Path(__file__).parent / "data" / "passes.test"


def render(tmp_path: Path, name: str, source: str) -> str:
    """Every signature of every marked function, printed after each pass."""
    module = load_source(tmp_path, HEADER + source, name=f"passes_{name}")
    sections = []
    for versions in lower_module(module).functions.values():
        for _, fn in versions:
            log = PassLog()
            run_pipeline(fn, dump=frozenset(PASS_NAMES), log=log)
            sections += [f"-- {pass_name}\n{log.dumps[pass_name]}" for pass_name in PASS_NAMES]
    return "\n".join(sections)


def update(name: str, got: str) -> None:
    """Replace the expected output of case ``name`` (locked: xdist workers share the file)."""
    with DATA.open("r+") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        text = f.read()
        start = text.index(f"[case {name}]\n")
        out = text.index("[out]\n", start) + len("[out]\n")
        end = text.find("[case ", out)
        end = len(text) if end < 0 else end
        f.seek(0)
        f.write(text[:out] + got + "\n\n" + text[end:])
        f.truncate()


CASES = parse_cases(DATA.read_text())


@pytest.mark.parametrize("name,source,expected", CASES, ids=[c[0] for c in CASES])
def test_passes(tmp_path: Path, request: pytest.FixtureRequest, name: str, source: str,
                expected: str) -> None:
    got = render(tmp_path, name, source)
    if request.config.getoption("--update-golden"):
        update(name, got)
        return
    assert got == expected


def test_every_pass_is_in_the_golden_file() -> None:
    expected = "\n".join(e for _, _, e in CASES)
    for pass_name in PASS_NAMES:
        assert f"-- {pass_name}\n" in expected
