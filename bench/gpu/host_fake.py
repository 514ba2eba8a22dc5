"""The host's share of a GPU call, measured without a GPU: the transformer cases' compiled
calls (bench/transformer_models.py, built with sm_90 code) against the fake driver of
tests/data/fake_libcuda.c, whose kernels, graphs and copies do nothing. What is left is the
call's own host work: reading the arguments, planning each kernel (grids, split-K, tensor
maps, scratch), comparing the CUDA graph's parameters and handing it over, plus the fake's
small bookkeeping. On the H200 a graph launch's host part is ~2.5 us more, the driver's.

    python bench/gpu/host_fake.py [--cases bert_1x16,gpt2_8x128,...] [--seconds 2]

Builds the fake (cc) and the module (nvcc: a minute the first time, then the cache),
re-runs itself with the fake first on LD_LIBRARY_PATH, then prints per case the median and
best host time of one call (µs) and the graph counters. With --perf, a perf profile of
each case's calls (as bench/profile_cpu.py prints it). Outputs are out= arrays: the fake's
arrays are `__cuda_array_interface__` objects, with no framework to allocate results.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]
import fake_driver  # noqa: E402
from fake_driver import DeviceArray  # noqa: E402

CASES = {  # name: (function, batch, tokens)
    "bert_1x16": ("bert_layer", 1, 16), "bert_8x128": ("bert_layer", 8, 128),
    "gpt2_1x128": ("gpt2_block", 1, 128), "gpt2_8x128": ("gpt2_block", 8, 128),
    "bert_stack_1x8": ("bert_stack", 1, 8),
}
H, FF = 768, 3072


def arguments(case: str) -> tuple[list[DeviceArray], DeviceArray]:
    fn, b, t = CASES[case]
    bert = [(H, H), (H,)] * 4 + [(H,), (H,), (FF, H), (FF,), (H, FF), (H,), (H,), (H,)]
    gpt2 = [(H,), (H,), (H, 3 * H), (3 * H,), (H, H), (H,), (H,), (H,), (H, FF), (FF,),
            (FF, H), (H,)]
    if fn == "gpt2_block":
        shapes = [(b, t, H), *gpt2]
    else:
        shapes = [(b, t, H), (b, t), *bert * (4 if fn == "bert_stack" else 1)]
    return [DeviceArray(0, *s) for s in shapes], DeviceArray(0, b, t, H)


def call(case: str):
    """One call of the case: the stack is four bert_layer calls from a Python loop."""
    from bench import transformer_models as T

    fn, _, _ = CASES[case]
    args, out = arguments(case)
    if fn == "bert_stack":
        x, mask, ws = args[0], args[1], args[2:]
        outs = [DeviceArray(0, *out.interface["shape"]) for _ in range(2)]

        def stack():
            h = x
            for i in range(0, len(ws), 16):
                h = T.bert_layer(h, mask, *ws[i:i + 16], out=outs[i // 16 % 2])
            return h
        return stack
    f = getattr(T, fn)
    return lambda: f(*args, out=out)


def child(cases: list[str], seconds: float) -> None:
    import ctypes

    from cuvil_aot.runtime import native

    ctypes.c_int.in_dll(ctypes.CDLL("libcuda.so.1"), "fake_pools").value = 1
    for case in cases:
        run = call(case)
        for _ in range(20):
            run()
        before = dict(native.info()["cuda_graph_stats"])
        times: list[float] = []
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            t = time.perf_counter()
            run()
            times.append(time.perf_counter() - t)
        stats = {k: v - before[k] for k, v in native.info()["cuda_graph_stats"].items()}
        print(f"{case:16s} host {statistics.median(times) * 1e6:7.1f} us median, "
              f"{min(times) * 1e6:7.1f} best, {len(times)} calls; graph {stats}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--perf", action="store_true", help="perf record each case's calls")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    opts = parser.parse_args()
    cases = opts.cases.split(",")
    if opts.child:
        child(cases, opts.seconds)
        return
    work = fake_driver.build(Path(tempfile.mkdtemp(prefix="host_fake")))
    env = fake_driver.environment(work, CUVIL_AOT_CUDA_ARCHS="sm_90")
    me = [sys.executable, str(Path(__file__).resolve()), "--child", "--seconds",
          str(opts.seconds)]
    for case in cases:
        if opts.perf:
            data = work / f"{case}.data"
            subprocess.run(["perf", "record", "-q", "-F", "4999", "-o", str(data), *me,
                            "--cases", case], check=True, env=env)
            report = subprocess.run(["perf", "report", "-i", str(data), "--no-children",
                                     "--sort", "symbol", "--stdio"], capture_output=True,
                                    text=True, env=env).stdout
            print("\n".join(line for line in report.splitlines()
                            if "%" in line and not line.startswith("#"))[:3000])
        else:
            subprocess.run([*me, "--cases", case], check=True, env=env)


if __name__ == "__main__":
    main()
