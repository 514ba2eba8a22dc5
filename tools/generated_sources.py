"""Write the generated C and CUDA of examples/models.py and cuvil_aot/nn.py into OUTDIR,
for checking that a refactor leaves generated code byte-identical (run it before and
after, then `cmp` the files):

    python tools/generated_sources.py OUTDIR
"""

import importlib
import sys
from pathlib import Path

from cuvil_aot.compiler import pipeline
from cuvil_aot.compiler.gpu_targets import GpuTargets
from cuvil_aot.options import DEFAULT_ARCHS

out = Path(sys.argv[1])
out.mkdir(parents=True, exist_ok=True)
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
for name in ["models", "cuvil_aot.nn"]:
    module = importlib.import_module(name)
    options = pipeline.Options(cpu_levels=(1, 2, 3, 4))
    _, _, ext, sources = pipeline.generate_sources(module, options, GpuTargets.of(DEFAULT_ARCHS))
    for file, text in sources.items():
        (out / f"{name}.{file}").write_text(text)
    print(name, ext, {file: len(text) for file, text in sources.items()})
