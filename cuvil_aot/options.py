"""What a build is asked to produce, shared by the entry points, the loader and the compiler:
the Options, and the one list and spelling of CUDA architectures ("sm_90", "sm_90a",
"compute_120")."""

from __future__ import annotations

import re
from dataclasses import dataclass

DEFAULT_ARCHS = ("sm_75", "sm_80", "sm_86", "sm_89", "sm_90", "sm_100", "sm_120", "compute_120")
"""SASS for every architecture since Turing, and PTX for the newest (later GPUs JIT it)."""
ARCH = re.compile(r"(sm|compute)_(\d+)[a-z]?")


@dataclass(frozen=True)
class Options:
    """What a build produces."""

    cpu_levels: tuple[int, ...] = ()
    """x86-64 levels to compile kernels for; empty means this machine's level only."""
    dump: frozenset[str] = frozenset()
    """Pass names after which to keep the IR text (see passes.PASS_NAMES)."""
    cc: str = ""
    """The C compiler command; empty means the one Python was built with, else cc/gcc/clang."""
    extra_includes: tuple[str, ...] = ()
    cuda_archs: tuple[str, ...] | None = None
    """GPU targets ("sm_90", "compute_120"); None means DEFAULT_ARCHS;
    () builds CPU-only."""
    cuda_home: str = ""
    """A CUDA toolkit whose bin/nvcc builds the GPU kernels (before PATH's)."""


def bad_archs(archs: tuple[str, ...] | list[str]) -> list[str]:
    """The names in ``archs`` that are not CUDA architectures."""
    return [a for a in archs if not ARCH.fullmatch(a)]


def parse_archs(spec: str) -> tuple[str, ...]:
    """'sm_90,compute_120' -> ('sm_90', 'compute_120'); 'none' -> ()."""
    items = [a.strip() for a in spec.replace(";", ",").split(",") if a.strip()]
    if items == ["none"]:
        return ()
    bad = bad_archs(items)
    if bad:
        raise ValueError(f"CUDA architectures {bad}: expected sm_XY or compute_XY (e.g. sm_90)")
    return tuple(items)
