"""cuvil_aot against NumPy, numexpr, Numba, PyTorch (eager, torch.compile) and ONNX Runtime
on the CPU, with this machine's floors, in one run; writes bench/RESULTS.md.

    pip install -e '.[bench]'   # torch==2.13.0 is the CPU wheel
    python bench/run.py [--cases a,b|GROUP] [--competitors X,Y] [--rounds N] [--output PATH]
                        [--quick]

--cases takes case names and group names: "core" (the default), "transformers" (issue 22's
BERT / GPT-2 cases of bench/transformer_models.py), "all". --quick checks every (case, competitor)
and times it with a few calls only (a smoke test; its numbers mean little).
CUVIL_BENCH_ORT_SPINNING=0 in the environment measures ONNX Runtime with
session.intra_op.allow_spinning = "0".

Every (case, competitor) runs in a fresh process (worker.py) so that its RSS is its own, and
so that no competitor's threads (ONNX Runtime's spinning ones, say) slow another.
The benchmark processes run without OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE: where set
(they are on these machines) they pin OpenBLAS to a slower kernel than its own CPU
detection picks.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
OUT = HERE / "out"
UNSET = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
NEEDS = {"numexpr": "numexpr", "Numba": "numba", "PyTorch eager": "torch",
         "torch.compile": "torch", "ONNX Runtime": "onnxruntime",
         "ONNX Runtime fused": "onnxruntime"}
VMATH_STUB = "#pragma once\n#include <math.h>\n" + "".join(
    f"#define cv_{f}f {f}f\n#define cv_{f} {f}\n"
    for f in ("exp", "expm1", "log", "log1p", "tanh", "sin", "cos"))

sys.path[:0] = [str(ROOT), str(HERE)]
import report  # noqa: E402
from cases import BY_NAME, COMPETITORS, GROUPS  # noqa: E402


def child_env(extra: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in UNSET}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return {**env, **extra}


def vmath_includes() -> tuple[str, ...]:
    """native/ may not ship cuvil_aot/vmath.h yet: then kernels call libm through a stub."""
    if (ROOT / "native/include/cuvil_aot/vmath.h").exists():
        return ()
    stub = OUT / "vstub"
    (stub / "cuvil_aot").mkdir(parents=True, exist_ok=True)
    (stub / "cuvil_aot/vmath.h").write_text(VMATH_STUB)
    return (str(stub),)


def runtime_is_stale() -> bool:
    """Whether native/ changed after cuvil_aot/runtime/native*.so was built (rebuild it first)."""
    built = [p.stat().st_mtime for p in (ROOT / "cuvil_aot/runtime").glob("native*.so")]
    paths = [*(ROOT / "native/src").glob("*.[ch]"), ROOT / "native/include/cuvil_aot/runtime.h"]
    sources = [p.stat().st_mtime for p in paths if p.exists()]
    return not built or max(sources) > max(built)


def build_cuvil(modules: list[str]) -> tuple[dict[str, list[str]], dict]:
    """Build each cuvil_aot module once, for the CPU only; workers load the extensions."""
    os.environ["CUVIL_AOT_CUDA_ARCHS"] = "none"
    from cuvil_aot.compiler import pipeline

    includes = vmath_includes()
    exts, info = {}, {"vmath": "stub (libm)" if includes else "native (vmath.h)",
                      "runtime_stale": runtime_is_stale(), "build_s": {}}
    for name in modules:
        out_dir = OUT / "build" / name
        out_dir.mkdir(parents=True, exist_ok=True)
        t0 = time.perf_counter()
        options = pipeline.Options(extra_includes=includes, cuda_archs=())  # CPU only
        art = pipeline.build(importlib.import_module(name), options, out_dir=out_dir)
        info["build_s"][name] = time.perf_counter() - t0
        info["compiler"], info["cpu_levels"] = art.manifest["compiler"], art.manifest["cpu_levels"]
        exts[name] = [art.ext_name, str(art.path)]
    return exts, info


def run_worker(args: list[str], env: dict[str, str], timeout: float = 900) -> dict:
    try:
        proc = subprocess.run([sys.executable, str(HERE / "worker.py"), *args], env=env,
                              capture_output=True, text=True, timeout=timeout, cwd=ROOT)
    except subprocess.TimeoutExpired:
        return {"ok": False, "error": f"timed out after {timeout:.0f} s"}
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        return {"ok": False, "error": f"worker exit {proc.returncode}: {proc.stderr[-400:]}"}
    return json.loads(lines[-1])


def missing(competitor: str) -> str | None:
    pkg = NEEDS.get(competitor)
    return pkg if pkg and importlib.util.find_spec(pkg) is None else None


def run_all(cases: list[str], competitors: list[str], env: dict[str, str], rounds: int,
            floors: list[dict]) -> dict:
    """Every (case, competitor) once per round, the floors before each round; rounds spread
    each pair over time, so a burst of other work on this shared machine hits one round,
    not the reported one."""
    runs: dict[str, dict[str, list[dict]]] = {
        n: {c: [] for c in competitors if c in BY_NAME[n].competitors} for n in cases}
    for r in range(rounds):
        floors.append(run_worker(["floors"], env))
        for name in cases:
            for comp in runs[name]:
                pkg = missing(comp)
                res = ({"ok": False, "skipped": f"{pkg} is not installed"} if pkg
                       else run_worker(["case", comp, name], env))
                runs[name][comp].append(res)
                print(f"[{r + 1}/{rounds}] {name:15s} {comp:18s} {report.brief(res)}",
                      file=sys.stderr, flush=True)
    return {n: {c: best_round(rs) for c, rs in by_comp.items()} for n, by_comp in runs.items()}


def best_round(results: list[dict]) -> dict:
    """The round with the lowest median; any failed round is the result (never hidden)."""
    failed = [r for r in results if not r.get("ok")]
    if failed:
        return failed[0]
    best = min(results, key=lambda r: r["median_s"])
    return {**best, "round_medians": [r["median_s"] for r in results]}


def select_cases(spec: str) -> list[str]:
    """Case and group names ("all": every group) -> case names, in order, once each."""
    groups = {**GROUPS, "all": list(BY_NAME)}
    names = [n for part in spec.split(",") for n in groups.get(part, [part])]
    unknown = [n for n in names if n not in BY_NAME]
    if unknown:
        sys.exit(f"unknown cases {unknown}; groups: {', '.join(groups)}")
    return list(dict.fromkeys(names))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", default="core")
    ap.add_argument("--competitors", default=",".join(COMPETITORS))
    ap.add_argument("--output", default=str(HERE / "RESULTS.md"))
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    cases = select_cases(args.cases)
    competitors = [c for c in args.competitors.split(",") if c in COMPETITORS]
    OUT.mkdir(exist_ok=True)
    started = time.time()
    exts, cuvil_info = build_cuvil(list(dict.fromkeys(BY_NAME[n].module for n in cases)))
    env = child_env({"CUVIL_BENCH_EXT": json.dumps(exts), "CUVIL_AOT_CUDA_ARCHS": "none",
                     **({"CUVIL_BENCH_QUICK": "1"} if args.quick else {})})
    load = [os.getloadavg()[0]]
    floors: list[dict] = []
    results = run_all(cases, competitors, env, args.rounds, floors)
    floors.append(run_worker(["floors"], env))
    load.append(os.getloadavg()[0])
    run = {"started": started, "seconds": time.time() - started, "argv": sys.argv[1:],
           "rounds": args.rounds, "git": report.git_state(), "versions": report.versions(),
           "unset": {k: os.environ.get(k) for k in UNSET}, "cuvil": cuvil_info,
           "quick": args.quick, "ort_spinning": os.environ.get("CUVIL_BENCH_ORT_SPINNING", ""),
           "load": load, "floors": floors, "results": results}
    (OUT / "results.json").write_text(json.dumps(run, indent=1))
    Path(args.output).write_text(report.render(run))
    print(f"wrote {args.output} in {run['seconds']:.0f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
