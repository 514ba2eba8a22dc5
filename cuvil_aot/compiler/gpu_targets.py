"""What a module's fatbin holds, as the generated code and the runtime compare it with
the device: the architectures asked for (options.py), as numbers."""

from __future__ import annotations

from dataclasses import dataclass

from cuvil_aot.options import ARCH


@dataclass(frozen=True)
class GpuTargets:
    """What the embedded fatbin holds: SASS for these compute capabilities (x10) and PTX
    for ``ptx`` (0: none). The runtime compares them with the device's."""

    sass: tuple[int, ...]
    ptx: int = 0

    @classmethod
    def of(cls, archs: tuple[str, ...]) -> GpuTargets:
        """('sm_90', 'compute_120') -> GpuTargets((90,), 120)."""
        numbers = [(m.group(1), int(m.group(2))) for m in map(ARCH.fullmatch, archs) if m]
        return cls(tuple(n for kind, n in numbers if kind == "sm"),
                   max((n for kind, n in numbers if kind == "compute"), default=0))


# SASS built for the architecture-specific target: sm_90a has wgmma and setmaxnreg (the
# Hopper GEMM, cuda_gemm_wgmma.h), and the driver loads it on exactly the devices sm_90's
# SASS would run on (compute capability 9.0). PTX stays generic (compute_90), so a newer
# GPU can still JIT it; there the wgmma code is inert and never launched.
ARCH_SPECIFIC = {"sm_90": "sm_90a"}


def sass_code(arch: str) -> str:
    """The nvcc code name of SASS target ``arch`` ('sm_90' -> 'sm_90a', else itself)."""
    return ARCH_SPECIFIC.get(arch, arch)
