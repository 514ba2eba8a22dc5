"""What ``cuda = auto | required | off`` means for one build (decided in the worker).

A fatbin needs nvcc: on PATH, under CUDA_HOME/CUDA_PATH, or from the
``nvidia-cuda-nvcc`` wheel (list it in ``[build-system] requires``); see
``toolchain/nvcc.py``. No GPU is needed to build.
"""

from __future__ import annotations


class CudaRequired(RuntimeError):
    """``cuda = "required"`` and no fatbin can be built here."""


def plan(mode: str, archs: tuple[str, ...]) -> tuple[tuple[str, ...], str]:
    """(``Options.cuda_archs`` for the build, what the wheel holds for GPUs and why: said
    once and kept in the build manifest)."""
    if mode == "off" or not archs:
        return (), "CPU-only (cuda = \"off\", or no cuda-archs)"
    from cuvil_aot import knobs
    from cuvil_aot.load import builder
    from cuvil_aot.load.settings import Settings
    from cuvil_aot.options import Options

    found = builder.gpu_build(Settings.from_knobs(knobs.read(), Options(cuda_archs=archs)))
    if found is None:
        reason = "no nvcc that can build " + ", ".join(archs) + " (PATH, CUDA_HOME, the " \
                 "nvidia-cuda-nvcc wheel)"
        if mode == "required":
            raise CudaRequired(f"cuda = \"required\", but there is {reason}")
        return (), f"CPU-only: {reason} (cuda = \"auto\")"
    return found.archs, f"fatbin for {', '.join(found.archs)} ({found.nvcc.identity})"
