"""RESULTS.md from one run's measurements (run.py)."""

from __future__ import annotations

import datetime
import importlib.metadata
import math
import platform
import re
import subprocess
from pathlib import Path

import report_transformers
from cases import BY_NAME, OURS, Case

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("numpy", "numexpr", "numba", "llvmlite", "scipy", "torch", "onnx", "onnxruntime",
            "threadpoolctl")
UNTRACED = {"Numba", "PyTorch eager", "torch.compile"}
"""their arrays come from allocators tracemalloc does not see"""
MIB = 1 << 20
DISTURBED = 2.0
"""a median this many times the best sample is marked † (other work preempted it)"""


# --- formatting ---------------------------------------------------------------------


def us(seconds: float) -> str:
    v = seconds * 1e6
    return f"{v:.2f}" if v < 10 else f"{v:.1f}" if v < 100 else f"{v:,.0f}"


def mib(n: int) -> str:
    if n < 1024:
        return f"{n} B"
    return f"{n / MIB:,.1f} MiB" if n >= MIB / 10 else f"{n / 1024:.0f} KiB"


def brief(res: dict) -> str:
    if res.get("skipped"):
        return f"skipped: {res['skipped']}"
    if not res.get("ok"):
        return f"FAILED: {res.get('error', '?')[:200]}"
    return f"{us(res['median_s'])} µs (best {us(res['min_s'])}, n={res['samples']}x{res['inner']})"


def table(header: list[str], rows: list[list[str]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return out + ["| " + " | ".join(r) + " |" for r in rows]


# --- the machine --------------------------------------------------------------------


def lscpu() -> dict[str, str]:
    text = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    return dict(re.findall(r"^([^:\n]+):\s+(.*)$", text, re.M))


def l3_bytes(cpu: dict[str, str]) -> int:
    m = re.match(r"([\d.]+)\s*([KMG])iB", cpu.get("L3 cache", ""))
    return int(float(m.group(1)) * {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}[m.group(2)]) \
        if m else 32 * MIB


def versions() -> list[str]:
    out = [f"Python {platform.python_version()}"]
    for pkg in PACKAGES:
        try:
            out.append(f"{pkg} {importlib.metadata.version(pkg)}")
        except importlib.metadata.PackageNotFoundError:
            out.append(f"{pkg} (not installed)")
    return out


def git_state() -> str:
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True).stdout
    head = git("rev-parse", "--short", "HEAD").strip()
    dirty = git("status", "--porcelain", "--", "cuvil_aot", "native").strip()
    return head + (" (cuvil_aot/ or native/ modified in the work tree)" if dirty else "")


# --- floors -------------------------------------------------------------------------


def floor_of(case: Case, fl: dict, l3: int) -> tuple[float, str]:
    """Seconds no implementation can beat on this machine, and how it was derived."""
    if case.group == "transformers":
        t_gemm, t_w, why = report_transformers.floors(case, fl, l3)
        return max(t_gemm, t_w), why
    if case.name == "overhead":
        return fl["np_add_s"], "one `np.add` on 1-element arrays"
    in_l3 = case.io_bytes <= l3
    bw = fl["l3_bw"] if in_l3 else fl["copy_bw"]
    t_bytes = case.io_bytes / bw
    why = (f"{case.io_bytes / MIB:.1f} MiB in+out at {bw / 1e9:.0f} GB/s "
           f"({'L3 stream' if in_l3 else 'copy'}) = {us(t_bytes)} µs")
    if not case.flops:
        return t_bytes, why
    t_flops = case.flops / fl["sgemm_flops"]
    why = (f"max({case.flops / 1e6:,.1f} MFLOP at {fl['sgemm_flops'] / 1e9:.0f} GFLOP/s "
           f"= {us(t_flops)} µs, {why})")
    return max(t_flops, t_bytes), why


RATES = ("copy_bw", "copy_fresh_bw", "l3_bw", "sgemm_flops", "fma_flops")


def best_floors(floors: list[dict]) -> dict:
    """The machine's best in this run: other work on it only ever slows a floor down."""
    ok = [f for f in floors if "copy_bw" in f]
    best = {k: max(f[k] for f in ok if k in f) for k in RATES if any(k in f for f in ok)}
    return {**ok[0], **best, "np_add_s": min(f["np_add_s"] for f in ok)}


def floors_section(floors: list[dict]) -> list[str]:
    rows = []
    names = [("copy_bw", "copy bandwidth: `np.copyto` 64 MiB → existing 64 MiB, read+write bytes",
              1e9, "GB/s"),
             ("copy_fresh_bw", "same into a fresh array (`src.copy()`, page faults), for reference",
              1e9, "GB/s"),
             ("l3_bw", "L3 weight streaming: `v @ W`, W = the LSTM's [wx; wh] (1024×2048 f32, "
              "8 MiB, warm in L3), OpenBLAS SGEMV on all cores", 1e9, "GB/s"),
             ("sgemm_flops", "SGEMM: NumPy `a @ b`, 4096×1024×4096 f32", 1e9, "GFLOP/s"),
             ("fma_flops", "FMA peak: every CPU issuing independent 512-bit float32 FMAs "
              "(bench/fma_peak.c)", 1e9, "GFLOP/s"),
             ("np_add_s", "one `np.add` on 1-element float32 arrays", 1e-6, "µs")]
    best = best_floors(floors)
    for key, what, div, unit in names:
        digits = 2 if unit == "µs" else 1
        vals = [f"{f[key] / div:,.{digits}f}" if key in f else "?" for f in [best, *floors]]
        rows.append([what, f"**{vals[0]} {unit}**", ", ".join(vals[1:])])
    return table(["floor (best of several samples)", "used (the best)",
                  "before each round, at the end"], rows)


# --- cases --------------------------------------------------------------------------


def _ok(res: dict) -> bool:
    return bool(res.get("ok"))


def case_section(case: Case, results: dict[str, dict], fl: dict, l3: int) -> list[str]:
    floor_s, why = floor_of(case, fl, l3)
    np_s = results.get("NumPy", {}).get("median_s")
    anchors = {c: r["median_s"] for c, r in results.items() if c not in OURS and _ok(r)}
    best = min(anchors.values()) if anchors else None
    out_bytes = sum(4 * math.prod(s) for s in case.outputs)
    lines = [f"### {case.title}", "",
             f"Floor: {us(floor_s)} µs = {why}. Outputs: {mib(out_bytes)}. "
             f"Target: {case.target}.", ""] + ([case.note, ""] if case.note else [])
    rows = []
    for comp, res in results.items():
        if not _ok(res):
            rows.append([comp, brief(res)] + [""] * 8)
            continue
        t = res["median_s"]
        traced = "—" if comp in UNTRACED else mib(res["traced_bytes"])
        noisy = " †" if t > DISTURBED * res["min_s"] else ""
        rows.append([f"**{comp}**" if comp == "cuvil_aot" else comp, us(t) + noisy,
                     us(res["min_s"]),
                     " / ".join(us(m) for m in res.get("round_medians", [])),
                     f"{t / np_s:.2f}" if np_s else "", f"{t / best:.2f}" if best else "",
                     f"{t / floor_s:.2f}", traced, mib(res["rss_bytes"]), f"{res['max_err']:.1e}"])
    lines += table(["competitor", "median µs", "best µs", "rounds µs", "× NumPy", "× best anchor",
                    "× floor", "traced peak", "RSS Δ", "max err (rel.)"], rows)
    return lines + [""]


def summary_row(case: Case, results: dict[str, dict], fl: dict, l3: int) -> list[str]:
    """Medians, and after a slash the same from each competitor's least disturbed sample."""
    floor_s, _ = floor_of(case, fl, l3)
    ok = {c: r for c, r in results.items() if _ok(r)}
    cv, np_res = ok.get("cuvil_aot"), ok.get("NumPy")
    np_text = f"{us(np_res['median_s'])} / {us(np_res['min_s'])}" if np_res else ""
    if cv is None:
        return [case.title, brief(results.get("cuvil_aot", {})), np_text, "", us(floor_s), "",
                case.target, "", ""]
    cells = []
    for key in ("median_s", "min_s"):
        anchors = {c: r[key] for c, r in ok.items() if c not in OURS}
        t = cv[key]
        cells.append((t, anchors, _target_met(case, t, floor_s, anchors),
                      all(t < v for v in anchors.values())))
    anchors = cells[0][1]
    name = min(anchors, key=anchors.get) if anchors else ""
    best = f"{name} {us(anchors[name])} / {us(ok[name]['min_s'])}" if name else ""
    return [case.title, f"{us(cv['median_s'])} / {us(cv['min_s'])}", np_text, best, us(floor_s),
            " / ".join(f"{c[0] / floor_s:.2f}" for c in cells), case.target,
            " / ".join("yes" if c[2] else "**no**" for c in cells),
            " / ".join("yes" if c[3] else "**no**" for c in cells)]


def _target_met(case: Case, t: float, floor_s: float, anchors: dict[str, float]) -> bool:
    if case.target_us is not None:
        return t <= case.target_us * 1e-6
    if case.target_floor is not None:
        return t <= case.target_floor * floor_s
    if case.target_vs_best is not None:
        return report_transformers.target_met(case, t, anchors)
    return all(t < v for v in anchors.values())


# --- the document -------------------------------------------------------------------


def render(run: dict) -> str:
    cpu = lscpu()
    l3 = l3_bytes(cpu)
    fl = best_floors(run["floors"])
    cv = run["cuvil"]
    date = datetime.datetime.fromtimestamp(run["started"], datetime.timezone.utc)
    blas = "; ".join(f"{b['internal_api']} {b['version']} kernel **{b['architecture']}**, "
                     f"{b['num_threads']} threads" for b in fl.get("blas", [])) or "unknown"
    unset = ", ".join(f"{k}={v}" for k, v in run["unset"].items() if v) or "neither was set"
    lines = [
        "# cuvil_aot CPU benchmarks", "",
        f"- Date: {date:%Y-%m-%d %H:%M} UTC; the run took {run['seconds'] / 60:.1f} min.",
        f"- Command: `{' '.join(['python bench/run.py', *run['argv']])}`.",
        f"- CPU: {cpu.get('Model name', '?')} (family {cpu.get('CPU family', '?')}, model "
        f"{cpu.get('Model', '?')}), {cpu.get('CPU(s)', '?')} cores, L3 {cpu.get('L3 cache', '?')}"
        f"; {cpu.get('Hypervisor vendor', 'no')} VM, shared: ±30% between runs.",
        f"- Load average (1 min) at start / end: {run['load'][0]:.1f} / {run['load'][1]:.1f} "
        "(other work on this machine inflates medians; `best µs` shows the least disturbed).",
        f"- Versions: {', '.join(run['versions'])}; C compiler: {cv.get('compiler', '?')}.",
        f"- cuvil_aot: commit {run['git']}; kernels for x86-64 level(s) "
        f"{cv.get('cpu_levels')}; vector math: {cv['vmath']}; runtime "
        + ("**older than native/ sources (stale)**" if cv["runtime_stale"] else "up to date")
        + "; module build "
        + ", ".join(f"{m} {s:.1f} s" for m, s in cv["build_s"].items()) + ".",
        f"- BLAS under NumPy: {blas}. The benchmark processes run with OPENBLAS_CORETYPE and "
        f"OPENBLAS_L2_SIZE removed from their environment (here: {unset}); set, they pin "
        "OpenBLAS to its Haswell kernel (SGEMM 4096×1024×4096 measured here once, side by side "
        "on a busy machine: 50–59 GFLOP/s with it, 174–195 without).",
        "- Method: each (case, competitor) in a fresh process; result checked against NumPy "
        "float64 (rtol 2e-3, atol 2e-4·max|ref|, float32 output; `max err (rel.)` = "
        "max|got − ref| / max|ref|) before any timing; warm-up; median of repeated samples "
        f"(each ≥ 2 ms of calls). {run['rounds']} rounds over all cases, each pair reported "
        "from its round with the lower median (`rounds` lists both); † marks a median over "
        f"{DISTURBED:g}× the best sample. Memory of one more call: "
        "`traced peak` is tracemalloc's peak (NumPy and Python allocations; cuvil_aot's "
        "scratch buffers, ONNX Runtime's arena and the allocators of Numba and PyTorch (—) are "
        "invisible to it); `RSS Δ` is VmHWM minus VmRSS just before the call, after "
        "`malloc_trim(0)` and a reset of VmHWM (memory a competitor keeps cached between "
        "calls, as ONNX Runtime's arena does, is not counted again).",
        "", "## Floors (measured in this run)", "", *floors_section(run["floors"]), "",
        "Floor of a case: max(FLOPs / SGEMM rate, bytes of inputs and outputs / bandwidth), "
        f"the bandwidth being the L3 stream rate when those bytes fit in L3 ({l3 / MIB:.0f} "
        "MiB), else the copy rate. The SGEMM rate is OpenBLAS's, not the FMA peak of two "
        "AVX-512 cores, so a GEMM can beat that floor (× floor < 1).", "",
    ]
    if run.get("quick"):
        lines[3:3] = ["- **Quick run (`--quick`): 3 single calls after one warm-up per "
                      "measurement, a smoke test; its times are not results.**"]
    core = {n: r for n, r in run["results"].items() if BY_NAME[n].group != "transformers"}
    rows = [summary_row(BY_NAME[n], res, fl, l3) for n, res in core.items()]
    if core:
        header = ["case", "cuvil_aot", "NumPy", "best anchor (by median)", "floor",
                  "cuvil / floor", "target", "target met", "faster than every anchor"]
        lines += ["## Summary (µs: median / best sample)", "", *table(header, rows),
                  "", "## Cases", ""]
    for name, res in core.items():
        lines += case_section(BY_NAME[name], res, fl, l3)
    lines += report_transformers.section(run, fl, l3, table, case_section)
    return "\n".join(lines) + "\n"
