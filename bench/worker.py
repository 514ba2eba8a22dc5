"""One measurement in a fresh process, printed as one JSON line (run.py starts these).

    python bench/worker.py case COMPETITOR CASE_NAME
    python bench/worker.py floors

A case: build the inputs, compute the NumPy float64 reference, prepare the competitor,
check its result against the reference, warm up, time it (median), then measure the
memory of one more call.
"""

from __future__ import annotations

import ctypes
import gc
import importlib
import inspect
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import numpy as np
from cases import BY_NAME, OURS, Case

RTOL = 2e-3
ATOL_REL = 2e-4
"""atol = ATOL_REL * max|reference| of each output"""


# --- the models ---------------------------------------------------------------------


def _bind_prebuilt() -> None:
    """Bind the extensions run.py built (else the first call compiles the module)."""
    from cuvil_aot.runtime import (
        binding,
        extension,
        native,  # noqa: F401  (extensions import the runtime)
    )

    exts = json.loads(os.environ.get("CUVIL_BENCH_EXT", "{}"))
    for mod_name, (ext_name, path) in exts.items():
        binding.bind(importlib.import_module(mod_name), extension.load(ext_name, Path(path)))


def _as_tuple(result) -> tuple:
    return tuple(result) if isinstance(result, (tuple, list)) else (result,)


def prepare(competitor: str, case: Case, inputs: tuple[np.ndarray, ...]):
    """A no-argument call of the competitor on the inputs, and a converter to NumPy."""
    if competitor in OURS:
        _bind_prebuilt()
    dispatcher = getattr(importlib.import_module(case.module), case.model)
    transformer = case.group == "transformers"
    if competitor == "cuvil_aot":
        return lambda: dispatcher(*inputs), _as_tuple
    if competitor == "cuvil_aot frozen":
        import cuvil_aot

        first = len(inputs) - case.weight_inputs
        frozen = inputs[:first] + tuple(cuvil_aot.freeze(w) for w in inputs[first:])
        return lambda: dispatcher(*frozen), _as_tuple
    if competitor == "NumPy":
        py_func = dispatcher.py_func  # bert_stack, a plain function, sets its own
        return lambda: py_func(*inputs), _as_tuple
    if competitor == "numexpr":
        import impl_numexpr

        fn = getattr(impl_numexpr, case.model)
        return lambda: fn(*inputs), _as_tuple
    if competitor == "Numba":
        import impl_numba

        fn = impl_numba.build(case.model, case.parallel)
        return lambda: fn(*inputs), _as_tuple
    if competitor in ("PyTorch eager", "torch.compile"):
        import torch

        impl = importlib.import_module("impl_torch_transformers" if transformer
                                       else "impl_torch")
        fn = impl.build(case.model, competitor == "torch.compile")
        tensors = [torch.from_numpy(a) if isinstance(a, np.ndarray) else a for a in inputs]
        return lambda: fn(*tensors), lambda r: tuple(t.numpy() for t in _as_tuple(r))
    if competitor.startswith("ONNX Runtime"):
        names = list(inspect.signature(dispatcher.py_func).parameters)
        if transformer:
            import impl_onnx_transformers

            fn = impl_onnx_transformers.build(case.model, names, inputs, case.outputs,
                                              case.weight_inputs, competitor.endswith("fused"))
        else:
            import impl_onnx

            fn = impl_onnx.build(case.model, names, inputs, case.outputs)
        return lambda: fn(*inputs), _as_tuple
    raise ValueError(f"unknown competitor {competitor!r}")


# --- correctness --------------------------------------------------------------------


def check(got: tuple, ref: tuple) -> float:
    """Assert every output is float32, shaped like and close to the float64 reference;
    return the largest error relative to max|reference|."""
    assert len(got) == len(ref), f"{len(got)} outputs, expected {len(ref)}"
    worst = 0.0
    for g, r in zip(got, ref):
        g = np.asarray(g)
        assert g.dtype == np.float32, f"dtype {g.dtype}, expected float32"
        assert g.shape == r.shape, f"shape {g.shape}, expected {r.shape}"
        scale = float(np.max(np.abs(r))) or 1.0
        np.testing.assert_allclose(g, r, rtol=RTOL, atol=ATOL_REL * scale)
        worst = max(worst, float(np.max(np.abs(g - r))) / scale)
    return worst


# --- timing and memory --------------------------------------------------------------


def _time_one(fn: Callable[[], object], n: int) -> float:
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - t0) / n


def time_calls(fn: Callable[[], object], big: bool) -> dict:
    """Median seconds per call after warm-up; a sample loops over >= 2 ms of calls.
    CUVIL_BENCH_QUICK (run.py --quick): one warm-up call and 3 samples of one call."""
    if os.environ.get("CUVIL_BENCH_QUICK"):
        fn()
        samples = [_time_one(fn, 1) for _ in range(3)]
        return {"median_s": statistics.median(samples), "samples": 3, "inner": 1,
                "min_s": min(samples)}
    once = _time_one(fn, 1)
    _time_one(fn, max(1 if big else 2, min(1000, int(0.3 / once))))
    once = _time_one(fn, max(1, min(1000, int(0.01 / once))))
    inner = max(1, int(2e-3 / once))
    budget, lo, hi = (2.0, 5, 15) if big else (1.0, 7, 200)
    nsamples = int(min(hi, max(lo, budget / (inner * once))))
    gc.disable()
    try:
        samples = [_time_one(fn, inner) for _ in range(nsamples)]
    finally:
        gc.enable()
    return {"median_s": statistics.median(samples), "samples": nsamples, "inner": inner,
            "min_s": min(samples)}


def _status_kb(field: str) -> int:
    text = Path("/proc/self/status").read_text()
    return int(re.search(rf"^{field}:\s+(\d+)", text, re.M).group(1))


def memory_of_call(fn: Callable[[], object]) -> dict:
    """Peak extra bytes of one call: NumPy/Python allocations (tracemalloc), and the rise
    of the resident set above what it was just before (VmHWM reset through clear_refs)."""
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    result = fn()
    traced = tracemalloc.get_traced_memory()[1] - base
    del result
    tracemalloc.stop()
    gc.collect()
    ctypes.CDLL("libc.so.6").malloc_trim(0)
    Path("/proc/self/clear_refs").write_text("5")
    rss0 = _status_kb("VmRSS")
    result = fn()
    rss = (_status_kb("VmHWM") - rss0) * 1024
    del result
    return {"traced_bytes": traced, "rss_bytes": rss}


def run_case(competitor: str, case_name: str) -> dict:
    case = BY_NAME[case_name]
    inputs = case.make(np.random.default_rng(0))
    py_func = getattr(importlib.import_module(case.module), case.model).py_func
    ref = _as_tuple(py_func(*(a.astype(np.float64) if isinstance(a, np.ndarray) else a
                              for a in inputs)))
    t0 = time.perf_counter()
    call, to_numpy = prepare(competitor, case, inputs)
    first = to_numpy(call())
    prepare_s = time.perf_counter() - t0
    err = check(first, ref)
    del first, ref
    return {"ok": True, "max_err": err, "prepare_s": prepare_s,
            **time_calls(call, case.big), **memory_of_call(call)}


# --- floors -------------------------------------------------------------------------


def _best_time(fn: Callable[[], object], reps: int, inner: int = 1) -> float:
    """A floor is what the machine can do: the least disturbed of several samples."""
    fn()
    return min(_time_one(fn, inner) for _ in range(reps))


def floors() -> dict:
    """Copy bandwidth, L3 weight streaming and SGEMM rate of this machine, now."""
    n = 1 << 24  # 64 MiB of float32
    src = np.random.default_rng(0).standard_normal(n).astype(np.float32)
    dst = np.empty_like(src)
    copy_s = _best_time(lambda: np.copyto(dst, src), 21)
    fresh_s = _best_time(lambda: src.copy(), 21)
    weights = np.random.default_rng(1).standard_normal((1024, 2048)).astype(np.float32)
    v = np.ones(1024, np.float32)
    gemv_s = _best_time(lambda: v @ weights, 30, inner=50)
    a = np.random.default_rng(2).standard_normal((4096, 1024)).astype(np.float32)
    b = np.random.default_rng(3).standard_normal((1024, 4096)).astype(np.float32)
    gemm_s = _best_time(lambda: a @ b, 11)
    x1 = np.ones(1, np.float32)
    add_s = _best_time(lambda: np.add(x1, x1), 30, inner=10000)
    return {"copy_bw": 2 * src.nbytes / copy_s, "copy_fresh_bw": 2 * src.nbytes / fresh_s,
            "l3_bw": weights.nbytes / gemv_s, "sgemm_flops": 2 * 4096 * 1024 * 4096 / gemm_s,
            **_fma_peak(), "np_add_s": add_s, "blas": _blas_info()}


def _fma_peak() -> dict:
    """All CPUs issuing independent 512-bit FMAs (bench/fma_peak.c), the best of three:
    the ceiling no GEMM passes. Empty where the C compiler or AVX-512 is missing."""
    src = Path(__file__).with_name("fma_peak.c")
    with tempfile.TemporaryDirectory() as tmp:
        exe = Path(tmp) / "fma_peak"
        try:
            subprocess.run(["cc", "-O3", "-mavx512f", "-pthread", str(src), "-o", str(exe)],
                           check=True, capture_output=True)
            out = subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout
        except (OSError, subprocess.CalledProcessError):
            return {}
    cpus, gflops = out.split()
    return {"fma_flops": float(gflops) * 1e9, "fma_cpus": int(cpus)}


def _blas_info() -> list[dict]:
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return []
    keys = ("internal_api", "architecture", "version", "num_threads", "filepath")
    return [{k: i.get(k) for k in keys} for i in threadpool_info() if i["user_api"] == "blas"]


def main(argv: list[str]) -> None:
    if argv[:1] == ["floors"]:
        out = floors()
    else:
        try:
            out = run_case(argv[1], argv[2])
        except Exception as exc:  # reported in the table, never timed
            out = {"ok": False, "error": f"{type(exc).__name__}: {exc}"[:600]}
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
