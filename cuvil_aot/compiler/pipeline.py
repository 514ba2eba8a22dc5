"""The compiler, stage by stage: ``build(module, options) -> Artifact``.

    lower_module       frontend/: the marked functions' source -> IR, one per signature
    run_pipeline       passes/: PIPELINE (canonicalize, CSE, fusion...) on each function
    generate           codegen/: C kernels per CPU level, the module wrapper, CUDA kernels
    build_extension    toolchain/: cc per level (and nvcc beside it) -> one extension

``key_components`` names every input that changes the result (the cache key). The
compiler reads no environment and knows nothing of caches or loading: the loader
(cuvil_aot/load) calls ``build`` and ``key_components`` on a cache miss, with Options
the entry points filled from the knobs.
"""

from __future__ import annotations

import hashlib
import json
import tempfile
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cuvil_aot import host
from cuvil_aot.compiler.codegen.ops_c import Unsupported
from cuvil_aot.compiler.codegen.pymodule import generate
from cuvil_aot.compiler.frontend import LoweredModule, lower_module
from cuvil_aot.compiler.gpu_targets import GpuTargets
from cuvil_aot.compiler.passes import PassLog, run_pipeline
from cuvil_aot.compiler.timeline import Timeline
from cuvil_aot.compiler.toolchain import cc as cc_mod
from cuvil_aot.compiler.toolchain import nvcc as nvcc_mod
from cuvil_aot.errors import CompileError, Diagnostic, SourceSpan, internal_diagnostic
from cuvil_aot.marks import marked
from cuvil_aot.options import Options

__all__ = ["Artifact", "Options", "build", "compile_ir", "generate_sources", "key_components"]


@dataclass
class Artifact:
    """A built extension and what it was built from."""

    path: Path
    ext_name: str
    manifest: dict[str, Any]
    sources: dict[str, str] = field(default_factory=dict)
    passes: PassLog = field(default_factory=PassLog)


def compile_ir(module: types.ModuleType, options: Options) -> tuple[LoweredModule, PassLog,
                                                                      dict[str, list[Any]]]:
    """Lower and optimize function by function: one the passes fail on is refused (at its
    def line) and left out, like one the frontend refused (``lowered.refused``)."""
    lowered = lower_module(module)
    log = PassLog()
    fused = {}
    for name, sigs in list(lowered.functions.items()):
        try:
            fused[name] = [(sig, run_pipeline(fn, options.dump, log=log)) for sig, fn in sigs]
        except Exception as exc:  # a bug in a pass
            lowered.refuse(name, [_diagnostic(exc, lowered.defs.get(name))])
    return lowered, log, fused


def _diagnostic(exc: Exception, def_span: SourceSpan | None) -> Diagnostic:
    """A codegen refusal at its own span, else at the function's def; any other exception
    of the compiler is an internal error there."""
    if isinstance(exc, Unsupported):
        span = exc.span if isinstance(exc.span, SourceSpan) else def_span
        return Diagnostic(span, str(exc))
    return internal_diagnostic(def_span, exc)


DRAFT = "_cvk_draft"  # the extension's name until its sources name it


def generate_sources(module: types.ModuleType, options: Options,
                     cuda: GpuTargets | None = None, timeline: Timeline | None = None
                     ) -> tuple[LoweredModule, PassLog, str, dict[str, str]]:
    timeline = timeline or Timeline()
    with timeline.stage("frontend and passes"):
        lowered, log, fused = compile_ir(module, options)
    levels = list(options.cpu_levels) or [host.cpu_level()]
    with timeline.stage("code generation"):
        draft = _generate_refusing(lowered, fused, levels, cuda)
        digest = hashlib.sha256("".join(draft.values()).encode()).hexdigest()[:16]
        ext_name = f"_cvk_{digest}"  # named by its sources: the draft's name, once, in module.c
        sources = draft | {"module.c": draft["module.c"].replace(DRAFT, ext_name)}
    return lowered, log, ext_name, sources


def _generate_refusing(lowered: LoweredModule, fused: dict[str, list[Any]], levels: list[int],
                       cuda: GpuTargets | None) -> dict[str, str]:
    """The draft sources; a function codegen fails on is refused and taken out of
    ``fused`` (found by generating each function alone, on a failure only)."""
    try:
        return _generate(fused, DRAFT, levels, cuda)
    except Exception as exc:
        failure = exc
    for name in list(fused):
        try:
            _generate({name: fused[name]}, DRAFT, levels, cuda)
        except Exception as exc:
            lowered.refuse(name, [_diagnostic(exc, lowered.defs.get(name))])
            del fused[name]
    try:
        return _generate(fused, DRAFT, levels, cuda)
    except Exception:  # only together do they fail: a bug no one function shows
        raise CompileError(_diagnostic(failure, None)) from failure


def _generate(fused: dict[str, list[Any]], ext_name: str, levels: list[int],
              cuda: GpuTargets | None = None) -> dict[str, str]:
    src = generate(ext_name, fused, levels, cuda)
    sources = {"kernels.h": src.kernels_h, "kernels.c": src.kernels_c, **src.wrapper}
    return sources | {f"kernels_{unit}.cu": text for unit, text in src.cuda_units.items()}


def cuda_units(sources: dict[str, str]) -> dict[str, str]:
    """The CUDA units among ``sources`` (kernels_f0.cu -> f0)."""
    return {name[len("kernels_"):-len(".cu")]: text for name, text in sources.items()
            if name.endswith(".cu")}


def gpu_build(options: Options) -> nvcc_mod.GpuBuild | None:
    """The nvcc and CUDA architectures of a build; None builds CPU-only."""
    return nvcc_mod.resolve(options.cuda_archs, options.cuda_home)


def build(module: types.ModuleType, options: Options | None = None,
          out_dir: Path | None = None, timeline: Timeline | None = None,
          images: nvcc_mod.ImageCache | None = None) -> Artifact:
    """Compile every marked function of ``module`` into one extension in ``out_dir``;
    ``timeline`` hears each stage as it starts and keeps when it ran; ``images``: GPU
    images of earlier builds (a function's unit unchanged since is not compiled again)."""
    options = options or Options()
    timeline = timeline or Timeline()
    with timeline.stage("finding the compilers"):
        compiler = cc_mod.find_compiler(options.cc)
        gpu = gpu_build(options)
    lowered, log, ext_name, sources = generate_sources(module, options,
                                                       gpu.targets if gpu else None, timeline)
    lowered.warn()
    levels = list(options.cpu_levels) or [host.cpu_level()]
    workdir = Path(out_dir) if out_dir is not None else Path(tempfile.mkdtemp(prefix="cuvil_aot-"))
    labels = {f"f{i}": name for i, name in enumerate(lowered.functions)}
    nvcc_stage = f"nvcc {','.join(gpu.archs)}" if gpu else ""
    nvcc_began = timeline.starting(nvcc_stage) if gpu else 0.0
    units = cuda_units(sources)
    jobs = gpu.start(units, workdir, images, labels) if gpu else None  # beside the C builds

    def fatbins() -> list[Path]:
        assert jobs is not None
        timeline.starting(f"waiting for {nvcc_stage}")
        for span in jobs.wait():
            timeline.record(*span)
        obj = jobs.embed(compiler)
        timeline.record(nvcc_stage, nvcc_began, jobs.finished)
        return [obj]

    cpu_sources = {name: text for name, text in sources.items() if not name.endswith(".cu")}
    try:
        with timeline.stage(f"C compiler (x86-64 levels {','.join(map(str, levels))}) and link"):
            path = cc_mod.build_extension(compiler, cpu_sources, ext_name, workdir, levels,
                                          options.extra_includes, fatbins if jobs else None)
    finally:
        if jobs is not None:
            jobs.stop()
    manifest = {
        "module": module.__name__,
        "ext_name": ext_name,
        "functions": {name: [str(sig) for sig, _ in sigs]
                      for name, sigs in lowered.functions.items()},
        "refused": lowered.rendered_refusals(),
        "source_hash": hashlib.sha256(json.dumps(lowered.sources, sort_keys=True).encode())
        .hexdigest(),
        "compiler": compiler.identity,
        "cflags": list(cc_mod.CFLAGS),
        "cpu_levels": levels,
        "cuda": {"nvcc": gpu.nvcc.identity, "archs": list(gpu.archs),
                 "images": {"compiled": len(jobs.running), "from the cache": len(jobs.cached)}}
        if gpu and jobs else None,
        "timings": timeline.as_list(),
    }
    (workdir / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True))
    return Artifact(path, ext_name, manifest, sources, log)


def _cuda_key(options: Options) -> str:
    gpu = gpu_build(options)
    return f"{gpu.nvcc.identity} {','.join(gpu.archs)}" if gpu else "none"


def _sha(value: object) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()


def key_components(module: types.ModuleType, options: Options | None = None) -> dict[str, str]:
    """Every input that changes the built extension, by name: the full cache key."""
    options = options or Options()
    lowered = lower_module(module)
    compiler = cc_mod.find_compiler(options.cc)
    levels = list(options.cpu_levels) or [host.cpu_level()]
    return {
        "module": module.__name__,
        "source": _sha(lowered.sources),
        "inlined": _sha(lowered.trace.inlined),
        "globals": _sha(lowered.trace.globals_read),
        "signatures": _sha({name: [str(sig) for sig, _ in sigs]
                            for name, sigs in lowered.functions.items()}),
        # @optimize(precision=...): what the matmuls read (passes/precision.py)
        "precision": _sha({name: m.precision for name, m in marked(module).items()}),
        # What a refused function's call says is in the build: a moved error is a miss.
        "refused": _sha(lowered.rendered_refusals()),
        "cuvil_aot": host.package_hash(),
        # The flags of a CUVIL_AOT_CC like "gcc -fsanitize=address" change the code too.
        "cc": " ".join([compiler.identity, *compiler.command[1:]]),
        "cflags": " ".join(cc_mod.CFLAGS),
        "cpu_levels": ",".join(map(str, levels)),
        "cuda": _cuda_key(options),
        "python_abi": host.python_abi(),
        "numpy": host.numpy_abi(),
    }

