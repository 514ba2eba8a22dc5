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
