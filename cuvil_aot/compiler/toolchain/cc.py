"""The C compiler: find it, compile the generated sources for each CPU level, link.

Kernels are compiled once per x86-64 level (``-march=x86-64-vN``), each object
defining its own kernel table; the wrapper picks the best table the running
CPU supports when the module is imported.
"""

from __future__ import annotations

import os
import platform
import shlex
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from cuvil_aot import host
from cuvil_aot.errors import BuildError

CFLAGS = ("-O3", "-fPIC", "-std=gnu11", "-fno-math-errno", "-fno-trapping-math",
          "-fopenmp-simd", "-fvisibility=hidden", "-Wall", "-Wno-unused-variable",
          "-Wno-unused-function", "-Wno-unused-but-set-variable", "-Wno-maybe-uninitialized")
# The GPU launch code (codegen/pymodule.wrapper_sources' module_gpu_*.c) at -O1: that of the
# GPT-2 block's 32 versions (bench/hf_gpt2.py) compiles 2.4x faster than at -O2, 3x than at
# -O3, for about 0.3 us more of a call's 8 us of host time (bench/build_time_versions.md)
LAUNCH_CFLAGS = ("-O1", *CFLAGS[1:])
LEVEL_MARCH = {1: "x86-64", 2: "x86-64-v2", 3: "x86-64-v3", 4: "x86-64-v4"}


@dataclass(frozen=True)
class Compiler:
    command: tuple[str, ...]
    identity: str  # first line of --version, for the cache key

    @property
    def is_x86(self) -> bool:
        return platform.machine().lower() in ("x86_64", "amd64")


def find_compiler(override: str = "") -> Compiler:
    """CUVIL_AOT_CC, else the compiler Python was built with, else cc/gcc/clang on PATH."""
    candidates = [override] if override else []
    cc = host.config_var("CC")
    if cc:
        candidates.append(str(cc))
    candidates += ["cc", "gcc", "clang"]
    for cand in candidates:
        parts = shlex.split(cand)
        if parts and shutil.which(parts[0]):
            version = _version(parts)
            if version:
                return Compiler(tuple(parts), version)
    raise BuildError("no C compiler found: install gcc or clang, or set CUVIL_AOT_CC "
                     f"(tried {', '.join(candidates)})")


def _version(parts: list[str]) -> str:
    try:
        out = subprocess.run([*parts, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return out.stdout.splitlines()[0].strip() if out.returncode == 0 and out.stdout else ""


def include_dirs() -> list[str]:
    """Python, NumPy and cuvil_aot's own headers (installed, or native/ in a checkout)."""
    return [host.paths()["include"], np.get_include(), str(host.header_dir())]


def build_extension(cc: Compiler, sources: dict[str, str], ext_name: str, workdir: Path,
                    levels: list[int], extra_includes: tuple[str, ...] = (),
                    late_objects: Callable[[], list[Path]] | None = None) -> Path:
    """Write sources, compile kernels per level and the wrapper in parallel, link.

    ``late_objects`` gives objects made alongside (the GPU fatbin, see nvcc.py); it is
    called once the C compiles are done, just before linking."""
    for name, text in sources.items():
        (workdir / name).write_text(text)
    incs = [f"-I{d}" for d in (str(workdir), *extra_includes, *include_dirs())]
    jobs: list[tuple[list[str], Path]] = []
    for level in levels:
        obj = workdir / f"kernels_v{level}.o"
        march = [f"-march={LEVEL_MARCH[level]}", "-mtune=generic"] if cc.is_x86 else []
        jobs.append(([*cc.command, *CFLAGS, *march, f"-DCV_TABLE=cv_table_v{level}", *incs,
                      "-c", str(workdir / "kernels.c"), "-o", str(obj)], obj))
    for name in sorted(n for n in sources if n.startswith("module") and n.endswith(".c")):
        obj = workdir / (name[:-2] + ".o")
        flags = LAUNCH_CFLAGS if name.startswith("module_gpu") else CFLAGS
        jobs.append(([*cc.command, *flags, *incs, "-c", str(workdir / name), "-o", str(obj)],
                     obj))
    _run_parallel(jobs, workdir)
    objects = [obj for _, obj in jobs] + (late_objects() if late_objects else [])
    out = workdir / (ext_name + host.ext_suffix())
    run([*cc.command, "-shared", "-o", str(out), *(str(obj) for obj in objects), "-lm"],
        workdir, "linking")
    return out


def child_env(workdir: Path) -> dict[str, str]:
    """The environment of a compiler process: its temporary files go to the build's own
    folder, removed (or swept, after a kill) with it, never left in /tmp."""
    return {**os.environ, "TMPDIR": str(workdir)}


def _run_parallel(jobs: list[tuple[list[str], Path]], workdir: Path) -> None:
    procs = [(cmd, subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                    text=True, env=child_env(workdir))) for cmd, _ in jobs]
    failures = []
    for cmd, proc in procs:
        output, _ = proc.communicate()
        if proc.returncode != 0:
            failures.append(f"$ {shlex.join(cmd)}\n{output}")
    if failures:
        raise BuildError("the C compiler failed (this is a bug in cuvil_aot's code "
                         "generation):\n" + "\n".join(failures))


def run(cmd: list[str], workdir: Path, what: str) -> None:
    """One tool's run in the build's folder; BuildError with its command and output
    (``what`` failed) if it fails."""
    proc = subprocess.run(cmd, capture_output=True, text=True, env=child_env(workdir))
    if proc.returncode != 0:
        raise BuildError(f"{what} failed:\n$ {shlex.join(cmd)}\n{proc.stdout}{proc.stderr}")
