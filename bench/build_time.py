"""What nvcc adds to a first build: a fresh process's first import of examples/models.py
and of bench/encoder.py (a 6-layer encoder module) through the import hook (empty cache)
with CUVIL_AOT_CUDA_ARCHS none, sm_90, unset (the GPUs this machine's driver reports: CPU
only where there is none) and the wheel's list; the import after editing one function
(CPU only and sm_90: the other functions' GPU images come from the cache); then nvcc's
own phases (`--time`) on that module's generated CUDA source for sm_90
(bench/gpu/gen_models.cuh), and the same source with the tensor-core GEMM entries
emptied, for their share. Needs nvcc; no GPU.

    python bench/build_time.py > bench/build_time.txt
"""

from __future__ import annotations

import csv
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from cuvil_aot.options import DEFAULT_ARCHS

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "bench" / "gpu" / "gen_models.cuh"
TC_ENTRIES = ("tc", "tct", "tc64", "tct64")

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


def without_tc(source: str) -> str:
    """The source with each tensor-core GEMM entry's body replaced by __trap()."""
    names = "|".join(TC_ENTRIES)
    entry = re.compile(r'(extern "C" __global__ void [^\n]*_(?:' + names +
                       r')\(const __grid_constant__ \w+ a_\) \{\n).*?\n\}\n', re.S)
    return entry.sub(lambda m: m.group(1) + "    __trap();\n}\n", source)


def nvcc_phases_ms(source: str) -> tuple[float, dict[str, float]]:
    """Wall seconds of nvcc -fatbin for sm_90, and its phases' ms from --time."""
    work = Path(tempfile.mkdtemp())
    (work / "k.cu").write_text(source)
    cmd = ["nvcc", "-fatbin", "-std=c++17", "-O3", "-gencode=arch=compute_90,code=sm_90",
           f"-I{ROOT / 'native' / 'include'}", "k.cu", "-o", "k.fatbin",
           "--time", "time.csv"]
    t = time.perf_counter()
    subprocess.run(cmd, cwd=work, check=True, capture_output=True)
    wall = time.perf_counter() - t
    rows = list(csv.reader((work / "time.csv").read_text().splitlines()))[1:]
    return wall, {r[1].strip(): float(r[-2]) for r in rows if len(r) > 3}


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
    source = SOURCE.read_text()
    for label, text in (("as generated", source), ("tensor-core entries emptied",
                                                   without_tc(source))):
        wall, phases = nvcc_phases_ms(text)
        parts = ", ".join(f"{k} {v / 1e3:.2f} s" for k, v in phases.items() if v >= 10)
        print(f"nvcc -fatbin sm_90, gen_models.cuh {label}: {wall:.2f} s ({parts})", flush=True)


if __name__ == "__main__":
    main()
