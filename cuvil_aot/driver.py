"""The one way to compile: ``build(module) -> Artifact`` and ``load(artifact)``.

Entry points (the lazy first call, the import hook, the PEP 517 backend, the
CLI) call only these and the cache.
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import json
import sys
import tempfile
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cuvil_aot import knobs as knobs_mod
from cuvil_aot import prekey
from cuvil_aot.codegen.ops_c import Unsupported
from cuvil_aot.codegen.pymodule import generate
from cuvil_aot.errors import CompileError, Diagnostic, SourceSpan
from cuvil_aot.frontend import LoweredModule, lower_module, marked_functions
from cuvil_aot.passes import PassLog, run_pipeline
from cuvil_aot.toolchain import cc as cc_mod
from cuvil_aot.toolchain import nvcc as nvcc_mod

if TYPE_CHECKING:
    from cuvil_aot.codegen.gpu_wrapper import GpuTargets


@dataclass(frozen=True)
class Options:
    """What a build produces."""

    cpu_levels: tuple[int, ...] = ()
    """x86-64 levels to compile kernels for; empty means this machine's level only."""
    dump: frozenset[str] = frozenset()
    """Pass names after which to keep the IR text (see passes.PASS_NAMES)."""
    cc: str = ""
    """The C compiler command; empty means CUVIL_AOT_CC, then Python's own compiler."""
    extra_includes: tuple[str, ...] = ()
    cuda_archs: tuple[str, ...] | None = None
    """GPU targets ("sm_90", "compute_120"); None means CUVIL_AOT_CUDA_ARCHS, else
    toolchain.nvcc.DEFAULT_ARCHS; () builds CPU-only."""


@dataclass
class Artifact:
    """A built extension and what it was built from."""

    path: Path
    ext_name: str
    manifest: dict[str, Any]
    sources: dict[str, str] = field(default_factory=dict)
    passes: PassLog = field(default_factory=PassLog)

    def load(self) -> types.ModuleType:
        """Import the extension and bind the marked functions of its module to it."""
        ext = load(self)
        module = sys.modules.get(self.manifest["module"])
        if module is not None:
            bind(module, ext)
        return ext


def compile_ir(module: types.ModuleType, options: Options) -> tuple[LoweredModule, PassLog,
                                                                      dict[str, list[Any]]]:
    lowered = lower_module(module)
    log = PassLog()
    fused = {name: [(sig, run_pipeline(fn, options.dump, log=log)) for sig, fn in sigs]
             for name, sigs in lowered.functions.items()}
    return lowered, log, fused


def generate_sources(module: types.ModuleType, options: Options,
                     cuda: GpuTargets | None = None) -> tuple[LoweredModule, PassLog, str,
                                                             dict[str, str]]:
    lowered, log, fused = compile_ir(module, options)
    levels = list(options.cpu_levels) or [cc_mod.host_level()]
    draft = _generate(fused, "_cvk_draft", levels, cuda)
    digest = hashlib.sha256("".join(draft.values()).encode()).hexdigest()[:16]
    ext_name = f"_cvk_{digest}"
    return lowered, log, ext_name, _generate(fused, ext_name, levels, cuda)


def _generate(fused: dict[str, list[Any]], ext_name: str, levels: list[int],
              cuda: GpuTargets | None = None) -> dict[str, str]:
    try:
        src = generate(ext_name, fused, levels, cuda)
    except Unsupported as exc:
        span = exc.span if isinstance(exc.span, SourceSpan) else None
        raise CompileError(Diagnostic(span, str(exc))) from None
    sources = {"kernels.h": src.kernels_h, "kernels.c": src.kernels_c, "module.c": src.module_c}
    return sources | ({"kernels.cu": src.kernels_cu} if cuda is not None else {})


def gpu_build(options: Options, knobs: knobs_mod.Knobs) -> nvcc_mod.GpuBuild | None:
    """The nvcc and CUDA architectures of a build; None builds CPU-only."""
    return nvcc_mod.resolve(options.cuda_archs, knobs.cuda_archs, knobs.cuda_home)


def build(module: types.ModuleType, options: Options | None = None,
          out_dir: Path | None = None) -> Artifact:
    """Compile every marked function of ``module`` into one extension in ``out_dir``."""
    options = options or Options()
    knobs = knobs_mod.read()
    compiler = cc_mod.find_compiler(options.cc or knobs.cc)
    gpu = gpu_build(options, knobs)
    lowered, log, ext_name, sources = generate_sources(module, options,
                                                       gpu.targets if gpu else None)
    levels = list(options.cpu_levels) or [cc_mod.host_level()]
    workdir = Path(out_dir) if out_dir is not None else Path(tempfile.mkdtemp(prefix="cuvil_aot-"))
    job = gpu.start(sources["kernels.cu"], workdir) if gpu else None  # alongside the C builds
    cpu_sources = {name: text for name, text in sources.items() if name != "kernels.cu"}
    path = cc_mod.build_extension(compiler, cpu_sources, ext_name, workdir, levels,
                                  options.extra_includes,
                                  (lambda: [job.embed(compiler)]) if job else None)
    manifest = {
        "module": module.__name__,
        "ext_name": ext_name,
        "functions": {name: [str(sig) for sig, _ in sigs]
                      for name, sigs in lowered.functions.items()},
        "source_hash": hashlib.sha256(json.dumps(lowered.sources, sort_keys=True).encode())
        .hexdigest(),
        "compiler": compiler.identity,
        "cflags": list(cc_mod.CFLAGS),
        "cpu_levels": levels,
        "cuda": {"nvcc": gpu.nvcc.identity, "archs": list(gpu.archs)} if gpu else None,
    }
    (workdir / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True))
    return Artifact(path, ext_name, manifest, sources, log)


def load(artifact: Artifact) -> types.ModuleType:
    """Import the built extension (not registered in sys.modules)."""
    return load_extension(artifact.ext_name, artifact.path)


def load_extension(ext_name: str, path: Path) -> types.ModuleType:
    loader = importlib.machinery.ExtensionFileLoader(ext_name, str(path))
    spec = importlib.util.spec_from_file_location(ext_name, str(path), loader=loader)
    if spec is None:
        raise ImportError(f"cannot load {path}")
    ext = importlib.util.module_from_spec(spec)
    loader.exec_module(ext)
    return ext


def bind(module: types.ModuleType, ext: types.ModuleType) -> None:
    """Point every marked function of ``module`` at its compiled code.

    The module's globals are replaced by CompiledFunction objects, whose calls
    go straight to the extension (vectorcall, no Python frame); a Dispatcher
    kept elsewhere forwards to the same object.
    """
    from cuvil_aot.artifacts import bind_extension

    bind_extension(module, ext, marked_functions(module))


def ensure_bound(module: types.ModuleType) -> None:
    """Bind ``module`` once per process, whichever thread asks first: from the cache, or
    compiled into it (the lazy first call). Lives in artifacts.py, which a cache hit can
    import without the compiler; callers may use that one directly."""
    from cuvil_aot import artifacts

    artifacts.ensure_bound(module)


def _cuda_key(options: Options, knobs: knobs_mod.Knobs) -> str:
    gpu = gpu_build(options, knobs)
    return f"{gpu.nvcc.identity} {','.join(gpu.archs)}" if gpu else "none"


def _sha(value: object) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()


def key_components(module: types.ModuleType, options: Options | None = None) -> dict[str, str]:
    """Every input that changes the built extension, by name (see DESIGN.md, Cache)."""
    options = options or Options()
    knobs = knobs_mod.read()
    lowered = lower_module(module)
    compiler = cc_mod.find_compiler(options.cc or knobs.cc)
    levels = list(options.cpu_levels) or [cc_mod.host_level()]
    return {
        "module": module.__name__,
        "source": _sha(lowered.sources),
        "inlined": _sha(lowered.trace.inlined),
        "globals": _sha(lowered.trace.globals_read),
        "signatures": _sha({name: [str(sig) for sig, _ in sigs]
                            for name, sigs in lowered.functions.items()}),
        "cuvil_aot": prekey.package_hash(),
        # The flags of a CUVIL_AOT_CC like "gcc -fsanitize=address" change the code too.
        "cc": " ".join([compiler.identity, *compiler.command[1:]]),
        "cflags": " ".join(cc_mod.CFLAGS),
        "cpu_levels": ",".join(map(str, levels)),
        "cuda": _cuda_key(options, knobs),
        "python_abi": prekey.python_abi(),
        "numpy": prekey.numpy_abi(),
    }

