"""cuvil_aot: ahead-of-time compilation of NumPy-style inference code.

Mark functions with ``@cuvil_aot.optimize``; cuvil_aot compiles each marked module
into one CPython extension of fused, vectorized kernels.
"""

from cuvil_aot.api import (
    bool_,
    f16,
    f32,
    f64,
    i32,
    i64,
    optimize,
)
from cuvil_aot.errors import CompileError, CudaError, SignatureError
from cuvil_aot.importer import install, uninstall

__version__ = "0.1.0"

__all__ = [
    "CompileError",
    "CudaError",
    "SignatureError",
    "bool_",
    "compile_module",
    "f16",
    "f32",
    "f64",
    "i32",
    "i64",
    "info",
    "install",
    "optimize",
    "uninstall",
]


def compile_module(module, **options):  # type: ignore[no-untyped-def]
    """Compile every marked function of ``module`` into one extension.

    Returns an Artifact; ``artifact.load()`` imports it and binds the functions.
    """
    from cuvil_aot import driver

    return driver.build(module, driver.Options(**options))


def info() -> dict[str, object]:
    """Version, CPU levels, threads, and the kernel table each bound module picked."""
    from cuvil_aot.sysinfo import info as collect

    return collect()


def _configure_runtime() -> None:
    """Import the native runtime now, so that extensions loaded from several threads
    at once find it initialized, and apply CUVIL_AOT_NUM_THREADS / CUVIL_AOT_CPU_LEVEL /
    CUVIL_AOT_OUTPUT_CACHE_BYTES before any module loads. A source tree without the built
    runtime (cuvil_aot's own build) skips it."""
    try:
        from cuvil_aot import _runtime
    except ImportError:
        return
    from cuvil_aot import knobs

    settings = knobs.read()
    if settings.num_threads or settings.cpu_level:
        _runtime.configure(num_threads=settings.num_threads or None,
                           cpu_level=settings.cpu_level or None)
    if settings.output_cache_bytes != knobs.Knobs.output_cache_bytes:
        _runtime.configure(output_cache_bytes=settings.output_cache_bytes)


_configure_runtime()
