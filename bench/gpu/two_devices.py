"""Two devices driven from two threads at once (issue 26): the wall time of CALLS calls on
cuda:0 alone, on cuda:1 alone, then on both at once, one thread each (the GIL is held in a
call, released by the synchronize at the end). Concurrent when the pair takes about the
slower one's time alone, serialized when it takes their sum. A BERT-base FFN GEMM at 8x128
tokens, so each call's kernels run long enough for overlap to show.

    PYTHONPATH=. python bench/gpu/two_devices.py [--calls 2000]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
from conftest import compile_source  # noqa: E402
from gpu_harness import device_arch  # noqa: E402

SOURCE = '''
import numpy as np
import cuvil_aot as cv

@cv.optimize
def linear_gelu(x: cv.f32["M", "K"], w: cv.f32["N", "K"], b: cv.f32["N"]):
    h = x @ w.T + b
    return 0.5 * h * (1.0 + np.tanh(0.7978845608 * (h + 0.044715 * h ** 3)))
'''


def run_calls(fn, args: list, calls: int) -> None:
    for _ in range(calls):
        fn(*args)
    torch.cuda.synchronize(args[0].device)


def wall(jobs: list) -> float:
    """Seconds until every job (fn, args, calls), each on a thread of its own, is done."""
    threads = [threading.Thread(target=run_calls, args=job) for job in jobs]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=2000)
    opts = ap.parse_args()
    if torch.cuda.device_count() < 2:
        sys.exit("two_devices.py: needs two GPUs")
    with tempfile.TemporaryDirectory() as tmp:
        fn = compile_source(Path(tmp), SOURCE, cuda_archs=(device_arch(),)).linear_gelu
        rng = np.random.default_rng(0)
        host = [rng.standard_normal(s).astype(np.float32) for s in ((1024, 768), (3072, 768),
                                                                    (3072,))]
        jobs = {d: (fn, [torch.from_numpy(a).to(f"cuda:{d}") for a in host], opts.calls)
                for d in (0, 1)}
        for job in jobs.values():  # load the module on each device, warm the pools
            run_calls(job[0], job[1], 20)
        alone = [wall([jobs[d]]) for d in (0, 1)]
        pair = wall([jobs[0], jobs[1]])
    print(f"{opts.calls} calls of 1024x768 @ 768x3072 + GELU ({torch.cuda.get_device_name(0)})")
    print(f"cuda:0 alone {alone[0] * 1e3:.1f} ms, cuda:1 alone {alone[1] * 1e3:.1f} ms, "
          f"both at once {pair * 1e3:.1f} ms: {pair / max(alone):.2f}x the slower alone "
          f"(1.00: concurrent, {sum(alone) / max(alone):.2f}: serialized)")


if __name__ == "__main__":
    main()
