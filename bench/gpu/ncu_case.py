"""A case of bench/gpu_transformers.py called a few times, nothing else: for a profiler that
replays kernels (Nsight Compute), which a timed loop would make take hours.

    CUVIL_AOT_CUDA_GRAPH=0 ncu -k regex:gemm_f32_wg -s 11 -c 1 --section SpeedOfLight \
        python3 bench/gpu/ncu_case.py bert_8x128 --calls 2

(the first call builds the module; with graphs off each launch is its own kernel, in the
order of `call_timeline.py`)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from bench import gpu_transformers as G  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("case", choices=list(G.CASES))
    parser.add_argument("--calls", type=int, default=2)
    opts = parser.parse_args()
    model, _, _ = G.CASES[opts.case]
    args, _ = G.inputs(opts.case, np.random.default_rng(0))
    dev = [torch.from_numpy(a).cuda() for a in args]
    fn = G.cuvil_model(model)
    for _ in range(opts.calls):
        fn(*dev)
    torch.cuda.synchronize()


if __name__ == "__main__":
    main()
