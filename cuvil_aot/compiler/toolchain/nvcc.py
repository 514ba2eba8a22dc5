"""nvcc: find it, compile each unit of a module's CUDA code for each architecture, pack
each unit's images into one fatbin, embed the fatbins.

A module's GPU code comes in units, one per marked function (codegen/gpu_plan.py). Each
(unit, architecture) is one nvcc process making a cubin (``sm_XY``) or PTX
(``compute_XY``), as many at once as there are cores, started by ``GpuBuild.start`` so
they run while the C compiler builds the CPU kernels. An image is looked up first in an
``ImageCache`` (the loader's store, keyed by the unit's source, the architecture, nvcc and
cuvil_aot's headers): editing one function recompiles that function's unit only.
``FatbinJobs.embed`` (called by cc.build_extension just before linking) waits for them,
packs each unit's images with ``fatbinary`` (nvcc's own packer, beside it) and compiles a
tiny C file whose assembly pulls each fatbin in with ``.incbin``: the bytes land in the
extension's read-only data as ``cv_fatbin_{unit}``, with no multi-megabyte C array to
parse. Without nvcc a module builds CPU-only and this says so once.
"""

from __future__ import annotations

import functools
import hashlib
import os
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from cuvil_aot import host
from cuvil_aot.compiler.gpu_targets import GpuTargets, sass_code
from cuvil_aot.compiler.toolchain import cc as cc_mod
from cuvil_aot.errors import BuildError, warn_user
from cuvil_aot.options import DEFAULT_ARCHS

NVCC_FLAGS: tuple[str, ...] = ("-std=c++17", "-O3", "-Wno-deprecated-gpu-targets")
_warned: set[str] = set()


class ImageCache(Protocol):
    """Compiled images kept between builds, by key components (load/image_store.py)."""

    def get(self, key: Mapping[str, str]) -> bytes | None: ...

    def put(self, key: Mapping[str, str], data: bytes) -> None: ...


@dataclass(frozen=True)
class Nvcc:
    path: str
    identity: str
    """The release line of ``nvcc --version``, for the cache key."""
    codes: frozenset[str]
    """What this nvcc can emit (``--list-gpu-code``, ``--list-gpu-arch``): sm_90, compute_90"""

    @property
    def fatbinary(self) -> str:
        return str(Path(self.path).with_name("fatbinary"))


@dataclass(frozen=True)
class Image:
    """One unit compiled for one architecture."""

    unit: str
    arch: str
    source: str

    @property
    def ptx(self) -> bool:
        """PTX (``compute_XY``), else SASS (``sm_XY``)."""
        return self.arch.startswith("compute_")

    @property
    def code(self) -> str:
        """What nvcc builds: the arch, or its architecture-specific SASS (gpu_targets)."""
        return self.arch if self.ptx else sass_code(self.arch)

    @property
    def file_name(self) -> str:
        return f"{self.unit}.{self.arch}.{'ptx' if self.ptx else 'cubin'}"

    def key(self, nvcc: Nvcc) -> dict[str, str]:
        """What the image depends on: its source, the headers it includes (cuvil_aot's,
        in the package hash; the toolkit's, in nvcc's identity), the flags."""
        return {"kind": "cuda-image", "arch": self.arch, "code": self.code, "nvcc": nvcc.identity,
                "flags": " ".join(NVCC_FLAGS), "cuvil_aot": host.package_hash(),
                "source": hashlib.sha256(self.source.encode()).hexdigest()}


@dataclass(frozen=True)
class GpuBuild:
    """An nvcc and the architectures a build embeds."""

    nvcc: Nvcc
    archs: tuple[str, ...]

    @property
    def targets(self) -> GpuTargets:
        return GpuTargets.of(self.archs)

    def command(self, image: Image, source: Path, out: Path) -> list[str]:
        number = image.code.split("_")[1]
        kind = ["-ptx", f"-arch=compute_{number}"] if image.ptx else \
            ["-cubin", f"-gencode=arch=compute_{number},code={image.code}"]
        # --split-compile: nvcc optimizes a unit's kernels on two threads (a 6-GEMM encoder
        # layer's unit for sm_90: 15.9 s instead of 25.8 on 2 cores), the same code; more
        # would multiply the threads of builds running at once (16 pytest workers
        # building with --split-compile=16 ran one build past 300 s on 16 cores)
        return [self.nvcc.path, *kind, *NVCC_FLAGS, "--split-compile=2",
                f"-I{host.header_dir()}", str(source), "-o", str(out)]

    def start(self, units: Mapping[str, str], workdir: Path, images: ImageCache | None,
              labels: Mapping[str, str] | None = None) -> FatbinJobs:
        """Every (unit, arch) image: from ``images`` where it has them, else nvcc, the
        largest units first, as many at once as this process may use cores."""
        jobs = FatbinJobs(self, workdir, images, dict(labels or {}))
        for unit, source in sorted(units.items(), key=lambda u: -len(u[1])):
            (workdir / f"kernels_{unit}.cu").write_text(source)
            for arch in self.archs:
                jobs.add(Image(unit, arch, source))
        return jobs


def _cores() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


@dataclass
class FatbinJobs:
    gpu: GpuBuild
    workdir: Path
    images: ImageCache | None
    labels: dict[str, str]
    pool: ThreadPoolExecutor = field(default_factory=lambda: ThreadPoolExecutor(_cores()))
    running: dict[Image, Future[tuple[float, float]]] = field(default_factory=dict)
    cached: list[Image] = field(default_factory=list)
    units: dict[str, list[Image]] = field(default_factory=dict)
    procs: list[subprocess.Popen[str]] = field(default_factory=list)

    finished: float | None = None
    """When the last image was seen done (time.perf_counter), for the build's timeline."""

    def add(self, image: Image) -> None:
        self.units.setdefault(image.unit, []).append(image)
        data = self.images.get(image.key(self.gpu.nvcc)) if self.images else None
        if data is not None:
            (self.workdir / image.file_name).write_bytes(data)
            self.cached.append(image)
        else:
            self.running[image] = self.pool.submit(self._compile, image)

    def _compile(self, image: Image) -> tuple[float, float]:
        began = time.perf_counter()
        cmd = self.gpu.command(image, self.workdir / f"kernels_{image.unit}.cu",
                               self.workdir / image.file_name)
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True, env=cc_mod.child_env(self.workdir))
        self.procs.append(proc)
        output, _ = proc.communicate()
        if proc.returncode != 0:
            raise BuildError("nvcc failed (this is a bug in cuvil_aot's CUDA code generation):"
                             f"\n$ {shlex.join(cmd)}\n{output}")
        return began, time.perf_counter()

    def wait(self) -> list[tuple[str, float, float]]:
        """Each compiled image's (stage, start, end), once all are done; their bytes go
        to the image cache. The first failure raises (the others are stopped)."""
        spans = []
        try:
            for image, future in self.running.items():
                began, ended = future.result()
                label = self.labels.get(image.unit, image.unit)
                spans.append((f"nvcc {label} {image.arch}", began, ended))
                if self.images is not None:
                    self.images.put(image.key(self.gpu.nvcc),
                                    (self.workdir / image.file_name).read_bytes())
        finally:
            self.stop()
        self.finished = time.perf_counter()
        return spans

    def stop(self) -> None:
        self.pool.shutdown(wait=False, cancel_futures=True)
        for proc in self.procs:
            if proc.poll() is None:
                proc.kill()

    def pack(self, unit: str) -> Path:
        """The unit's images as one fatbin (SASS per architecture, PTX)."""
        out = self.workdir / f"{unit}.fatbin"
        cmd = [self.gpu.nvcc.fatbinary, f"--create={out}", "-64"]
        for image in self.units[unit]:
            kind = "ptx" if image.ptx else "elf"
            cmd.append(f"--image3=kind={kind},sm={image.code.split('_')[1]},"
                       f"file={self.workdir / image.file_name}")
        cc_mod.run(cmd, self.workdir, "fatbinary")
        return out

    def embed(self, compiler: cc_mod.Compiler) -> Path:
        """The object file holding each unit's fatbin as ``cv_fatbin_{unit}``."""
        fatbins = {unit: self.pack(unit) for unit in sorted(self.units)}
        src, obj = self.workdir / "fatbin.c", self.workdir / "fatbin.o"
        lines = ["/* Each unit's CUDA fatbin as cv_fatbin_{unit}, for cuModuleLoadData. */"]
        for unit, fatbin in fatbins.items():
            symbol = f"cv_fatbin_{unit}"
            lines.append(f'__asm__(".section .rodata\\n.balign 64\\n.globl {symbol}\\n'
                         f'.hidden {symbol}\\n"\n        "{symbol}:\\n.incbin '
                         f'\\"{fatbin.name}\\"\\n.previous\\n");')
        src.write_text("\n".join(lines) + "\n")
        cmd = [*compiler.command, *cc_mod.CFLAGS, f"-Wa,-I{self.workdir}", "-c", str(src), "-o",
               str(obj)]
        cc_mod.run(cmd, self.workdir, "embedding the fatbins")
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
