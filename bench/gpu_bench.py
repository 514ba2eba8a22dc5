"""GPU benchmarks: cuvil_aot against CuPy, PyTorch eager and torch.compile (default and
reduce-overhead) on the cases of issue 6, plus the floors: measured device copy bandwidth
and the bytes each case must move.

Each implementation is timed three ways: wall time from the Python call until the result is
ready (what a batch-1 user sees), once with a device synchronize per call and once with a
synchronize of the current stream, and device time per call from CUDA events around a batch
of calls. Medians of repeated runs after warm-up.

    python bench/gpu_bench.py OUTDIR [--compile] [--quick]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

from conftest import compile_source  # noqa: E402
from gpu_harness import device_arch  # noqa: E402

from bench.gpu.device_timing import copy_gbps, device_us  # noqa: E402

GEMM_SOURCE = '''
import numpy as np
import cuvil_aot as cv

@cv.optimize
def gemm_bias_relu(x: cv.f32["M", "K"], w: cv.f32["K", "N"], b: cv.f32["N"]):
    return np.maximum(0, x @ w + b)
'''

# name: (model, input shapes, scales)
CASES: dict[str, tuple[str, list[tuple[int, ...]], list[float]]] = {
    "matmul_relu_b32": ("matmul_relu", [(32, 128), (128, 64), (64,)], [1, 0.09, 0.1]),
    "lstm_b1": ("lstm_step", [(1, 512), (1, 512), (1, 512), (512, 2048), (512, 2048), (2048,)],
                [1, 1, 1, 0.044, 0.044, 0.1]),
    "resnet_head_b1": ("resnet_head", [(1, 512, 7, 7), (512, 1000), (1000,)], [1, 0.18, 0.1]),
    "resnet_head_b256": ("resnet_head", [(256, 512, 7, 7), (512, 1000), (1000,)], [1, 0.18, 0.1]),
    "chain_16M": ("elementwise_chain", [(1 << 24,), (1 << 24,)], [1, 1]),
    "softmax_4096": ("softmax", [(4096, 4096)], [3]),
    "gemm_4096x1024x4096": ("gemm_bias_relu", [(4096, 1024), (1024, 4096), (4096,)],
                            [1, 0.03, 0.1]),
}


def torch_eager(model: str) -> Callable[..., Any]:
    """Idiomatic PyTorch with its fused library ops."""
    def lstm(x, h, c, wx, wh, b):
        gates = torch.addmm(b, x, wx).addmm_(h, wh)
        i, f, g, o = gates.chunk(4, 1)
        c2 = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
        return torch.sigmoid(o) * torch.tanh(c2), c2

    return {
        "matmul_relu": lambda x, w, b: torch.relu(torch.addmm(b, x, w)),
        "gemm_bias_relu": lambda x, w, b: torch.relu(torch.addmm(b, x, w)),
        "lstm_step": lstm,
        "resnet_head": lambda f, w, b: torch.softmax(torch.addmm(b, f.mean((2, 3)), w), 1),
        "elementwise_chain": lambda x, y: torch.tanh(x * 0.5 + y) * torch.sigmoid(y)
        - torch.abs(x) * 0.25,
        "softmax": lambda x: torch.softmax(x, -1),
    }[model]


def cupy_eager(model: str) -> Callable[..., Any]:
    import cupy as cp

    def sig(v):
        return 1 / (1 + cp.exp(-v))

    def lstm(x, h, c, wx, wh, b):
        g = x @ wx + h @ wh + b
        n = h.shape[1]
        c2 = sig(g[:, n:2 * n]) * c + sig(g[:, :n]) * cp.tanh(g[:, 2 * n:3 * n])
        return sig(g[:, 3 * n:]) * cp.tanh(c2), c2

    def softmax(x):
        e = cp.exp(x - x.max(-1, keepdims=True))
        return e / e.sum(-1, keepdims=True)

    return {
        "matmul_relu": lambda x, w, b: cp.maximum(0, x @ w + b),
        "gemm_bias_relu": lambda x, w, b: cp.maximum(0, x @ w + b),
        "lstm_step": lstm,
        "resnet_head": lambda f, w, b: softmax(f.mean((2, 3)) @ w + b),
        "elementwise_chain": lambda x, y: cp.tanh(x * 0.5 + y) * sig(y) - cp.abs(x) * 0.25,
        "softmax": softmax,
    }[model]


def wall_us(fn: Callable[[], Any], sync: Callable[[], None],
            seconds: float) -> dict[str, float]:
    """Wall time of call + synchronize, in microseconds: the median (`wall_us`) and the
    10th and 90th percentiles (host-bound times on these machines can be bimodal)."""
    for _ in range(5):
        fn()
        sync()
    times, end = [], time.perf_counter() + seconds
    while time.perf_counter() < end or len(times) < 20:
        t0 = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - t0)
        if len(times) >= 20000:
            break
    deciles = statistics.quantiles(times, n=10)
    return {"wall_us": statistics.median(times) * 1e6, "wall_p10_us": deciles[0] * 1e6,
            "wall_p90_us": deciles[-1] * 1e6}






def inputs(shapes: list[tuple[int, ...]], scales: list[float]) -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    return [(rng.standard_normal(s) * k).astype(np.float32) for s, k in zip(shapes, scales)]


Syncs = tuple[Callable[[], None], Callable[[], None]]


def implementations(model: str, fn: Callable[..., Any], host: list[np.ndarray],
                    use_compile: bool) -> dict[str, tuple[Callable[[], Any], Syncs]]:
    """name: (call, (device synchronize, current-stream synchronize)) of its framework.
    Every call here queues its work on the framework's current stream, so a synchronize of
    that stream also waits for the result: it is the lighter of the two (PyTorch's device
    synchronize took 8.7 us on an idle GPU in u2, an empty launch + stream synchronize from
    C 8.9 us in all)."""
    import cupy as cp

    tin = [torch.from_numpy(a).cuda() for a in host]
    cin = [cp.asarray(a) for a in host]
    tsync = (torch.cuda.synchronize, torch.cuda.current_stream().synchronize)
    csync = (cp.cuda.runtime.deviceSynchronize, cp.cuda.get_current_stream().synchronize)
    eager, ceager = torch_eager(model), cupy_eager(model)
    impls = {
        "cuvil_aot(torch)": (lambda: fn(*tin), tsync),
        "cuvil_aot(cupy)": (lambda: fn(*cin), csync),
        "torch eager": (lambda: eager(*tin), tsync),
        "cupy": (lambda: ceager(*cin), csync),
    }
    if model == "gemm_bias_relu":  # the library GEMM alone, fp32 (no TF32): the bar
        impls["torch mm alone"] = (lambda: torch.mm(tin[0], tin[1]), tsync)
    if model == "lstm_step":  # PyTorch's fused cell (two GEMMs, one gate kernel)
        x, h, c, wx, wh, b = tin
        w_ih, w_hh, zero = wx.t().contiguous(), wh.t().contiguous(), torch.zeros_like(b)
        impls["torch LSTMCell"] = (
            lambda: torch._VF.lstm_cell(x, (h, c), w_ih, w_hh, b, zero), tsync)
    if use_compile:
        for mode in ("default", "reduce-overhead"):
            compiled = torch.compile(eager, mode=mode)
            impls[f"torch.compile({mode})"] = (lambda c=compiled: c(*tin), tsync)
    return impls


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("out", type=Path)
    ap.add_argument("--compile", action="store_true", help="also time torch.compile")
    ap.add_argument("--quick", action="store_true", help="shorter timings")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    arch = device_arch()
    work = Path(tempfile.mkdtemp())
    t0 = time.perf_counter()
    models = compile_source(work, (ROOT / "examples" / "models.py").read_text(), cuda_archs=(arch,))
    gemm = compile_source(work, GEMM_SOURCE, cuda_archs=(arch,))
    print(f"built in {time.perf_counter() - t0:.1f} s for {arch}", flush=True)
    bw = copy_gbps() * 1e9
    results: dict[str, Any] = {"device": torch.cuda.get_device_name(), "copy_GBps": bw / 1e9,
                               "cases": {}}
    seconds = 0.3 if args.quick else 1.0
    for case, (model, shapes, scales) in CASES.items():
        fn = getattr(gemm if model == "gemm_bias_relu" else models, model)
        host = inputs(shapes, scales)
        out_bytes = sum(np.prod(s) * 4 for s in _outputs(model, shapes))
        floor_us = (sum(a.nbytes for a in host) + out_bytes) / bw * 1e6
        row: dict[str, Any] = {"floor_us": floor_us, "impls": {}}
        for name, (call, (sync, stream_sync)) in implementations(model, fn, host,
                                                                  args.compile).items():
            try:
                wall = wall_us(call, sync, seconds)
                stream = wall_us(call, stream_sync, seconds)
                dev = device_us(call, 20 if floor_us > 100 else 200, 5, warmup=0)
                row["impls"][name] = {**wall, **{f"stream_{k}": v for k, v in stream.items()},
                                      "device_us": dev}
            except Exception as exc:  # noqa: BLE001 - report, keep benchmarking
                row["impls"][name] = {"error": f"{type(exc).__name__}: {exc}"[:300]}
        results["cases"][case] = row
        print(_table_row(case, row), flush=True)
    (args.out / "gpu_bench.json").write_text(json.dumps(results, indent=2))
    print(f"copy bandwidth {bw / 1e12:.2f} TB/s; full results in {args.out / 'gpu_bench.json'}")


def _outputs(model: str, shapes: list[tuple[int, ...]]) -> list[tuple[int, ...]]:
    if model == "lstm_step":
        return [shapes[1], shapes[1]]
    if model == "resnet_head":
        return [(shapes[0][0], 1000)]
    if model in ("matmul_relu", "gemm_bias_relu"):
        return [(shapes[0][0], shapes[1][1])]
    return [shapes[0]]


def _table_row(case: str, row: dict[str, Any]) -> str:
    cells = []
    for name, r in row["impls"].items():
        if "error" in r:
            cells.append(f"{name}=ERR")
        else:
            cells.append(f"{name}={r['wall_us']:.1f}/{r['stream_wall_us']:.1f}/"
                         f"{r['device_us']:.1f}")
    return (f"{case} (floor {row['floor_us']:.1f} us; wall with a device / a stream "
            "synchronize / device us): " + "  ".join(cells))


if __name__ == "__main__":
    main()
