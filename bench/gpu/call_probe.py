"""Where the host time of a small GPU call goes (issue 6, batch 1): wall time of call +
synchronize for compiled functions of 1, 2 and 3 kernels, with and without out=, next to
torch.empty and an empty torch kernel, then the device time of each kernel of an LSTM
step and a ResNet head call at batch 1 and 256 (CUPTI, through torch.profiler). Run on the
device machine after installing; CUVIL_AOT_CUDA_ONE=0 splits a one-kernel call into its
kernels:

    python bench/gpu/call_probe.py
"""

from __future__ import annotations

import statistics
import sys
import tempfile
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
def add1(x: cv.f32["N"]):
    return x + 1.0

@cv.optimize
def add6(a: cv.f32["N"], b: cv.f32["N"], c: cv.f32["N"], d: cv.f32["N"], e: cv.f32["N"],
         f: cv.f32["N"]):
    return a + b + c + d + e + f

@cv.optimize
def two(x: cv.f32["N"]):
    return np.exp(x) / np.exp(x).sum()
'''


def wall(fn, n=4000, sync=None):
    """Medians, in us, of call + synchronize and of the call alone (its host cost: the
    launches are asynchronous and the queue is empty when it starts). The synchronize is
    torch.cuda.synchronize unless ``sync`` is given."""
    sync = sync or torch.cuda.synchronize
    for _ in range(200):
        fn()
        sync()
    ts, host = [], []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        t1 = time.perf_counter()
        sync()
        ts.append(time.perf_counter() - t0)
        host.append(t1 - t0)
    return statistics.median(ts) * 1e6, statistics.median(host) * 1e6


def pool_cost(n: int = 20000) -> float:
    """Host us of one cudaMallocAsync + cudaFreeAsync pair on the default stream (what a
    call's intermediate costs in the runtime's pool), less the Python call overhead."""
    import cupy
    rt = cupy.cuda.runtime
    def pairs() -> float:
        t0 = time.perf_counter()
        for _ in range(n):
            rt.freeAsync(rt.mallocAsync(1 << 14, 0), 0)
        return time.perf_counter() - t0
    def calls() -> float:
        t0 = time.perf_counter()
        for _ in range(n):
            rt.getDevice(), rt.getDevice()
        return time.perf_counter() - t0
    pairs(), calls()
    return (min(pairs() for _ in range(3)) - min(calls() for _ in range(3))) / n * 1e6


def main() -> None:
    arch = device_arch()
    work = Path(tempfile.mkdtemp())
    m = compile_source(work, SOURCE, cuda_archs=(arch,))
    models = compile_source(work, (ROOT / "examples" / "models.py").read_text(),
                            cuda_archs=(arch,))
    x = torch.randn(8, device="cuda")
    o = torch.empty_like(x)
    rng = np.random.default_rng(0)
    lstm = [torch.from_numpy((rng.standard_normal(s) * k).astype(np.float32)).cuda()
            for s, k in zip([(1, 512), (1, 512), (1, 512), (512, 2048), (512, 2048), (2048,)],
                            [1, 1, 1, 0.044, 0.044, 0.1])]
    h2, c2 = torch.empty(1, 512, device="cuda"), torch.empty(1, 512, device="cuda")
    w_ih, w_hh = lstm[3].t().contiguous(), lstm[4].t().contiguous()
    zero = torch.zeros_like(lstm[5])
    feat = torch.randn(1, 512, 7, 7, device="cuda")
    fc_w = torch.randn(512, 1000, device="cuda") * 0.04
    fc_b = torch.randn(1000, device="cuda") * 0.1
    probs = torch.empty(1, 1000, device="cuda")
    rows = [
        ("torch.cuda.synchronize alone", lambda: None),
        ("torch.empty(8)", lambda: torch.empty(8, device="cuda")),
        ("torch x.add_(1) (1 launch)", lambda: x.add_(1)),
        ("torch x + 1 (alloc + 1 launch)", lambda: x + 1),
        ("ours add1(x) (alloc + 1 launch)", lambda: m.add1(x)),
        ("ours add1(x, out=o) (1 launch)", lambda: m.add1(x, out=o)),
        ("ours add6(x, ..., out=o) (1 launch)", lambda: m.add6(x, x, x, x, x, x, out=o)),
        ("ours two(x) (2-3 launches)", lambda: m.two(x)),
        ("torch LSTMCell b1 (fused cell)", lambda: torch._VF.lstm_cell(
            lstm[0], (lstm[1], lstm[2]), w_ih, w_hh, lstm[5], zero)),
        ("ours lstm b1", lambda: models.lstm_step(*lstm)),
        ("ours lstm b1 out=", lambda: models.lstm_step(*lstm, out=(h2, c2))),
        ("ours resnet head b1", lambda: models.resnet_head(feat, fc_w, fc_b)),
        ("ours resnet head b1 out=", lambda: models.resnet_head(feat, fc_w, fc_b, out=probs)),
    ]
    rows += cupy_rows(models, lstm)
    # The same calls, waited for with a synchronize of the current stream (all of them
    # queue their work there): PyTorch's device synchronize costs several us by itself.
    stream_sync = torch.cuda.current_stream().synchronize
    rows += [(f"{name} [stream sync]", fn, stream_sync) for name, fn in [
        ("stream synchronize alone", lambda: None),
        ("ours add1(x, out=o) (1 launch)", lambda: m.add1(x, out=o)),
        ("torch LSTMCell b1 (fused cell)", lambda: torch._VF.lstm_cell(
            lstm[0], (lstm[1], lstm[2]), w_ih, w_hh, lstm[5], zero)),
        ("ours lstm b1", lambda: models.lstm_step(*lstm)),
        ("ours resnet head b1", lambda: models.resnet_head(feat, fc_w, fc_b)),
    ]]
    for name, fn, *sync in rows:
        try:
            w, h = wall(fn, sync=sync[0] if sync else None)
            print(f"{name:40s} {w:7.2f} us   host {h:6.2f} us", flush=True)
        except Exception as exc:  # noqa: BLE001 - a probe: report and go on
            print(f"{name:40s} {type(exc).__name__}: {exc}"[:300], flush=True)
    cupy_profile(models, lstm)
    print(f"stream-ordered alloc + free, host: {pool_cost():.2f} us (CuPy's cudaMallocAsync, "
          "less an empty runtime call)", flush=True)
    feat256 = torch.randn(256, 512, 7, 7, device="cuda")
    for name, fn in [("lstm b1 out=", lambda: models.lstm_step(*lstm, out=(h2, c2))),
                     ("resnet head b1", lambda: models.resnet_head(feat, fc_w, fc_b)),
                     ("resnet head b256", lambda: models.resnet_head(feat256, fc_w, fc_b))]:
        print(f"kernels of one {name} call (device us, CUPTI):", kernel_times(fn), flush=True)


def cupy_rows(models, lstm):
    """The LSTM step with CuPy arrays: the runtime reads their views from CuPy's attributes
    and makes their outputs with cupy.empty (PyTorch has a C exchange API for both)."""
    try:
        import cupy
    except ImportError:
        return []
    args = [cupy.asarray(t) for t in lstm]
    h2, c2 = cupy.empty((1, 512), cupy.float32), cupy.empty((1, 512), cupy.float32)
    def reads():  # what the runtime reads of each CuPy array, here in Python
        for a in (*args, h2, c2):
            _ = a.data.ptr, a.data.device_id, a.shape, a.strides, a.dtype.str

    from cuvil_aot.runtime.gpu_adapters import _cupy_stream
    stream = cupy.cuda.get_current_stream().ptr
    return [("ours lstm b1 (CuPy)", lambda: models.lstm_step(*args)),
            ("ours lstm b1 out= (CuPy)", lambda: models.lstm_step(*args, out=(h2, c2))),
            ("ours lstm b1 out= stream= (CuPy)",
             lambda: models.lstm_step(*args, out=(h2, c2), stream=stream)),
            ("CuPy: the attributes of 8 arrays, in Python", reads),
            ("CuPy: the current-stream adapter", lambda: _cupy_stream(0))]


def cupy_profile(models, lstm, calls=3000):
    """Where the host time of the LSTM step with CuPy arrays and out= goes, by function
    (cProfile sees the Python the runtime calls back into)."""
    try:
        import cupy
    except ImportError:
        return
    import cProfile
    import pstats

    args = [cupy.asarray(t) for t in lstm]
    h2, c2 = cupy.empty((1, 512), cupy.float32), cupy.empty((1, 512), cupy.float32)
    with cProfile.Profile() as prof:
        for _ in range(calls):
            models.lstm_step(*args, out=(h2, c2))
        cupy.cuda.Device().synchronize()
    pstats.Stats(prof).sort_stats("tottime").print_stats(8)


def kernel_times(fn, calls=200):
    """Mean device time of each kernel a call launches, from the profiler's CUPTI trace."""
    from torch.profiler import ProfilerActivity, profile

    for _ in range(20):
        fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
    return {e.key: round(e.device_time_total / calls, 2) for e in prof.key_averages()
            if e.device_time_total > 0}


if __name__ == "__main__":
    main()
