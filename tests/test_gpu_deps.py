"""What a GPU call's launches wait for in its graph (codegen/gpu_deps.py, from the fusion
pass's Function.after): kernels that share only inputs wait for none of each other, a
kernel waits for every kernel it reads from, directly or not, and calls whose launches the
fusion order does not describe alone stay a chain. Generated text only: no GPU, no nvcc.
The graph built from the marks: tests/test_gpu_graph_logic.py; run: tests/test_gpu_graph.py."""

from __future__ import annotations

import importlib
import re
import sys
from pathlib import Path

import pytest
from conftest import generated_units, host_code

from cuvil_aot.compiler import pipeline
from cuvil_aot.compiler.codegen import gpu_plan
from cuvil_aot.compiler.codegen.compiled import lower_signature
from cuvil_aot.compiler.codegen.launch import matmul_operand
from cuvil_aot.compiler.gpu_targets import GpuTargets

BENCH = Path(__file__).resolve().parent.parent / "bench"
MODULES = [f"cookbook.{m}" for m in ("attention", "embeddings", "normalization", "activations",
                                     "recurrent", "quantization", "decoding", "pooling",
                                     "misc")] + ["transformer_models"]

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
    host = host_code(generated_units(tmp_path, source, ("sm_90",)))
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


def _accesses(comp, kernel) -> tuple[set[int], dict[int, set[object]]]:
    """The buffers and parameters ``kernel`` reads, and those it writes (each with the slices
    of a concatenation it stores, None for anything else), as the emitted code accesses them
    (its operands, its GEMM terms' operands): a second account, independent of the fusion
    pass's ``Function.after``."""
    st = comp.storage

    def base(node):
        return id(st.local(node, None)[0])

    reads = {base(op.base) for op in kernel.operands if op.dest is None}
    for term in kernel.group.terms:
        for side in term.srcs[:2]:
            reads.add(base(matmul_operand(side, st)[0]))
    writes: dict[int, set[object]] = {}
    dests = [op.dest for op in kernel.operands if op.dest is not None] + list(kernel.group.dests)
    for d in dests:
        part = (d.axis, str(d.offset)) if d.axis >= 0 and d.region is None else None
        writes.setdefault(base(d.buffer), set()).add(part)
    return reads, writes


def _overwrites(a: dict[int, set[object]], b: dict[int, set[object]]) -> bool:
    """Whether two kernels write the same elements: a buffer both write, unless each writes
    only its own slices of a concatenation."""
    return any(None in a[buf] or None in b[buf] or a[buf] & b[buf] for buf in a.keys() & b.keys())


@pytest.mark.parametrize("name", MODULES)
def test_every_kernel_waits_for_what_it_reads_or_overwrites(name):
    """Across the cookbook's snippets and the transformer models: wherever a kernel reads
    what an earlier one wrote, writes what an earlier one read, or writes the same elements
    (not another slice of one concatenation), its mask names that kernel; and a mask names
    earlier kernels only."""
    sys.path.insert(0, str(BENCH))  # transformer_models
    try:
        module = importlib.import_module(name)
    finally:
        sys.path.remove(str(BENCH))
    _, _, fused = pipeline.compile_ir(module, pipeline.Options(cpu_levels=(1,)))
    comps = [lower_signature(f"f{f}_s{s}", fname, fn, sig)
             for f, (fname, sigs) in enumerate(fused.items())
             for s, (sig, fn) in enumerate(sigs)]
    gp = gpu_plan.lower(comps, GpuTargets.of(("sm_90",)))
    checked = 0
    for comp in comps:
        masks = gp.after.get(comp.prefix)
        if masks is None:
            continue
        kernels = gp.kernels[comp.prefix]
        access = [_accesses(comp, k) for k in kernels]
        for j, (reads_j, writes_j) in enumerate(access):
            assert masks[j] < 1 << j, (comp.name, j)
            for i in range(j):
                reads_i, writes_i = access[i]
                if writes_i.keys() & reads_j or reads_i & writes_j.keys() \
                        or _overwrites(writes_i, writes_j):
                    assert masks[j] >> i & 1, (comp.name, comp.prefix, i, j)
            checked += 1
    assert checked > 0
