"""A module's GPU code in units, one per function, each compiled and cached on its own: an
edit recompiles the edited function's unit only. nvcc is needed, a GPU is not."""

from __future__ import annotations

import textwrap
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pytest
from conftest import load_source

from cuvil_aot.cache import CacheError, CacheKey, CacheWarning
from cuvil_aot.compiler import pipeline
from cuvil_aot.compiler.toolchain import nvcc
from cuvil_aot.load import builder
from cuvil_aot.load.image_store import IMAGE, StoreImages
from cuvil_aot.load.settings import Settings
from cuvil_aot.load.stores import open_shared
from cuvil_aot.runtime import extension

pytestmark = pytest.mark.skipif(nvcc.find_nvcc() is None, reason="nvcc not found")

SOURCE = """
import numpy as np
import cuvil_aot as cv

@cv.optimize
def scale(x: cv.f32["N"]):
    return x * {factor}

@cv.optimize
def softmax(x: cv.f32["B", "N"]):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)
"""


class DictImages:
    """An image cache in a dict, counting what the build asked of it."""

    def __init__(self) -> None:
        self.data: dict[str, bytes] = {}
        self.puts = 0

    def get(self, key: Mapping[str, str]) -> bytes | None:
        return self.data.get(CacheKey(key).digest)

    def put(self, key: Mapping[str, str], data: bytes) -> None:
        self.puts += 1
        self.data[CacheKey(key).digest] = data


def _build(tmp_path: Path, name: str, factor: float, images: object,
           archs: tuple[str, ...] = ("sm_90",)) -> pipeline.Artifact:
    folder = tmp_path / name
    folder.mkdir()
    module = load_source(folder, SOURCE.format(factor=factor), name="units_mod")
    (folder / "build").mkdir()
    return pipeline.build(module, pipeline.Options(cuda_archs=archs), folder / "build",
                          images=images)  # type: ignore[arg-type]


def _images(artifact: pipeline.Artifact) -> dict[str, int]:
    return dict(artifact.manifest["cuda"]["images"])


def test_an_edit_recompiles_only_the_edited_functions_unit(tmp_path: Path) -> None:
    images = DictImages()
    first = _build(tmp_path, "first", 2.0, images)
    assert _images(first) == {"compiled": 2, "from the cache": 0}
    assert images.puts == 2
    again = _build(tmp_path, "again", 2.0, images)
    assert _images(again) == {"compiled": 0, "from the cache": 2}
    edited = _build(tmp_path, "edited", 3.0, images)
    assert _images(edited) == {"compiled": 1, "from the cache": 1}
    stages = [t["stage"] for t in edited.manifest["timings"]]
    assert "nvcc scale sm_90" in stages and not any("softmax" in s for s in stages)
    ext = extension.load(edited.ext_name, edited.path)  # the CPU half runs the edit
    x = np.random.default_rng(1).standard_normal(37).astype(np.float32)
    np.testing.assert_allclose(ext.scale(x), x.astype(np.float64) * 3.0, rtol=1e-6)


def test_one_more_architecture_reuses_the_others(tmp_path: Path) -> None:
    images = DictImages()
    _build(tmp_path, "one", 2.0, images)
    both = _build(tmp_path, "two", 2.0, images, ("sm_80", "sm_90"))
    assert _images(both) == {"compiled": 2, "from the cache": 2}


def test_units_are_their_own_translation_units(tmp_path: Path) -> None:
    artifact = _build(tmp_path, "b", 2.0, None)
    units = pipeline.cuda_units(artifact.sources)
    assert sorted(units) == ["f0", "f1"]
    assert "f1_" not in units["f0"] and "f0_" not in units["f1"]
    parts = {n: t for n, t in artifact.sources.items() if n.startswith("module_gpu_")}
    assert sorted(parts) == ["module_gpu_f0.c", "module_gpu_f1.c"]  # the launch code too
    assert "cv_fatbin_f0" in parts["module_gpu_f0.c"] and "f1_" not in parts["module_gpu_f0.c"]
    assert "cv_fatbin_f1" in parts["module_gpu_f1.c"] and "f0_" not in parts["module_gpu_f1.c"]
    assert "cv_fatbin" not in artifact.sources["module.c"]


def test_the_store_keeps_images_verified(tmp_path: Path) -> None:
    """Images live in the store as entries: checked on every lookup like an extension,
    a damaged one is set aside with a warning and compiled again."""
    settings = Settings(cache_dir=tmp_path / "cache", cuda_archs="sm_90")
    module = load_source(tmp_path, SOURCE.format(factor=2.0), name="units_store")
    built = builder.build_bytes(module, settings)
    assert built.metadata["build"]["cuda"]["images"] == {"compiled": 2, "from the cache": 0}
    again = builder.build_bytes(module, settings)
    assert again.metadata["build"]["cuda"]["images"] == {"compiled": 0, "from the cache": 2}
    store = open_shared(settings)
    damaged = [e for e in store.entries() if IMAGE in e.manifest.files][0]
    path = damaged.file(IMAGE)
    path.chmod(0o600)
    path.write_bytes(b"\0" + path.read_bytes()[1:])
    with pytest.warns(CacheWarning):
        third = builder.build_bytes(module, settings)
    assert third.metadata["build"]["cuda"]["images"] == {"compiled": 1, "from the cache": 1}


def test_a_failing_store_is_only_a_slower_build(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    settings = Settings(cache_dir=tmp_path / "cache", cuda_archs="sm_90")
    images = StoreImages(open_shared(settings), "units_mod")
    key = {"kind": "cuda-image", "source": "x"}
    assert images.get(key) is None
    images.put(key, b"abc")
    assert images.get(key) == b"abc"

    def fail(*args: object) -> None:
        raise CacheError("disk full")

    monkeypatch.setattr(images.store, "publish", fail)  # puts are skipped
    monkeypatch.setattr(images.store, "lookup", fail)  # gets are misses
    images.put({"kind": "cuda-image", "source": "y"}, b"def")
    assert images.get(key) is None


def test_a_failed_compile_caches_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                         ) -> None:
    images = DictImages()
    broken = textwrap.dedent("""
        #error this unit does not compile
    """)
    monkeypatch.setattr(pipeline, "cuda_units", lambda sources: {"f0": broken, "f1": broken})
    with pytest.raises(Exception, match="nvcc failed"):
        _build(tmp_path, "broken", 2.0, images)
    assert images.puts == 0
