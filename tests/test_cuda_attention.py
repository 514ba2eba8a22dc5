"""Fused attention without a GPU (issue 23): the fused kernel is chosen for attention as
users write it (codegen/attention_match.py) and for nothing else; its CUDA compiles for
sm_80 and sm_90; the CPU path of the same functions is NumPy's. The device runs are
tests/test_gpu_attention.py."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import (
    assert_close,
    built_emulator,
    compile_source,
    cuda_text,
    generated_units,
    host_code,
    load_source,
)

from cuvil_aot import host
from cuvil_aot.compiler import pipeline
from cuvil_aot.compiler.toolchain import nvcc

ROOT = Path(__file__).resolve().parent.parent
needs_nvcc = pytest.mark.skipif(nvcc.find_nvcc() is None, reason="nvcc not found")

PRELUDE = '''
import numpy as np
import cuvil_aot as cv

def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)

Q = "f32[B,H,T,D], f32[B,H,S,D], f32[B,H,S,D]"
'''

FUSED = PRELUDE + '''
@cv.optimize(signatures=[Q + ", f32[B,1,1,S]"])
def padded(q, k, v, bias):
    scores = q @ k.transpose(0, 1, 3, 2) * (1.0 / q.shape[-1] ** 0.5) + bias
    return softmax(scores) @ v

@cv.optimize(signatures=["f32[B,T,768], f32[B,T,768], f32[B,T,768]"])
def causal_heads(x, y, z):
    b, t, _ = x.shape
    q = x.reshape(b, t, 12, 64).transpose(0, 2, 1, 3)
    k = y.reshape(b, t, 12, 64).transpose(0, 2, 1, 3)
    v = z.reshape(b, t, 12, 64).transpose(0, 2, 1, 3)
    causal = np.triu(np.full((t, t), -1e9, dtype=np.float32), k=1)
    s = q @ k.transpose(0, 1, 3, 2) * 0.125 + causal
    p = np.exp(s - s.max(axis=-1, keepdims=True)) / np.sum(
        np.exp(s - s.max(axis=-1, keepdims=True)), axis=-1, keepdims=True)
    return (p @ v).transpose(0, 2, 1, 3).reshape(b, t, 768)

@cv.optimize(signatures=["f32[T,D], f32[S,D], f32[S,D]"])
def single_head(q, k, v):
    return softmax(q @ k.T) @ v

@cv.optimize(signatures=[Q])
def merged_and_raw(q, k, v):
    o = softmax(q @ k.transpose(0, 1, 3, 2)) @ v
    return o.transpose(0, 2, 1, 3), o

@cv.optimize(signatures=["f32[Z,T,D], f32[Z,S,D], f32[Z,S,D], f32[Z,1,S]"])
def batched(q, k, v, mask):
    return softmax(q @ k.transpose(0, 2, 1) * 0.125 + mask) @ v

@cv.optimize(signatures=[Q])
def two_in_a_row(q, k, v):
    o = softmax(q @ k.transpose(0, 1, 3, 2) * 0.125) @ v
    return softmax(o @ k.transpose(0, 1, 3, 2) * 0.125) @ v
'''

NEAR_MISSES = PRELUDE + '''
@cv.optimize(signatures=[Q])
def other_axis(q, k, v):
    s = q @ k.transpose(0, 1, 3, 2)
    e = np.exp(s - s.max(axis=-2, keepdims=True))
    return e / e.sum(axis=-2, keepdims=True) @ v

@cv.optimize(signatures=[Q])
def scores_returned(q, k, v):
    s = q @ k.transpose(0, 1, 3, 2)
    return softmax(s) @ v, s

@cv.optimize(signatures=[Q])
def probs_returned(q, k, v):
    p = softmax(q @ k.transpose(0, 1, 3, 2))
    return p @ v, p

@cv.optimize(signatures=[Q])
def probs_used_twice(q, k, v):
    p = softmax(q @ k.transpose(0, 1, 3, 2))
    return p @ v + p.sum(axis=-1, keepdims=True)

@cv.optimize(signatures=[Q])
def no_max(q, k, v):
    e = np.exp(q @ k.transpose(0, 1, 3, 2))
    return e / e.sum(axis=-1, keepdims=True) @ v

@cv.optimize(signatures=["f32[B,H,T,D], f32[B,H,T,D], f32[B,H,T,D]"])
def transposed_scores(q, k, v):
    return softmax((q @ k.transpose(0, 1, 3, 2)).transpose(0, 1, 3, 2)) @ v

@cv.optimize(signatures=["f32[B,H,T,T], f32[B,H,T,T], f32[B,H,T,T]"])
def probs_as_b(q, k, v):
    return v @ softmax(q @ k)
'''


def _sources(tmp_path: Path, source: str, name: str) -> dict[str, str]:
    module = load_source(tmp_path, source, name)
    targets = nvcc.GpuBuild(nvcc.Nvcc("nvcc", "", frozenset()), ("sm_90",)).targets
    return pipeline.generate_sources(module, pipeline.Options(cpu_levels=(1,)), targets)[3]


def test_attention_as_users_write_it_is_one_fused_kernel(tmp_path):
    files = _sources(tmp_path, FUSED, "attn_fused")
    cu, host = cuda_text(files), host_code(files)
    for unit in ("f0", "f1", "f2", "f3", "f4"):
        assert f"extern \"C\" __global__ void __launch_bounds__(128) {unit}_s0_a0(" in cu
        assert f'"{unit}_s0_a0"' in host
    # a build for head dims up to 64 beside the one for 128 where D is known only at run
    # time (not causal_heads: 64), picked by the host where they fit
    # (two_in_a_row's two attentions are one text: one kernel, launched twice)
    assert cu.count("cv_attention<128, 128, true, true>") == 5
    # each build up to 64 twice: its split entry (_s, a block's keys in two halves of its
    # warps) beside it, which the host picks where the blocks are few
    assert cu.count("cv_attention<64, 64, true, true>") == 12
    assert len(re.findall(r"\], 2, cv_att_then<", cu)) == 6 and "f1_s0_a0_s(" in cu
    assert host.count("if (split == 2) kid = ") == 7
    # and its entries of few query rows, which the host picks at those: the FMA kernel (_f,
    # up to 16) and the decode rows (_d, up to 4)
    assert cu.count("cv_attention_rows<true, true>") == 6 and "f1_s0_a0_d(" in cu
    assert cu.count("cv_attention_few<true, true>") == 6 and "f1_s0_a0_f(" in cu
    assert host.count(" kid = t <= 4 ? ") == 7
    assert 'f0_s0_a0_n(' in cu and '"f0_s0_a0_n"' in host and '"f1_s0_a0_n"' not in host
    assert host.count(" + (((S_D)) <= 64 && ((S_D)) <= 64);") == 6
    # the head dims checked are Q's and V's, also where the scale and mask are the first
    # GEMM's epilogue (batched: its scores' last axis is S)
    assert "((S_S)) <= 128" not in host
    # two_in_a_row: two fused attentions of one text, one kernel: each use with its own
    # condition and arguments
    assert "f5_s0_a1" not in cu and "if (!attn1)" in host
    assert host.count("ax1.s = as1;") == 1 and "f5_s0_a0_args ax1;" in host
    # batched: the scale and mask are the first GEMM's epilogue, the score's first part
    assert "struct f4_s0_a0_pre" in cu and "(acc * ((float)0.125))" in cu
    # the scores and probabilities are allocated only where the fused kernel cannot run
    assert host.count("if (!attn0)") >= 6 and "ax0.q = one.a" in host
    # causal_heads: Q, K and V read from the arguments through their heads' strides, (b, h)
    # per batch, where fusion had copy kernels (run only where the fused kernel cannot)
    f1 = host[host.index("f1_s0_grun"):host.index("f2_s0_grun")]
    for which, g in enumerate((0, 1, 4)):  # the mask's ramps: no kernel of their own
        assert f"ai0[{which}] = (cv_att_in){{one.a{g}.p[0], one.a{g}.n[1], " in f1
    # causal_heads: the output stored with its heads merged (by the strides of the merge
    # kernel's buffer: o.transpose(0, 2, 1, 3)), in its four entries; merged_and_raw
    # returns o too: its epilogue
    assert cu.count("cv_att_store{&a_.ops[3]}") == 4 and "ax0.ops[3] = (cv_att_in){one.a6." in f1
    # padded: its arguments' own strides, through the matmuls' terms
    f0 = host[host.index("f0_s0_grun"):host.index("f1_s0_grun")]
    assert "ai0[0] = (cv_att_in){one.a0.t[0].a, 1, one.a0.t[0].a_bs, 0, " in f0


GROUPED = PRELUDE + '''
def repeat_kv(x, n_rep):
    b, kv, s, d = x.shape
    x = np.broadcast_to(x[:, :, None, :, :], (b, kv, n_rep, s, d))
    return x.reshape(b, kv * n_rep, s, d)

@cv.optimize(signatures=["f32[B,H,T,D], f32[B,KV,S,D], f32[B,KV,S,D], f32[B,1,T,S]"])
def llama(q, k, v, mask):
    n = q.shape[1] // k.shape[1]
    s = q @ repeat_kv(k, n).transpose(0, 1, 3, 2) * q.shape[-1] ** -0.5 + mask
    return softmax(s) @ repeat_kv(v, n)
'''


def test_grouped_query_attention_is_one_fused_kernel(tmp_path):
    """K/V heads repeated for n query heads each (passes/grouped_query.py: the matmuls of
    B·KV matrices of n·T rows): the kernel runs over the B·H heads of T rows, reads K and V
    at head z / rep (cv_att_batch with nh = rep, sh = 0) and Q's rows (z % rep)·T on of
    matrix z / rep (nh = rep, sh = T rows: no assumption on the matrices' stride), and its
    first matmul's epilogue and the output's store take the matmuls' (z / rep, (z % rep)·T
    + i)."""
    files = _sources(tmp_path, GROUPED, "attn_grouped")
    cu, host = cuda_text(files), host_code(files)
    assert 'extern "C" __global__ void __launch_bounds__(128) f0_s0_a0(' in cu
    assert "const int64_t n = a->n[1] / s->n[2], i0 = z / n, i1 = (z % n) * s->n[2] + i;" in cu
    assert "epi(z / n, (z % n) * s->n[2] + i, c, v);" in cu
    assert "a_.o.n[0] * (a_.o.n[1] / a_.s.n[2]), a_.s.n[2], " in cu
    assert "const int64_t t = as0.n[2], rep = a.n[1] / t, nz = a.n[0] * rep" in host
    assert "ai0[1] = (cv_att_in){one.a0.t[0].b, rep, one.a0.t[0].b_bs, 0, " in host
    assert "ai0[2] = (cv_att_in){a.t[0].b, rep, a.t[0].b_bs, 0, " in host
    # Q: head z is rows (z % rep)·T on of matrix z / rep, at its own batch stride
    assert ("ai0[0] = (cv_att_in){one.a0.t[0].a, rep, one.a0.t[0].a_bs, "
            "t * one.a0.t[0].a_rs, ") in host
    # whole heads of T rows, where CUVIL_AOT_CUDA_ATTENTION_GROUPED allows
    assert ") % ((S_T)) == 0 && (api->gpu->attention() & 4) && api->gpu->attention()" in host


@needs_nvcc
def test_grouped_query_attention_compiles_for_sm80_and_sm90(tmp_path):
    _builds_for_sm80_and_sm90(tmp_path, GROUPED, "attn_grouped_nvcc")


def test_near_misses_keep_their_three_kernels(tmp_path):
    files = _sources(tmp_path, NEAR_MISSES, "attn_near")
    cu, host = cuda_text(files), host_code(files)
    assert "cv_attention(" not in cu and "attn0" not in host


def test_deterministic(tmp_path):
    module = load_source(tmp_path, FUSED, "attn_det")
    targets = nvcc.GpuBuild(nvcc.Nvcc("nvcc", "", frozenset()), ("sm_90",)).targets
    first, second = (pipeline.generate_sources(module, pipeline.Options(cpu_levels=(1,)),
                                               targets)[3] for _ in range(2))
    assert first == second


@needs_nvcc
def test_fused_attention_compiles_for_sm80_and_sm90(tmp_path):
    _builds_for_sm80_and_sm90(tmp_path, FUSED, "attn_nvcc")


def _builds_for_sm80_and_sm90(tmp_path: Path, source: str, name: str) -> None:
    """``source`` built with code for sm_80 and sm_90 (nvcc runs), no function refused."""
    module = load_source(tmp_path, source, name)
    out = tmp_path / "build"
    out.mkdir()
    artifact = pipeline.build(module, pipeline.Options(cuda_archs=("sm_80", "sm_90")),
                              out_dir=out)
    assert artifact.manifest["refused"] == {}


SPILLS = PRELUDE + '''
@cv.optimize(signatures=["f32[B,H,T,32], f32[B,H,S,32], f32[B,H,S,80], f32[T,S]"])
def narrow_keys(q, k, v, mask):
    return softmax(q @ k.transpose(0, 1, 3, 2) * 0.1 + mask) @ v
'''


@needs_nvcc
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_fused_attention_has_no_spills(tmp_path, arch):
    """ptxas keeps the tensor-core kernel in registers at every head-dim bucket: 128/128
    (padded: symbolic dims), 64/64 (causal_heads), 32/96 (narrow_keys)."""
    nv = nvcc.find_nvcc()
    assert nv is not None
    units = {**{n: t for n, t in _sources(tmp_path, FUSED, "attn_spill").items()
                if n in ("kernels_f0.cu", "kernels_f1.cu")},
             "narrow.cu": _sources(tmp_path, SPILLS, "attn_spill_n")["kernels_f0.cu"]}
    buckets, entries = set(), set()
    for name, text in units.items():
        buckets |= set(re.findall(r"cv_attention<(\d+, \d+),", text))
        src = tmp_path / name
        src.write_text(text)
        run = subprocess.run([nv.path, "-cubin", f"-arch={arch}", *nvcc.NVCC_FLAGS,
                              "--resource-usage", f"-I{host.header_dir()}", str(src), "-o",
                              str(src.with_suffix(".cubin"))], capture_output=True, text=True)
        assert run.returncode == 0, run.stderr[-2000:]
        report = (run.stdout + run.stderr).split("Compiling entry function")
        fused = [r for r in report if re.match(r" '\w+_a\d+(_n|_f|_d)?'", r)]
        assert fused, name
        entries.update(r.split("'")[1] for r in fused)
        for r in fused:
            assert " 0 bytes spill stores, 0 bytes spill loads" in r, r
    assert buckets == {"128, 128", "64, 64", "32, 96"}
    assert {"f0_s0_a0", "f0_s0_a0_n", "f1_s0_a0"} <= entries


EMULATED = [  # B H T S dk dv mode (0 plain, 1 padding, 2 causal, 3 strided heads, 4 -inf rows,
    # 5 rows padded to 16 bytes)
    (2, 3, 7, 7, 64, 64, 1), (1, 2, 129, 129, 64, 64, 1), (1, 2, 70, 129, 64, 64, 2),
    (2, 2, 1, 100, 64, 64, 1), (2, 3, 33, 33, 32, 32, 1), (2, 2, 65, 47, 80, 80, 1),
    (1, 2, 97, 63, 128, 128, 2), (1, 2, 64, 17, 96, 64, 0), (3, 2, 31, 200, 8, 8, 2),
    (2, 3, 45, 77, 64, 64, 3), (2, 3, 45, 77, 80, 128, 3), (3, 2, 9, 70, 64, 64, 4),
    (2, 3, 9, 45, 128, 32, 1), (2, 3, 9, 45, 16, 128, 1), (2, 2, 50, 61, 33, 40, 3),
    (2, 2, 50, 61, 33, 40, 5), (1, 2, 40, 70, 30, 62, 5)] + [
    # a decode step's rows (t <= 4, head dims <= 64: cuda_attention_decode.h): keys over
    # four warps' tiles and past (300: warps of 3 and 2 tiles), fewer than one tile, one
    (3, 4, 1, 300, 64, 64, 1), (2, 3, 4, 257, 64, 64, 2), (2, 2, 2, 31, 40, 24, 3),
    (3, 2, 3, 130, 64, 64, 4), (1, 3, 1, 1, 8, 64, 0), (2, 2, 3, 99, 33, 62, 5),
    (2, 3, 4, 128, 32, 17, 1)]


def _random_cases(seed: int, n: int) -> list[tuple[int, ...]]:
    """n random problems: any head dims up to 128, odd lengths, T = 1, every mode."""
    rng = np.random.default_rng(seed)
    cases = []
    for _ in range(n):
        t = 1 if rng.random() < 0.2 else int(rng.integers(2, 90))
        cases.append((int(rng.integers(1, 3)), int(rng.integers(1, 3)), t,
                      int(rng.integers(1, 100)), int(rng.integers(1, 129)),
                      int(rng.integers(1, 129)), int(rng.integers(0, 6))))
    return cases


@pytest.fixture(scope="module")
def emulator(tmp_path_factory):
    return built_emulator(tmp_path_factory.mktemp("emu"), "attention_emulator.cpp")


def _emulate(exe: Path, case: tuple[int, ...], element: int,
             split: int = 1) -> tuple[float, bool, float]:
    """One problem emulated: split 2 as the host asks where its blocks are few (half the
    rows a block, the keys split between two halves of its warps; the bfloat16 kernel and
    the builds for head dims over 64 do not split, their blocks past t storing nothing)."""
    out = subprocess.run([str(exe), *map(str, case), "23", str(element), str(split)],
                         capture_output=True, text=True, check=True).stdout.split()
    return float(out[0]), out[1] == "1", float(out[2])


needs_gxx = pytest.mark.skipif(shutil.which("g++") is None or sys.platform != "linux",
                               reason="g++ and ucontext needed")


@needs_gxx
def test_tensor_core_kernel_emulated_on_the_cpu(emulator):
    """cuda_attention_tc.h's logic (fragment layouts, tiles, masks, online softmax, strides,
    the 4-byte copies) against float64, its 128 threads fibers on the CPU and mma.sync
    emulated (tests/attention_emulator.cpp): what a device run checks, without a device."""
    for case in EMULATED + _random_cases(5, 4):
        for split in (1, 2):
            err, nan_ok, _ = _emulate(emulator, case, 0, split)
            assert err < 2e-6 and nan_ok, (case, split)


@needs_gxx
def test_float16_operands_emulated_on_the_cpu(emulator):
    """Q, K and V of float16, converted as they are loaded, one TF32 product each: against
    float64 of the same rounded values, each output within P's rounding to TF32 (2^-11 of
    sum(p |v|) / sum(p)) and float32 sums."""
    for case in EMULATED + _random_cases(2, 6):
        for split in (1, 2):
            _, nan_ok, scaled = _emulate(emulator, case, 2, split)
            assert scaled < 1.05 * 2.0 ** -11 and nan_ok, (case, split)


BF16_EMULATED = [  # the bf16 kernel's tiles of 64 keys (dims <= 64) and of 32 (wider), its
    # 16-byte chunks (rows of a multiple of 8 elements: 64, 40, 72; partial ones in mode 5's
    # padded rows of 33 and 30 above) and its element loads (rows of 45, mode 3's views)
    (2, 3, 1, 130, 64, 64, 1), (1, 2, 127, 129, 64, 64, 2), (2, 2, 65, 64, 40, 40, 5),
    (1, 2, 77, 100, 72, 72, 1), (2, 2, 33, 95, 72, 40, 2), (2, 3, 45, 77, 64, 64, 3),
    (1, 2, 50, 90, 45, 72, 1), (1, 1, 1, 1, 64, 64, 0)]


@needs_gxx
def test_bfloat16_kernel_emulated_on_the_cpu(emulator):
    """Q, K and V of bfloat16 (the bf16 policy's heads): mma.sync m16n8k16 bf16 (emulated
    with ldmatrix) on bfloat16 tiles, P rounded to bfloat16 for P V. Against float64 of the
    same bfloat16 values: P's rounding moves output c by at most 2^-8 sum_j p_j |v_jc|
    / sum_j p_j (each p_j within 2^-8 p_j of its rounding; the sum l is float32's of the
    unrounded p); Q Kᵀ's products are exact and the rest is float32 arithmetic (scores,
    exps, sums over at most 200 keys: under 1e-5 of that scale), hence c = 1.05. Outputs
    the kernel does not store stay NaN (nan_ok)."""
    for case in EMULATED + BF16_EMULATED + _random_cases(1, 6):
        for split in (1, 2):
            _, nan_ok, scaled = _emulate(emulator, case, 1, split)
            assert scaled < 1.05 * 2.0 ** -8 and nan_ok, (case, split)


def test_cpu_path_unchanged(tmp_path):
    mod = compile_source(tmp_path, FUSED)
    rng = np.random.default_rng(23)
    q, k, v = (rng.standard_normal((2, 3, 5, 16)).astype(np.float32) for _ in range(3))
    bias = np.where(rng.random((2, 1, 1, 5)) < 0.3, -10000.0, 0.0).astype(np.float32)
    ref = mod.padded.py_func(*(a.astype(np.float64) for a in (q, k, v, bias)))
    assert_close(mod.padded(q, k, v, bias), ref, np.float32, 10)
    x, y, z = (rng.standard_normal((2, 7, 768)).astype(np.float32) for _ in range(3))
    ref = mod.causal_heads.py_func(*(a.astype(np.float64) for a in (x, y, z)))
    assert_close(mod.causal_heads(x, y, z), ref, np.float32, 10)


def test_bench_models_fuse_their_attention(tmp_path):
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        import transformer_models as models
    finally:
        sys.path.remove(str(ROOT / "bench"))
    targets = nvcc.GpuBuild(nvcc.Nvcc("nvcc", "", frozenset()), ("sm_90",)).targets
    files = pipeline.generate_sources(models, pipeline.Options(cpu_levels=(1,)), targets)[3]
    fused = re.findall(r"void __launch_bounds__\(128\) (\w+_a\d+)\(", cuda_text(files))
    assert len(fused) == 5  # bert_layer(_tanh), gpt2_block, gpt2_decode, gpt2_decode_inplace


BF16_MODELS = '''
import cuvil_aot as cv
from bench import transformer_models as T

@cv.optimize(signatures=[T.BERT], precision="bf16")
def bert_bf16(x, mask, wq, bq, wk, bk, wv, bv, wo, bo, g1, b1, wi, bi, wf, bf, g2, b2):
    return T._bert(x, mask, wq, bq, wk, bk, wv, bv, wo, bo, g1, b1, wi, bi, wf, bf, g2, b2,
                   T.gelu_erf)

@cv.optimize(signatures=["f32[B,T,768], " + T.GPT2], precision="bf16")
def gpt2_bf16(x, ln1_g, ln1_b, w_attn, b_attn, w_proj, b_proj, ln2_g, ln2_b, w_fc, b_fc,
              w_out, b_out):
    return T.gpt2_block.py_func(x, ln1_g, ln1_b, w_attn, b_attn, w_proj, b_proj, ln2_g, ln2_b,
                                w_fc, b_fc, w_out, b_out)
'''


def test_bf16_policy_fuses_the_bench_models_attention(tmp_path, monkeypatch):
    """precision="bf16": Q, K and V are bfloat16 heads of the projections' GEMMs (V's as
    split, not transposed: P @ V is the fused kernel's, canonicalize._probabilities), the
    probabilities rounded to bfloat16, the output rounded too: one fused kernel reading the
    bfloat16 heads in place (bf16 mma.sync for both matmuls: cv_attention_bf16, chosen by
    the three cv_bf16 arguments), storing the merged heads as bfloat16; no heads copies."""
    monkeypatch.syspath_prepend(str(ROOT))
    units = generated_units(tmp_path, BF16_MODELS, ("sm_90a",))
    for unit in ("kernels_f0.cu", "kernels_f1.cu"):
        text = units[unit]
        assert text.count("cv_attention<64, 64, false, false, cv_bf16, cv_bf16, cv_bf16>(") == 1
        assert "cv_att_store_as<cv_bf16>{&a_.ops[3]}" in text
    wrapper = host_code(units)
    split = wrapper.index("f1_s0_grun")
    for f, fn in (("f0", wrapper[wrapper.index("f0_s0_grun"):split]), ("f1", wrapper[split:])):
        # each operand read through its copy kernel's source strides, rows along the
        # last axis (16-byte chunks by cp.async); the merged output through the merge kernel's
        copies = re.findall(r"ai0\[(\d)\] = \(cv_att_in\)\{one\.a\d+\.p\[0\], one\.a\d+\.n\[1\], "
                            r"one\.a\d+\.s\[0\]\[0\], one\.a\d+\.s\[0\]\[1\], "
                            r"one\.a\d+\.s\[0\]\[(\d)\], one\.a\d+\.s\[0\]\[(\d)\]\}", fn)
        assert copies == [("0", "2", "3"), ("1", "2", "3"), ("2", "2", "3")], f
        assert "ax0.ops[3] = (cv_att_in){one.a" in fn


def test_bf16_policy_attention_compiles_without_spills(tmp_path, monkeypatch):
    """The bfloat16 build of the kernel fits in registers on sm_90a."""
    nv = nvcc.find_nvcc()
    if nv is None:
        pytest.skip("nvcc not found")
    monkeypatch.syspath_prepend(str(ROOT))
    src = tmp_path / "bert.cu"
    src.write_text(generated_units(tmp_path, BF16_MODELS, ("sm_90a",))["kernels_f0.cu"])
    run = subprocess.run([nv.path, "-cubin", "-arch=sm_90a", *nvcc.NVCC_FLAGS,
                          "--resource-usage", f"-I{host.header_dir()}", str(src), "-o",
                          str(src.with_suffix(".cubin"))], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-2000:]
    fused = [r for r in (run.stdout + run.stderr).split("Compiling entry function")
             if r.startswith(" 'f0_s0_a0'")]
    assert fused and " 0 bytes spill stores, 0 bytes spill loads" in fused[0]


BF16_BUCKETS = r"""#include "cuvil_aot/cuda_attention.h"
struct scale {
    __device__ float operator()(int64_t, int64_t, int64_t, float d) const { return d * 0.125f; }
};
#define ENTRY(name, DK, DV)                                                                  \
    extern "C" __global__ void __launch_bounds__(128) name(                                  \
        cv_att_in q, cv_att_in k, cv_att_in v, cv_att_in o, int64_t nz, int64_t t, int64_t s, \
        int64_t dk, int64_t dv) {                                                            \
        cv_attention<DK, DV, false, false, cv_bf16, cv_bf16, cv_bf16>(                       \
            q, k, v, nz, t, s, dk, dv, 1, scale{}, cv_att_store_as<cv_bf16>{&o});            \
    }
ENTRY(b128_128, 128, 128) ENTRY(b64_64, 64, 64) ENTRY(b32_96, 32, 96) ENTRY(b96_32, 96, 32)
"""


@needs_nvcc
def test_bf16_kernel_has_no_spills_at_every_bucket(tmp_path):
    """cv_attention_bf16 (tiles of 64 keys where both head dims are at most 64, else 32)
    stays in registers on sm_90a at the widest bucket, BERT's and the two lopsided ones."""
    nv = nvcc.find_nvcc()
    assert nv is not None
    src = tmp_path / "buckets.cu"
    src.write_text(BF16_BUCKETS)
    run = subprocess.run([nv.path, "-cubin", "-arch=sm_90a", *nvcc.NVCC_FLAGS,
                          "--resource-usage", f"-I{host.header_dir()}", str(src), "-o",
                          str(src.with_suffix(".cubin"))], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-2000:]
    report = (run.stdout + run.stderr).split("Compiling entry function")[1:]
    assert len(report) == 4
    for r in report:
        assert " 0 bytes spill stores, 0 bytes spill loads" in r, r
