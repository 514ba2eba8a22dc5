"""The build, show, run and hook commands of ``python -m cuvil_aot``."""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import ModuleType
from typing import TextIO

from cuvil_aot import host, importer, knobs, marks
from cuvil_aot.cache import CacheError
from cuvil_aot.cli import targets
from cuvil_aot.errors import BuildError, CompileError, internal_diagnostic
from cuvil_aot.load import artifacts, prebuilt
from cuvil_aot.options import parse_archs


def settings(**changes: object) -> artifacts.Settings:
    return artifacts.Settings.from_knobs(knobs.read())._replace(**changes)  # type: ignore[arg-type]


def load_targets(names: list[str], err: TextIO) -> list[ModuleType] | None:
    """Import every target without the hook (nothing is built by importing); None on error."""
    importer.uninstall()
    modules: list[ModuleType] = []
    for name in names:
        try:
            modules += targets.resolve(name)
        except (targets.TargetError, SyntaxError) as exc:
            print(f"error: {exc}", file=err)
            return None
        except CompileError as exc:
            print(f"error in {name}:{exc}", file=err)
            return None
    return list({m.__name__: m for m in modules}.values())


# --- build ------------------------------------------------------------------------------


class Progress:
    """A bar on a terminal, one plain line per module otherwise."""

    def __init__(self, total: int, out: TextIO) -> None:
        self.total, self.done, self.out = total, 0, out
        self.tty = out.isatty()
        self._lock = threading.Lock()

    def step(self, line: str) -> None:
        with self._lock:
            self.done += 1
            if not self.tty:
                print(f"[{self.done}/{self.total}] {line}", file=self.out, flush=True)
                return
            columns = shutil.get_terminal_size().columns - 1
            filled = 30 * self.done // self.total
            bar = "#" * filled + "-" * (30 - filled)
            text = f"[{bar}] {self.done}/{self.total} {line}"[:columns]
            end = "\n" if self.done == self.total else ""
            print("\r" + text.ljust(columns), end=end, file=self.out, flush=True)


def _build_one(module: ModuleType, config: artifacts.Settings, inplace: bool) -> str:
    if inplace:
        path, outcome = artifacts.build_next_to(module, config)
    else:
        outcome = artifacts.get_extension(module, config)[1]
        artifacts.check_refused(outcome)  # the good functions are cached; still a failure
    line = f"{module.__name__}: {outcome.how} in {outcome.seconds:.2f} s"
    if not inplace:
        return line
    pre = prebuilt.read(path)
    extension = path.with_name(pre.file) if pre is not None else "?"
    return f"{line}, wrote {extension} and its manifest {path.name}"


def cmd_build(args: argparse.Namespace) -> int:
    modules = load_targets(args.targets, sys.stderr)
    if modules is None:
        return 1
    modules = [m for m in modules if marks.marked(m)]
    if not modules:
        print("nothing to build: no marked functions in the targets", file=sys.stderr)
        return 1
    config = settings(mode="import", use_prebuilt=False)
    if args.cuda_archs is not None:  # else CUVIL_AOT_CUDA_ARCHS, else this machine's GPUs
        try:
            parse_archs(args.cuda_archs)
        except ValueError as exc:
            print(f"error: --cuda-archs: {exc}", file=sys.stderr)
            return 2
        config = config._replace(cuda_archs=args.cuda_archs)
    progress = Progress(len(modules), sys.stderr)
    failures: list[str] = []

    def one(module: ModuleType) -> None:
        try:
            progress.step(_build_one(module, config, args.inplace))
        except (CompileError, BuildError, ImportError, OSError, CacheError) as exc:
            failures.append(f"error: {module.__name__}: {exc}")
            progress.step(f"{module.__name__}: FAILED")
        except Exception as exc:  # a crash of cuvil_aot: report it, build the other modules
            failures.append(f"error: {module.__name__}: {crash(exc)}")
            progress.step(f"{module.__name__}: FAILED")

    with ThreadPoolExecutor(max(1, args.jobs)) as pool:
        list(pool.map(one, modules))
    for failure in failures:
        print(failure, file=sys.stderr)
    return 1 if failures else 0


def crash(exc: BaseException) -> str:
    """An exception no stage turned into a user error, worded as the bug it is (with
    where in cuvil_aot it was raised, for the report)."""
    return internal_diagnostic(None, exc).message


# --- show ---------------------------------------------------------------------------------


def cmd_show(args: argparse.Namespace) -> int:
    from cuvil_aot.compiler import pipeline
    from cuvil_aot.compiler.frontend import lower_module
    from cuvil_aot.compiler.passes import PASS_NAMES, PassLog, run_pipeline

    target, function = targets.split_function(args.target)
    modules = load_targets([target], sys.stderr)
    if modules is None:
        return 1
    if args.timings:
        return _show_timings(modules)
    status = 0
    for module in modules:
        lowered = lower_module(module)
        for name, diags in lowered.refused.items():  # the others are still shown
            if function in (None, name):
                print(f"error in {module.__name__}:{CompileError(diags)}", file=sys.stderr)
                status = 1
        if function in lowered.refused:
            continue
        names = [function] if function else list(lowered.functions)
        for name in names:
            if name not in lowered.functions:
                print(f"error: {module.__name__} has no marked function {name!r} "
                      f"(it has: {', '.join(lowered.functions)})", file=sys.stderr)
                return 1
            for sig, fn in lowered.functions[name]:
                # One PassLog per signature: pipeline.compile_ir shares one across functions.
                log = PassLog()
                fused = run_pipeline(fn, frozenset(PASS_NAMES), log=log)
                print(f"=== {module.__name__}.{name} ({sig}) ===")
                for pass_name in PASS_NAMES:
                    print(f"--- after {pass_name} ---\n{log.dumps[pass_name]}")
                print(f"--- fusion: {len(fused.groups)} kernel(s); refused fusions ---")
                print("\n".join(f"  {r}" for r in fused.refused) or "  (none)")
        if not args.no_c:
            options = artifacts.Settings.from_knobs(knobs.read()).build_options
            gpu = pipeline.gpu_build(options)  # None: CPU only (no nvcc, or none asked)
            cuda = gpu.targets if gpu is not None else None
            shown = _only(module, function) if function and not args.module_c else module
            ext_name, sources = pipeline.generate_sources(shown, options, cuda)[2:]
            what = f"{module.__name__}:{function}" if shown is not module else module.__name__
            for file, text in sources.items():
                print(f"=== {what}: generated {file} (extension {ext_name}) ===")
                print(text)
    return status


def _show_timings(modules: list[ModuleType]) -> int:
    """Build each module in a scratch folder with this process's settings and print its
    timeline: when each stage started and how long it took (nvcc runs beside the C)."""
    import tempfile

    from cuvil_aot.compiler import pipeline
    from cuvil_aot.compiler.timeline import Timeline, table

    options = artifacts.Settings.from_knobs(knobs.read()).build_options
    for module in modules:
        timeline = Timeline()
        with tempfile.TemporaryDirectory(prefix="cuvil_aot-timings-") as folder:
            pipeline.build(module, options, Path(folder), timeline)
        total = max((t["start"] + t["seconds"] for t in timeline.as_list()), default=0.0)
        print(f"=== {module.__name__}: built in {total:.2f} s ===")
        print(table(timeline.as_list()))
    return 0


def _only(module: ModuleType, name: str) -> ModuleType:
    """A view of ``module`` whose one marked function is ``name``: its generated code
    alone (helpers and globals are read from the real module, as in any build)."""
    view = ModuleType(module.__name__)
    others = set(marks.marked(module)) - {name}
    view.__dict__.update({k: v for k, v in vars(module).items() if k not in others})
    return view


# --- run ------------------------------------------------------------------------------------


def cmd_run(args: argparse.Namespace) -> int:
    import runpy

    importer.install()
    if args.module:
        sys.argv = [args.module, *args.args]
        runpy.run_module(args.module, run_name="__main__", alter_sys=True)
        return 0
    script = Path(args.script)
    sys.argv = [str(script), *args.args]
    sys.path.insert(0, str(script.resolve().parent))  # as 'python script.py' would
    runpy.run_path(str(script), run_name="__main__")
    return 0


# --- hook -----------------------------------------------------------------------------------

PTH = "cuvil_aot_hook.pth"


def _site_dir(user: bool) -> Path:
    if user:
        import site

        return Path(site.getusersitepackages())
    return Path(host.paths()["purelib"])


def cmd_hook(args: argparse.Namespace) -> int:
    import site

    if args.user and args.action == "enable" and not site.ENABLE_USER_SITE:
        print("error: this Python does not read user site-packages (a virtual environment, "
              "or python -s): a .pth there would never run. Run 'python -m cuvil_aot hook "
              "enable' without --user to enable it in this environment.", file=sys.stderr)
        return 1
    target = _site_dir(args.user) / PTH
    if args.action == "enable":
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(Path(__file__).resolve().parent.parent / PTH, target)
        print(f"wrote {target}; set CUVIL_AOT_HOOK=1 to install the hook at startup")
    elif args.action == "disable":
        target.unlink(missing_ok=True)
        print(f"removed {target}")
    else:
        state = "present" if target.exists() else "absent"
        knob = os.environ.get("CUVIL_AOT_HOOK", "")
        print(f"{target}: {state}; CUVIL_AOT_HOOK={knob!r}; hook installed in this process: "
              f"{any(isinstance(f, importer.CuvilFinder) for f in sys.meta_path)}")
    return 0
