"""What a GPU call's launches wait for in its graph (codegen/gpu_deps.py, from the fusion
pass's Function.after): kernels that share only inputs wait for none of each other, a
kernel waits for every kernel it reads from, directly or not, and calls whose launches the
fusion order does not describe alone stay a chain. Generated text only: no GPU, no nvcc.
The graph built from the marks: tests/test_gpu_graph_logic.py; run: tests/test_gpu_graph.py."""

from __future__ import annotations

import re

from conftest import generated_units

PROJECTIONS = """
import numpy as np
import cuvil_aot as cv

@cv.optimize
def qkv(x: cv.f32["M", "K"], wq: cv.f32["N", "K"], wk: cv.f32["N", "K"],
        wv: cv.f32["N", "K"]):
    q = x @ wq.T
    k = x @ wk.T
    v = x @ wv.T
    return np.tanh(q @ k.T) @ v
"""

GATHER = """
import numpy as np
import cuvil_aot as cv

@cv.optimize
def embed(ids: cv.i64["T"], table: cv.f32["V", "D"], w: cv.f32["D", "D"], u: cv.f32["D", "D"]):
    e = table[ids]
    return e @ w + e @ u.T
"""


def marks(tmp_path, source: str) -> dict[int, int]:
    """Node -> the mask of nodes it waits for, from the generated wrapper."""
    host = generated_units(tmp_path, source, ("sm_90",))["module.c"]
    found = re.findall(r"cv_gpu_mark\(Q, q0, nq, (\d+), (0x[0-9a-f]+)ull\)", host)
    return {int(node): int(mask, 16) for node, mask in found}


def test_projections_of_one_input_wait_for_none_of_each_other(tmp_path):
    got = marks(tmp_path, PROJECTIONS)
    assert len(got) == 5, got  # three projections, q @ k.T, then @ v
    roots = [node for node, mask in got.items() if mask == 0]
    assert len(roots) == 3, got
    last = max(got)
    assert got[last] == (1 << (last - 1)) - 1  # the last reads, in the end, all the others
    middle = next(n for n in got if n not in roots and n != last)
    assert bin(got[middle]).count("1") == 2  # q @ k.T: after q and k only, not v


def test_a_call_that_gathers_stays_a_chain(tmp_path):
    assert marks(tmp_path, GATHER) == {}
