"""Sums over short static rows (a global average pool) go CV_SUM_ROWS rows at a time
through cv_sum_rows_f32 (rowsum.h): checked against NumPy in float64 for row counts
around the block size, every length up to the limit, the layouts that fall back to the
row loop, and at x86-64 (the portable helper) as well as the host's best level."""

from __future__ import annotations

import re

import numpy as np
import pytest
from conftest import check, compile_source, load_source
from hypothesis import given, settings
from hypothesis import strategies as st
from test_elementwise import view_of

from cuvil_aot.compiler import pipeline

LENGTHS = (1, 7, 15, 16, 17, 48, 49, 63, 64)

SOURCE = "import numpy as np\nimport cuvil_aot as cv\n" + "".join(f"""
@cv.optimize(signatures=["f32[A,{n}]"])
def mean{n}(x):
    return x.mean(axis=-1) * 2.0
""" for n in LENGTHS) + """
@cv.optimize(signatures=["f32[A,8,7,7]"])
def pool(x):
    return x.mean(axis=(2, 3))

@cv.optimize(signatures=["f32[8,A,5]"])
def sum_outer(x):
    return x.sum(axis=0)

@cv.optimize(signatures=["f32[A,16]"])
def squares(x):
    return (x * x).sum(axis=-1)
"""


@pytest.fixture(scope="module", params=["host", "x86-64"])
def compiled(request: pytest.FixtureRequest,
             tmp_path_factory: pytest.TempPathFactory) -> object:
    levels = () if request.param == "host" else (1,)
    return compile_source(tmp_path_factory.mktemp("short_rows"), SOURCE, cpu_levels=levels)


rows = st.sampled_from([0, 1, 5, 15, 16, 17, 33, 47])


@settings(max_examples=20, deadline=None)
@given(data=st.data(), a=rows, n=st.sampled_from(LENGTHS))
def test_row_means(compiled, data, a, n):
    check(getattr(compiled, f"mean{n}"), data.draw(view_of((a, n), "float32")), scale=4)


@pytest.mark.parametrize("n", LENGTHS)
def test_row_means_in_full_blocks(compiled, n):
    """Contiguous rows, so the blocked path runs: two full blocks and a tail."""
    x = np.random.default_rng(n).standard_normal((37, n)).astype(np.float32) + 2
    check(getattr(compiled, f"mean{n}"), x, scale=4)


def fmap(data: st.DataObject, a: int) -> np.ndarray:
    """(a, 8, 7, 7), too large to draw element by element: random values from a drawn
    seed and scale (>= 0, as after a ReLU: the check's error is relative to the result, so
    no cancellation), some special values, C order or a strided view."""
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    scale = data.draw(st.sampled_from([0.1, 3.0, 1e4]))
    base = (rng.random((a, 8, 7, 14)) * scale).astype(np.float32)
    if base.size and data.draw(st.booleans()):
        flat = base.reshape(-1)
        flat[rng.integers(0, flat.size, 3)] = rng.choice([np.nan, np.inf, -np.inf, -0.0], 3)
    return base[..., ::2] if data.draw(st.booleans()) else np.ascontiguousarray(base[..., :7])


@settings(max_examples=20, deadline=None)
@given(data=st.data(), a=rows)
def test_pool(compiled, data, a):
    check(compiled.pool, fmap(data, a), scale=4)


@settings(max_examples=10, deadline=None)
@given(data=st.data(), a=rows)
def test_strided_rows_and_computed_sums(compiled, data, a):
    check(compiled.sum_outer, data.draw(view_of((8, a, 5), "float32")), scale=4)
    check(compiled.squares, data.draw(view_of((a, 16), "float32")), scale=4)


def test_large_values_keep_float_precision(compiled):
    rng = np.random.default_rng(7)
    x = (rng.standard_normal((40, 8, 7, 7)) * 1e4 + 1e6).astype(np.float32)
    check(compiled.pool, x, scale=4)


def test_only_short_static_rows_take_the_blocked_path(tmp_path):
    module = load_source(tmp_path, SOURCE + """
@cv.optimize(signatures=["f32[A,65]"])
def mean65(x):
    return x.mean(axis=-1)
""")
    kernels = pipeline.generate_sources(module, pipeline.Options(cpu_levels=(1,)))[3]["kernels.c"]
    bodies = dict(re.findall(r"static void (f\d+)_s0_k0\(.*?\n(.*?)\n}\n", kernels, re.S))
    blocked = sorted(f for f, code in bodies.items() if "cv_sum_rows_f32(" in code)
    # mean1 .. mean64, pool and sum_outer (blocked while its axis 0 has unit stride);
    # not the sum of computed values (squares), nor rows of 65
    assert blocked == sorted(f"f{i}" for i in range(len(LENGTHS) + 2))
