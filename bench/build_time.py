"""What nvcc adds to a first build: a fresh process's first import of examples/models.py
and of bench/encoder.py (a 6-layer encoder module) through the import hook (empty cache)
with CUVIL_AOT_CUDA_ARCHS none, sm_90, unset (the GPUs this machine's driver reports: CPU
only where there is none) and the wheel's list; the import after editing one function
(CPU only and sm_90: the other functions' GPU images come from the cache). Where a
build's time goes, per function and architecture: `python -m cuvil_aot show MODULE
--timings`. Needs nvcc; no GPU.

    python bench/build_time.py > bench/build_time.txt
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from cuvil_aot.options import DEFAULT_ARCHS

ROOT = Path(__file__).resolve().parent.parent

IMPORT = """
import time, cuvil_aot
cuvil_aot.install()
t = time.perf_counter()
import models
print(time.perf_counter() - t)
"""
MODULES = {"examples/models.py": ROOT / "examples" / "models.py",
           "bench/encoder.py": ROOT / "bench" / "encoder.py"}
EDITS = {  # module -> (function, line, its edit)
    "examples/models.py": [
        ("softmax", "    return e / e.sum(axis=-1, keepdims=True)",
         "    return e / e.sum(axis=-1, keepdims=True) * 0.5"),
        ("ffn_block", "    return x + gelu(h @ w1 + b1) @ w2 + b2",
         "    return x + gelu(h @ w1 + b1) @ w2 + b2 * 0.5")],
    "bench/encoder.py": [
        ("mean_pool", "    return (x * m).sum(axis=1) / np.maximum(m.sum(axis=1), 1e-9)",
         "    return (x * m).sum(axis=1) / np.maximum(m.sum(axis=1), 1e-6)"),
        ("encoder_layer", "    return layer_norm(a + h @ wf.T + bf, g2, b2)",
         "    return layer_norm(a + h @ wf.T + bf * 0.5, g2, b2)")],
}


def first_import_s(module: Path, archs: str | None, work: Path | None = None,
                   text: str | None = None) -> float:
    """Seconds of the first import of ``module`` in a fresh process (with an empty cache,
    or ``work``'s, ``text`` its source)."""
    work = work or Path(tempfile.mkdtemp())
    (work / "models.py").write_text(module.read_text() if text is None else text)
    env = {**os.environ, "CUVIL_AOT_CACHE_DIR": str(work / "cache"),
           "PYTHONPATH": os.pathsep.join([str(ROOT), str(work)])}
    env.pop("CUVIL_AOT_CUDA_ARCHS", None)
    if archs is not None:
        env["CUVIL_AOT_CUDA_ARCHS"] = archs
    out = subprocess.run([sys.executable, "-c", IMPORT], env=env, cwd=work, check=True,
                         capture_output=True, text=True).stdout
    return float(out.split()[-1])


def main() -> None:
    cpu = next((ln.split(":", 1)[1].strip() for ln in Path("/proc/cpuinfo").read_text()
                .splitlines() if ln.startswith("model name")), platform.machine())
    nvcc = subprocess.run(["nvcc", "--version"], capture_output=True, text=True).stdout
    print(f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {cpu}, "
          f"{os.cpu_count()} cores; {nvcc.strip().splitlines()[-1]}")
    wheel = ",".join(DEFAULT_ARCHS)
    for name, module in MODULES.items():
        for label, archs in (("none (CPU only)", "none"), ("sm_90", "sm_90"),
                             ("unset (this machine's GPUs)", None),
                             (f"{wheel} (the wheel's list)", wheel)):
            print(f"first import of {name}, CUVIL_AOT_CUDA_ARCHS={label}: "
                  f"{first_import_s(module, archs):.2f} s", flush=True)
        for archs in ("none", "sm_90"):
            work = Path(tempfile.mkdtemp())
            original = module.read_text()
            first_import_s(module, archs, work)
            for function, line, edit in EDITS[name]:
                assert line in original, (name, line)
                edited = first_import_s(module, archs, work, original.replace(line, edit))
                print(f"import of {name} after editing {function}, CUVIL_AOT_CUDA_ARCHS="
                      f"{archs}, cache warm: {edited:.2f} s", flush=True)


if __name__ == "__main__":
    main()
