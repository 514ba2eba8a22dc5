"""Writes gen_models.cuh: the CUDA source cuvil_aot generates for examples/models.py (sm_90),
which lstm_probe.cu and resnet_probe.cu include. Run after a codegen change:

    python bench/gpu/gen_models.py
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
from conftest import load_source  # noqa: E402

from cuvil_aot.compiler import pipeline  # noqa: E402
from cuvil_aot.compiler.codegen.gpu_wrapper import GpuTargets  # noqa: E402


def main() -> None:
    module = load_source(Path(tempfile.mkdtemp()), (ROOT / "examples" / "models.py").read_text())
    files = pipeline.generate_sources(module, pipeline.Options(), GpuTargets((90,), 90))[3]
    units = "".join(text for name, text in sorted(files.items()) if name.endswith(".cu"))
    (Path(__file__).parent / "gen_models.cuh").write_text(units)


if __name__ == "__main__":
    main()
