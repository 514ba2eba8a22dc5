"""A module of many versions compiles its wrapper's matches and execs in translation units
of their own (codegen/wrapper_parts.py): how the functions are split, and that a module
split so declares each moved function once and defines it once, in a part, with the
results of the module as before (tests/test_hf_bert.py and test_hf_gpt2.py run such
modules against their Python)."""

from __future__ import annotations

import re
from pathlib import Path

from conftest import load_source

from cuvil_aot.compiler import pipeline
from cuvil_aot.compiler.codegen import wrapper_parts

GPT2 = (Path(__file__).resolve().parent.parent / "bench" / "hf_gpt2.py").read_text()


def _piece(name: str, lines: int) -> str:
    body = "".join(f"    x += {i};\n" for i in range(lines - 2))
    return f"static int {name}(PyObject **argv, int n) {{\n{body}}}\n"


def test_few_lines_stay_in_module_c():
    pieces = [_piece(f"f{i}", 100) for i in range(10)]
    assert wrapper_parts.split(pieces) == []


def test_parts_keep_the_order_and_hold_part_lines_but_the_last():
    sizes = [2500, 700, 4000, 2600, 3100, 90, 5000, 40]
    pieces = [_piece(f"f{i}", n) for i, n in enumerate(sizes)]
    parts = wrapper_parts.split(pieces)
    assert [p for part in parts for p in part] == pieces
    assert len(parts) > 1
    for part in parts[:-1]:
        assert sum(p.count("\n") for p in part) >= wrapper_parts.PART_LINES


def test_a_part_defines_what_its_prototypes_declare():
    piece = _piece("f0_s3_match", 5)
    assert wrapper_parts.prototype(piece) == "int f0_s3_match(PyObject **argv, int n);"
    text = wrapper_parts.source([piece])
    assert text.startswith("#define CV_WRAPPER_PART\n")
    assert "\nint f0_s3_match(PyObject **argv, int n) {" in text and "static" not in text


def test_a_module_of_many_versions_is_split(tmp_path: Path):
    module = load_source(tmp_path, GPT2, "gpt2_parts")
    sources = pipeline.generate_sources(module, pipeline.Options(cpu_levels=(4,)), None)[3]
    parts = sorted(n for n in sources if n.startswith("module_cpu_"))
    assert parts, sorted(sources)
    defined = re.compile(r"^int (f\d+_s\d+_(?:exec|match))\(", re.M)
    moved = [name for p in parts for name in defined.findall(sources[p])]
    assert moved and len(moved) == len(set(moved))
    for name in moved:
        assert sources["module.h"].count(f"int {name}(") == 1
        assert f"int {name}(" not in sources["module.c"]
        assert f"{name}(" in sources["module.c"]  # called from the run or the wrapper
