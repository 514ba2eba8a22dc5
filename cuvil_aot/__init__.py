"""cuvil_aot: ahead-of-time compilation of NumPy-style inference code.

Mark functions with ``@cuvil_aot.optimize``; cuvil_aot compiles each marked module
into one CPython extension of fused, vectorized kernels.
"""

from cuvil_aot._version import __version__
from cuvil_aot.api import compile_module, optimize
from cuvil_aot.errors import CompileError, CudaError, PromotionWarning, SignatureError
from cuvil_aot.importer import install, uninstall
from cuvil_aot.marks import bf16, bool_, f16, f32, f64, i8, i16, i32, i64, like, u8, u64

__all__ = [
    "__version__",
    "CompileError",
    "CudaError",
    "PromotionWarning",
    "SignatureError",
    "bf16",
    "bool_",
    "compile_module",
    "f16",
    "f32",
    "f64",
    "freeze",
    "i8",
    "i16",
    "i32",
    "i64",
    "info",
    "install",
    "like",
    "optimize",
    "quantize_weights",
    "u8",
    "u64",
    "uninstall",
]


def __getattr__(name: str) -> object:
    """``quantize_weights`` (cuvil_aot.quantize) and ``freeze`` (cuvil_aot.frozen) are
    imported on first use: a cache hit runs no module it does not need
    (tests/test_security.py)."""
    if name == "quantize_weights":
        from cuvil_aot.quantize import quantize_weights

        return quantize_weights
    if name == "freeze":
        from cuvil_aot.frozen import freeze

        return freeze
    raise AttributeError(f"module 'cuvil_aot' has no attribute {name!r}")


def info() -> dict[str, object]:
    """Version, CPU levels, threads, and the kernel table each bound module picked."""
    from cuvil_aot.load.info import info as collect

    return collect()


def _configure_runtime() -> None:
    """Import the native runtime now, so that extensions loaded from several threads
    at once find it initialized, and apply CUVIL_AOT_NUM_THREADS / CUVIL_AOT_CPU_LEVEL /
    CUVIL_AOT_OUTPUT_CACHE_BYTES / CUVIL_AOT_CUDA_ONE / CUVIL_AOT_CUDA_POOL /
    CUVIL_AOT_CUDA_GRAPH / CUVIL_AOT_MODE before any module loads (the runtime reads no
    environment itself). Only knobs that differ from their defaults, the runtime's own, are
    passed: none set, no call. A source tree without the built runtime (cuvil_aot's own
    build) skips it."""
    try:
        from cuvil_aot.runtime import native
    except ImportError:
        return
    from cuvil_aot import knobs

    settings, default = knobs.read(), knobs.Knobs()
    changed = {name: getattr(settings, name)
               for name in ("num_threads", "cpu_level", "output_cache_bytes", "cuda_one",
                            "cuda_pool", "cuda_graph", "cuda_wgmma", "cuda_wgmma_transpose",
                            "cuda_wg_tail", "cuda_wg_nmajor", "cuda_tc_cluster", "cuda_attention",
                            "cuda_attention_split", "cuda_attention_grouped", "mode")
               if getattr(settings, name) != getattr(default, name)}
    if changed:
        native.configure(**changed)


_configure_runtime()
