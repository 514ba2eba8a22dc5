"""cuvil_aot on the transformer cases under several settings of its knobs, interleaved:
each round runs bench/gpu_transformers.py (cuvil_aot alone, ``--modes none``) once per
setting, each in a fresh process, so the device's drift falls on every setting alike.

    python bench/gpu/knob_ab.py OUTDIR --cases gpt2_8x128,bert_8x128 --rounds 3 \\
        base= nmajor=CUVIL_AOT_CUDA_WG_NMAJOR=1 \\
        both=CUVIL_AOT_CUDA_WG_NMAJOR=1,CUVIL_AOT_CUDA_WG_TAIL=1

A setting is NAME=VAR=VALUE[,VAR=VALUE...] (NAME= alone: the defaults). Writes
OUTDIR/knob_ab.md: µs a call per case and setting, every round, and each setting's median
over the base's (the first setting), with the largest error against float64 seen."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def parse_setting(text: str) -> tuple[str, dict[str, str]]:
    name, _, rest = text.partition("=")
    env = dict(pair.split("=", 1) for pair in rest.split(",") if pair)
    return name, env


def run_once(outdir: Path, cases: str, env: dict[str, str]) -> dict[str, tuple[float, float]]:
    """{case: (µs a call, max error)} of one gpu_transformers.py process."""
    outdir.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run([sys.executable, str(ROOT / "bench" / "gpu_transformers.py"),
                           str(outdir), "--cases", cases, "--modes", "none"],
                          env=dict(os.environ, **env), capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"gpu_transformers.py failed under {env}:\n{proc.stderr[-3000:]}")
    rows = json.loads((outdir / "gpu_transformers.json").read_text())
    return {r["case"]: (r["cuvil_aot"]["us"], r["cuvil_aot"]["max_err"]) for r in rows}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("outdir", type=Path)
    ap.add_argument("--cases", default="gpt2_8x128,bert_8x128")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("settings", nargs="+")
    opts = ap.parse_args()
    settings = [parse_setting(s) for s in opts.settings]
    seen: dict[str, dict[str, list[tuple[float, float]]]] = {n: {} for n, _ in settings}
    for r in range(opts.rounds):
        for name, env in settings:
            got = run_once(opts.outdir / f"r{r}_{name}", opts.cases, env)
            for case, value in got.items():
                seen[name].setdefault(case, []).append(value)
            print(f"round {r + 1} {name}: " + ", ".join(f"{c} {us:.0f} µs"
                                                        for c, (us, _) in got.items()),
                  flush=True)
    base = settings[0][0]
    cases = list(seen[base])
    lines = [f"# knob A/B, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
             f"{opts.rounds} rounds interleaved (`bench/gpu/knob_ab.py`)", "",
             "| setting | env | " + " | ".join(cases) + " |",
             "|---|---|" + "---|" * len(cases)]
    for name, env in settings:
        cells = []
        for case in cases:
            runs = seen[name].get(case, [])
            us = [u for u, _ in runs]
            ratio = statistics.median(us) / statistics.median([u for u, _ in seen[base][case]])
            cells.append(" / ".join(f"{u:.0f}" for u in us) +
                         f" µs (× {ratio:.3f}; err {max(e for _, e in runs):.1e})")
        env_text = ",".join(f"{k}={v}" for k, v in env.items()) or "defaults"
        lines.append(f"| {name} | `{env_text}` | " + " | ".join(cells) + " |")
    (opts.outdir / "knob_ab.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
