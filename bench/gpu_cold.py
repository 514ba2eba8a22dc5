"""Cold start on the GPU: a fresh process until the first correct softmax(1024 x 1024) result
is back on the host and checked (beside it: until the process has exited), with a prebuilt
cuvil_aot module, against CuPy (first run with an empty kernel cache, then cached), PyTorch
eager and torch.compile; `import numpy` alone as the base.

cuvil_aot needs no array framework: the child puts its input on the device with a few
driver calls (ctypes) and hands it over through __cuda_array_interface__.

    python bench/gpu_cold.py OUTDIR [--compile]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

OURS = r'''
import time; marks = [("start", time.perf_counter())]
import ctypes, importlib.machinery, importlib.util, os, sys
import numpy as np
marks.append(("import numpy", time.perf_counter()))
name, path = sys.argv[1], sys.argv[2]
loader = importlib.machinery.ExtensionFileLoader(name, path)
mod = importlib.util.module_from_spec(importlib.util.spec_from_file_location(name, path,
                                                                             loader=loader))
loader.exec_module(mod)
marks.append(("load the extension", time.perf_counter()))
cu = ctypes.CDLL("libcuda.so.1")
dev, ctx = ctypes.c_int(), ctypes.c_void_p()
assert cu.cuInit(0) == 0 and cu.cuDeviceGet(ctypes.byref(dev), 0) == 0
assert cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev) == 0 and cu.cuCtxSetCurrent(ctx) == 0
marks.append(("cuInit + primary context", time.perf_counter()))

class DevArray:
    def __init__(self, host):
        self.shape, self.ptr = host.shape, ctypes.c_uint64()
        assert cu.cuMemAlloc_v2(ctypes.byref(self.ptr), ctypes.c_size_t(host.nbytes)) == 0
        assert cu.cuMemcpyHtoD_v2(self.ptr, host.ctypes.data_as(ctypes.c_void_p),
                                  ctypes.c_size_t(host.nbytes)) == 0
    @property
    def __cuda_array_interface__(self):
        return {"shape": self.shape, "typestr": "<f4", "data": (self.ptr.value, False),
                "version": 3, "strides": None}

x = np.random.default_rng(0).standard_normal((1024, 1024)).astype(np.float32)
out = np.empty_like(x)
dx, dout = DevArray(x), DevArray(out)
marks.append(("input to the device", time.perf_counter()))
mod.softmax(dx, out=dout)
marks.append(("first call (module load, launch)", time.perf_counter()))
assert cu.cuMemcpyDtoH_v2(out.ctypes.data_as(ctypes.c_void_p), dout.ptr,
                          ctypes.c_size_t(out.nbytes)) == 0
marks.append(("result to the host", time.perf_counter()))
e = np.exp(x - x.max(1, keepdims=True))
assert np.allclose(out, e / e.sum(1, keepdims=True), rtol=1e-5)
marks.append(("check against NumPy", time.perf_counter()))
if os.environ.get("CV_COLD_STEPS"):
    print(" ".join(f"{n}: {1e3 * (t - p):.1f} ms;" for (n, t), (_, p) in zip(marks[1:], marks)),
          file=sys.stderr)
'''

CUPY = r'''
import numpy as np, cupy as cp
x = np.random.default_rng(0).standard_normal((1024, 1024)).astype(np.float32)
d = cp.asarray(x)
e = cp.exp(d - d.max(1, keepdims=True))
out = (e / e.sum(1, keepdims=True)).get()
r = np.exp(x - x.max(1, keepdims=True))
assert np.allclose(out, r / r.sum(1, keepdims=True), rtol=1e-5)
'''

TORCH = r'''
import sys, numpy as np, torch
x = np.random.default_rng(0).standard_normal((1024, 1024)).astype(np.float32)
f = lambda t: torch.softmax(t, -1)
if sys.argv[1] == "compile":
    f = torch.compile(f)
out = f(torch.from_numpy(x).cuda()).cpu().numpy()
e = np.exp(x - x.max(1, keepdims=True))
assert np.allclose(out, e / e.sum(1, keepdims=True), rtol=1e-5)
'''


DONE = "\nimport time as _t; print('CV_RESULT_AT', _t.time(), flush=True)\n"


def run(code: str, *args: str, env: dict[str, str] | None = None,
        repeat: int = 3) -> tuple[float, float]:
    """Median seconds of a fresh `python -c code args`: until its result is checked (the
    child prints the wall clock then), and until the process has exited (CUDA's and the
    frameworks' teardown included)."""
    result, exit_ = [], []
    for _ in range(repeat):
        t0 = time.time()
        done = subprocess.run([sys.executable, "-c", code + DONE, *args], check=True, env=env,
                              stdout=subprocess.PIPE, text=True)
        exit_.append(time.time() - t0)
        stamp = [ln for ln in done.stdout.splitlines() if ln.startswith("CV_RESULT_AT")]
        result.append(float(stamp[-1].split()[1]) - t0)
    return statistics.median(result), statistics.median(exit_)


def main() -> None:
    import os

    ap = argparse.ArgumentParser()
    ap.add_argument("out", type=Path)
    ap.add_argument("--compile", action="store_true")
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT / "tests"))
    from conftest import compile_source
    from gpu_harness import device_arch

    source = (ROOT / "examples" / "models.py").read_text()
    module = compile_source(Path(tempfile.mkdtemp()), source, cuda_archs=(device_arch(),))
    artifact = module.__artifact__
    res = {"python alone": run("pass"), "import numpy": run("import numpy"),
           "cuvil_aot (prebuilt)": run(OURS, artifact.ext_name, str(artifact.path))}
    run(OURS, artifact.ext_name, str(artifact.path), repeat=1,
        env={**os.environ, "CV_COLD_STEPS": "1"})  # where the time goes, on stderr
    cache = {**os.environ, "CUPY_CACHE_DIR": tempfile.mkdtemp()}
    res["cupy (first)"] = run(CUPY, env=cache, repeat=1)
    res["cupy (cached)"] = run(CUPY, env=cache)
    res["torch eager"] = run(TORCH, "eager")
    if args.compile:
        res["torch.compile"] = run(TORCH, "compile", repeat=1)
    for name, (result, exit_) in res.items():
        print(f"cold start {name}: {result:.3f} s to the checked result, {exit_:.3f} s to exit",
              flush=True)
    (args.out / "gpu_cold.json").write_text(json.dumps(
        {name: {"result_s": r, "exit_s": e} for name, (r, e) in res.items()}, indent=2))


if __name__ == "__main__":
    main()
