"""The loader's one door into the compiler, opened on a cache miss only: the full key,
a build, the GPU toolchain a wheel build would use, and ``compile_module``. Every
import of ``cuvil_aot.compiler`` from the loader happens inside these functions, so a
cache hit never imports the compiler (the cold-start budget)."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import types
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from cuvil_aot.cache import CacheKey
from cuvil_aot.load.image_store import StoreImages
from cuvil_aot.load.progress import Progress
from cuvil_aot.load.settings import BUILD_DIR_PREFIX, Settings
from cuvil_aot.load.stores import open_store
from cuvil_aot.runtime import binding, extension

if TYPE_CHECKING:
    from cuvil_aot.compiler.pipeline import Artifact
    from cuvil_aot.compiler.toolchain.nvcc import GpuBuild


class Built(NamedTuple):
    """A built extension's bytes, its file name and the metadata its cache entry keeps."""

    file_name: str
    data: bytes
    metadata: dict[str, object]


def full_key(module: types.ModuleType, settings: Settings) -> CacheKey:
    """The full cache key (runs the frontend and asks the C compiler its version)."""
    from cuvil_aot.compiler import pipeline

    return CacheKey(pipeline.key_components(module, settings.build_options))


def build_bytes(module: types.ModuleType, settings: Settings) -> Built:
    """Compile ``module`` in a private temp directory and keep only the extension's bytes."""
    from cuvil_aot.compiler import pipeline
    from cuvil_aot.compiler.timeline import Timeline

    folder = Path(tempfile.mkdtemp(prefix=f"{BUILD_DIR_PREFIX}{os.getpid()}-"))
    progress = Progress(module.__name__)
    try:
        images = StoreImages(open_store(settings), module.__name__)
        artifact = pipeline.build(module, settings.build_options, folder, Timeline(progress),
                                  images)
        data = artifact.path.read_bytes()
    finally:
        progress.close()
        shutil.rmtree(folder, ignore_errors=True)
    name = artifact.path.name
    return Built(name, data, {"ext_name": artifact.ext_name, "ext_file": name,
                              "build": artifact.manifest})


def gpu_build(settings: Settings) -> GpuBuild | None:
    """The nvcc and CUDA architectures a build with these settings would use; None: CPU-only."""
    from cuvil_aot.compiler import pipeline

    return pipeline.gpu_build(settings.build_options)


def compile_module(module: types.ModuleType, settings: Settings) -> LoadableArtifact:
    """Compile every marked function of ``module`` into one extension (no cache); the
    refused ones are in the artifact's ``refused``."""
    from cuvil_aot.compiler import pipeline

    artifact = pipeline.build(module, settings.build_options)
    return LoadableArtifact(artifact)


class LoadableArtifact:
    """What ``cuvil_aot.compile_module`` returns: the compiler's artifact (its ``path``,
    ``ext_name``, ``manifest``, ``sources`` and ``passes``), ``refused`` (each function the
    compiler refused -> its diagnostics, rendered) and ``load()``."""

    def __init__(self, artifact: Artifact) -> None:
        self.path, self.ext_name, self.manifest = artifact.path, artifact.ext_name, \
            artifact.manifest
        self.sources, self.passes = artifact.sources, artifact.passes
        self.refused: dict[str, str] = dict(artifact.manifest.get("refused") or {})

    def load(self) -> types.ModuleType:
        """Import the extension and bind the marked functions of its module to it."""
        ext = extension.load(self.ext_name, self.path)
        module = sys.modules.get(str(self.manifest["module"]))
        if module is not None:
            binding.bind(module, ext, refused=self.refused)
        return ext
