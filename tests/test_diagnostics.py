"""Diagnostics: message, line, column and caret, checked against golden files.

Regenerate the expected output with ``pytest tests/test_diagnostics.py --update-golden``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import load_source
from helpers.golden import HEADER, parse_cases

from cuvil_aot.compiler.frontend import lower_module
from cuvil_aot.errors import CompileError

DATA = Path(__file__).parent / "data" / "diagnostics.test"


def render(tmp_path: Path, name: str, source: str) -> str:
    module = load_source(tmp_path, HEADER + source, name=f"diag_{name}")
    with pytest.raises(CompileError) as info:
        lower_module(module).check()  # every refused function's diagnostics, at once
    return str(info.value).strip("\n").replace(str(tmp_path) + "/", "")


CASES = parse_cases(DATA.read_text())


@pytest.mark.parametrize("name,source,expected", CASES, ids=[c[0] for c in CASES])
def test_diagnostic(tmp_path, request, name, source, expected):
    got = render(tmp_path, name, source)
    if request.config.getoption("--update-golden"):
        text = DATA.read_text()
        start = text.index(f"[case {name}]\n")
        out = text.index("[out]\n", start) + len("[out]\n")
        end = text.find("[case ", out)
        end = len(text) if end < 0 else end
        DATA.write_text(text[:out] + got + "\n\n" + text[end:])
        return
    assert got == expected


def test_every_error_has_a_caret_under_the_right_column(tmp_path):
    got = render(tmp_path, "caret", "@cv.optimize\ndef f(x: cv.f32['N']):\n"
                 "    return x + np.fft.fft(x)\n")
    lines = got.splitlines()
    assert lines[0].endswith("diag_caret.py:6:16: error: calling fft is not supported")
    assert lines[2].index("^") == lines[1].index("np.fft.fft(x)")


def test_numpy_python_code_is_refused_at_the_users_call(tmp_path):
    """np.triu_indices is Python inside NumPy, inlined as the user's own functions are; its
    boolean-mask indexing does not compile: the error's caret is under the user's call, NumPy's
    line a note (the NumPy path differs between machines: not a golden case)."""
    got = render(tmp_path, "numpy_body", "@cv.optimize\ndef f(x: cv.f32['N']):\n"
                 "    return x[np.triu_indices(4)[0]]\n")
    lines = got.splitlines()
    assert lines[0] == ("diag_numpy_body.py:6:14: error: np.triu_indices() is written in "
                        "Python inside NumPy, and that code does not compile")
    assert lines[2] == "                 ^~~~~~~~~~~~~~~~~~"
    assert "numpy" in lines[3] and lines[3].endswith(
        "note: boolean mask indexing is not supported: the result's shape would depend on "
        "the data")
    assert len([x for x in lines if ": error:" in x]) == 1
