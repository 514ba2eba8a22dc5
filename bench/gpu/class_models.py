"""On the GPU, a model written as classes runs as the same model written as functions:
bench/class_gpt2.py's GPT-2-small block (instances holding torch CUDA tensors, symbolic
sizes, ``n_head`` an int attribute) against bench/transformer_models.py's ``gpt2_block``
(the same weights as arguments, sizes fixed in its signature), from call to result,
rounds interleaved.

    python bench/gpu/class_models.py > class_models.md
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from bench import class_gpt2 as cg  # noqa: E402
from bench import gpu_transformers as G  # noqa: E402
from bench import transformer_models as T  # noqa: E402


def block_of(w: list[torch.Tensor]) -> cg.Block:
    return cg.Block(cg.LayerNorm(w[0], w[1]),
                    cg.Attention(cg.Linear(w[2], w[3]), cg.Linear(w[4], w[5]), 12),
                    cg.LayerNorm(w[6], w[7]),
                    cg.MLP(cg.Linear(w[8], w[9]), cg.Linear(w[10], w[11])))


def main() -> None:
    print(f"# class_models (GPU): {time.strftime('%Y-%m-%d %H:%M', time.gmtime())} UTC, "
          f"{torch.cuda.get_device_name()}\n")
    print("| case | classes µs | functions µs | classes / functions | max rel. diff |")
    print("|---|---|---|---|---|")
    for case in ("gpt2_1x128", "gpt2_8x128"):
        args, _ = G.inputs(case, np.random.default_rng(0))
        dev = [torch.from_numpy(a).cuda() for a in args]
        blk = block_of(dev[1:])
        got, ref = blk(dev[0]), T.gpt2_block(*dev)
        diff = float((got - ref).abs().max() / ref.abs().max())
        classes, functions = [], []
        for _ in range(3):
            classes.append(G.wall_us(lambda blk=blk, dev=dev: blk(dev[0]), 0.5))
            functions.append(G.wall_us(lambda dev=dev: T.gpt2_block(*dev), 0.5))
        c, f = min(classes), min(functions)
        print(f"| {case} | {c:,.1f} | {f:,.1f} | {c / f:.3f} | {diff:.1e} |", flush=True)


if __name__ == "__main__":
    main()
