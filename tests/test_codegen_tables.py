"""Every elementwise op lowers on both targets: a new Op cannot land in the C table alone
(or in neither), nor may a table keep an op the IR no longer has."""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest

from cuvil_aot.compiler.codegen import gpu_wrapper, ops_c, ops_cuda
from cuvil_aot.compiler.ir.ops import BINARY, ELEMENTWISE, UNARY, Op
from cuvil_aot.compiler.ir.types import DTYPES, np_dtype

# CAST converts between two dtypes: ops_c.cast lowers it on both targets, not the tables
TABLE_OPS = ELEMENTWISE - {Op.CAST}
LANGUAGES = {"c": ops_c.C, "cuda": ops_cuda.CUDA}


@pytest.mark.parametrize("name", sorted(LANGUAGES))
def test_the_table_holds_every_elementwise_op_and_no_other(name):
    table = LANGUAGES[name].code_for_op
    assert set(table) - TABLE_OPS == set(), "ops that are not elementwise"
    assert TABLE_OPS - set(table) == set(), "elementwise ops without a lowering"


@pytest.mark.parametrize("op", sorted(TABLE_OPS, key=lambda o: o.name))
def test_every_elementwise_op_renders_in_c_and_cuda_for_some_dtype(op):
    arity = 1 if op in UNARY else 2 if op in BINARY else 3
    args = [f"a{i}" for i in range(arity)]
    for language in LANGUAGES.values():
        rendered = []
        for dtype in DTYPES:
            try:
                rendered.append(language.render(op, dtype, args))
            except ops_c.Unsupported:
                continue
        assert rendered, f"{op.name} lowers on no dtype"


def test_cast_lowers_between_every_pair_of_dtypes():
    for src in DTYPES:
        for dst in DTYPES:
            assert ops_c.cast("x", src, dst)


def test_every_dtype_has_an_entry_in_every_table():
    tables = [ops_c.CTYPE, ops_c.STORAGE, ops_c.ITEMSIZE, ops_c.FAMILY, ops_c.TYPENUM]
    for dtype in DTYPES:
        assert all(dtype in table for table in tables), dtype
        assert ops_c.ITEMSIZE[dtype] == np_dtype(dtype).itemsize
        assert dtype in gpu_wrapper.DT, dtype


def test_integer_literals_and_extremes_are_the_dtypes_own(tmp_path):
    """C agrees: each integer dtype's extremes (where a MAX or MIN starts) and literals of
    them, checked by the C compiler itself."""
    lines = ["#include <stdint.h>"]
    for dtype in DTYPES:
        if np_dtype(dtype).kind not in "iu":
            continue
        info = np.iinfo(dtype)
        for high, value in ((True, int(info.max)), (False, int(info.min))):
            ctype, bound = ops_c.CTYPE[dtype], ops_c.extreme(dtype, high)
            literal = ops_c.literal(value, dtype)
            lines.append(f"_Static_assert(({ctype}){bound} == {literal} && "
                         f"(double){literal} == {float(value)!r}, \"{dtype} {bound}\");")
    source = tmp_path / "extremes.c"
    source.write_text("\n".join(lines) + "\n")
    subprocess.run(["cc", "-std=gnu11", "-Werror", "-fsyntax-only", str(Path(source))],
                   check=True)
