"""Fusion is proven on the IR and on the generated code: kernel counts, no temporaries."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from cuvil_aot.compiler import pipeline
from cuvil_aot.compiler.ir.group import Kind

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


@pytest.fixture(scope="module")
def models():
    sys.path.insert(0, str(EXAMPLES))
    try:
        import models as module
    finally:
        sys.path.remove(str(EXAMPLES))
    return module


@pytest.fixture(scope="module")
def fused(models):
    _, _, functions = pipeline.compile_ir(models, pipeline.Options())
    return {name: sigs[0][1] for name, sigs in functions.items()}


@pytest.fixture(scope="module")
def sources(models):
    return pipeline.generate_sources(models, pipeline.Options(cpu_levels=(1,)))[3]


def kinds(fn):
    return [g.kind for g in fn.groups]


def temporaries(fn):
    """Buffers a function materializes that are not its outputs."""
    outputs = {id(o) for o in fn.outputs}
    return [d.buffer for g in fn.groups for d in g.dests if id(d.buffer) not in outputs]


def test_matmul_relu_is_one_gemm_with_its_epilogue(fused, sources):
    fn = fused["matmul_relu"]
    assert kinds(fn) == [Kind.GEMM]
    assert temporaries(fn) == []
    kernels = re.findall(r"static void (f0_s\d+_k\d+)\(", sources["kernels.c"])
    assert kernels == ["f0_s0_k0"]
    run = sources["module.c"].split("f0_s0_run")[1].split("static PyObject")[0]
    assert "cv_buffer(" not in run  # no intermediate array is allocated


def test_lstm_keeps_only_the_gate_preactivation(fused):
    fn = fused["lstm_step"]
    assert kinds(fn) == [Kind.GEMM, Kind.ELEMENTWISE]
    gemm, gates = fn.groups
    assert len(gemm.terms) == 2  # x @ wx + h @ wh accumulate in one GEMM
    assert [str(t.type) for t in temporaries(fn)] == ["float32[B,4H]"]
    assert len(gates.roots) == 2  # h2 and c2 in one pass


def test_row_reductions_are_one_kernel(fused):
    assert kinds(fused["softmax"]) == [Kind.ROW]
    assert kinds(fused["layer_norm"]) == [Kind.ROW]
    assert temporaries(fused["softmax"]) == temporaries(fused["layer_norm"]) == []
    assert len(fused["softmax"].groups[0].stages) == 2  # max, then sum of exp


def test_elementwise_chain_has_no_intermediate_buffer(fused):
    assert kinds(fused["elementwise_chain"]) == [Kind.ELEMENTWISE]
    assert temporaries(fused["elementwise_chain"]) == []


def test_models_with_several_kernels(fused):
    assert kinds(fused["resnet_head"]) == [Kind.ROW, Kind.GEMM, Kind.ROW]
    assert kinds(fused["ffn_block"]) == [Kind.ROW, Kind.GEMM, Kind.GEMM]


def test_refused_fusions_carry_reasons(tmp_path, caplog):
    from conftest import load_source

    module = load_source(tmp_path, """
        import numpy as np
        import cuvil_aot as cv

        @cv.optimize
        def reversed_rows(x: cv.f32["A", "B"]):
            return x + x.sum(axis=1)[::-1, None]
    """)
    with caplog.at_level("INFO", logger="cuvil_aot.fusion"):
        _, _, functions = pipeline.compile_ir(module, pipeline.Options())
    fn = functions["reversed_rows"][0][1]
    assert kinds(fn) == [Kind.ROW, Kind.ELEMENTWISE]
    assert any("cannot run inside the kernel" in r and "line 7" in r for r in fn.refused)
    assert "fusion refused" in caplog.text


def test_generated_code_is_deterministic(models):
    first = pipeline.generate_sources(models, pipeline.Options(cpu_levels=(1, 3)))
    second = pipeline.generate_sources(models, pipeline.Options(cpu_levels=(1, 3)))
    assert first[2] == second[2] and first[3] == second[3]


def test_ir_dump_after_each_pass(models):
    from cuvil_aot.compiler.passes import PASS_NAMES

    _, log, _ = pipeline.compile_ir(models, pipeline.Options(dump=frozenset(PASS_NAMES)))
    assert set(log.dumps) == set(PASS_NAMES)
    assert "kernel 0: gemm" in log.dumps["fusion"]
    assert set(log.seconds) == set(PASS_NAMES[1:])
