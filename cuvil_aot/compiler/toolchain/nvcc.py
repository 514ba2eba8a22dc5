"""nvcc: find it, compile a module's CUDA source into one fatbin, embed the bytes.

``GpuBuild.start`` launches nvcc and returns at once, so the fatbin compiles
while the C compiler builds the CPU kernels; ``FatbinJob.embed`` (called by
cc.build_extension just before linking) waits for it and compiles a tiny C file
whose assembly pulls the fatbin in with ``.incbin``: the bytes land in the
extension's read-only data as the symbol ``cv_fatbin``, with no multi-megabyte
C array to parse. Without nvcc a module builds CPU-only and this says so once.
"""

from __future__ import annotations

import functools
import shlex
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from cuvil_aot import host
from cuvil_aot.compiler.gpu_targets import GpuTargets
from cuvil_aot.compiler.toolchain import cc as cc_mod
from cuvil_aot.errors import BuildError, warn_user
from cuvil_aot.options import DEFAULT_ARCHS

NVCC_FLAGS = ("-fatbin", "-std=c++17", "-O3", "--threads", "0", "-Wno-deprecated-gpu-targets")
_warned: set[str] = set()


@dataclass(frozen=True)
class Nvcc:
    path: str
    identity: str
    """The release line of ``nvcc --version``, for the cache key."""
    codes: frozenset[str]
    """What this nvcc can emit (``--list-gpu-code``, ``--list-gpu-arch``): sm_90, compute_90"""


@dataclass(frozen=True)
class GpuBuild:
    """An nvcc and the architectures a build embeds."""

    nvcc: Nvcc
    archs: tuple[str, ...]

    @property
    def targets(self) -> GpuTargets:
        return GpuTargets.of(self.archs)

    def command(self, source: Path, out: Path) -> list[str]:
        include = host.header_dir()
        gencode = [f"-gencode=arch=compute_{a.split('_')[1]},code={a}" for a in self.archs]
        return [self.nvcc.path, *NVCC_FLAGS, *gencode, f"-I{include}", str(source), "-o", str(out)]

    def start(self, source: str, workdir: Path) -> FatbinJob:
        cu, out = workdir / "kernels.cu", workdir / "kernels.fatbin"
        cu.write_text(source)
        cmd = self.command(cu, out)
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                env=cc_mod.child_env(workdir))
        return FatbinJob(cmd, proc, out)


@dataclass
class FatbinJob:
    cmd: list[str]
    proc: subprocess.Popen[str]
    fatbin: Path

    finished: float | None = None
    """When nvcc was seen done (time.perf_counter), for the build's timeline."""

    def wait(self) -> Path:
        output, _ = self.proc.communicate()
        self.finished = time.perf_counter()
        if self.proc.returncode != 0:
            raise BuildError("nvcc failed (this is a bug in cuvil_aot's CUDA code generation):\n"
                             f"$ {shlex.join(self.cmd)}\n{output}")
        return self.fatbin

    def embed(self, compiler: cc_mod.Compiler) -> Path:
        """The object file holding the fatbin as ``cv_fatbin``, once nvcc is done."""
        fatbin = self.wait()
        src, obj = fatbin.with_name("fatbin.c"), fatbin.with_name("fatbin.o")
        src.write_text(
            "/* The module's CUDA fatbin (kernels.fatbin) as cv_fatbin, for cuModuleLoadData. */\n"
            '__asm__(".section .rodata\\n.balign 64\\n.globl cv_fatbin\\n.hidden cv_fatbin\\n"\n'
            f'        "cv_fatbin:\\n.incbin \\"{fatbin.name}\\"\\n.previous\\n");\n')
        cmd = [*compiler.command, *cc_mod.CFLAGS, f"-Wa,-I{fatbin.parent}", "-c", str(src), "-o",
               str(obj)]
        proc = subprocess.run(cmd, capture_output=True, text=True,
                              env=cc_mod.child_env(fatbin.parent))
        if proc.returncode != 0:
            raise BuildError(f"embedding the fatbin failed:\n$ {shlex.join(cmd)}\n"
                             f"{proc.stdout}{proc.stderr}")
        return obj


def candidates(cuda_home: str) -> list[str]:
    """nvcc on PATH, under CUDA_HOME/CUDA_PATH, in the nvidia-cuda-nvcc wheel."""
    found = [shutil.which("nvcc") or ""]
    if cuda_home:
        found.append(str(Path(cuda_home) / "bin" / "nvcc"))
    for entry in sys.path:
        found += sorted(str(p) for p in Path(entry or ".").glob("nvidia/*/bin/nvcc"))
    return [f for f in found if f and Path(f).is_file()]


@functools.lru_cache(maxsize=8)
def probe(path: str) -> Nvcc | None:
    runs = []
    for flag in ("--version", "--list-gpu-code", "--list-gpu-arch"):
        try:
            proc = subprocess.run([path, flag], capture_output=True, text=True, timeout=60)
        except (OSError, subprocess.TimeoutExpired):
            return None
        if proc.returncode != 0:
            return None
        runs.append(proc.stdout)
    lines = runs[0].strip().splitlines()
    return Nvcc(path, lines[-1] if lines else "nvcc", frozenset(" ".join(runs[1:]).split()))


def find_nvcc(cuda_home: str = "") -> Nvcc | None:
    for path in candidates(cuda_home):
        nvcc = probe(path)
        if nvcc is not None:
            return nvcc
    return None


def _once(message: str) -> None:
    if message not in _warned:
        _warned.add(message)
        warn_user(message, RuntimeWarning)


def resolve(archs: tuple[str, ...] | None, cuda_home: str) -> GpuBuild | None:
    """What a build embeds: ``archs`` (Options), else DEFAULT_ARCHS; None for a CPU-only
    build (none asked for, or no usable nvcc)."""
    wanted = archs if archs is not None else DEFAULT_ARCHS
    if not wanted:
        return None
    nvcc = find_nvcc(cuda_home)
    if nvcc is None:
        _once("cuvil_aot: nvcc not found (on PATH, under CUDA_HOME, or from the "
              "nvidia-cuda-nvcc wheel), so modules are built for the CPU only and calls with "
              "GPU arrays raise CudaError. Install the CUDA toolkit to add GPU kernels, or set "
              "CUVIL_AOT_CUDA_ARCHS=none to build CPU-only without this warning.")
        return None
    usable = tuple(a for a in wanted if a in nvcc.codes)
    if usable != tuple(wanted):
        dropped = sorted(set(wanted) - set(usable))
        _once(f"cuvil_aot: {nvcc.identity} cannot build {', '.join(dropped)}: left out")
    return GpuBuild(nvcc, usable) if usable else None
