"""The BERT-base layer of bench/transformer_models.py alone (a module of one function, so
its first build is short) on the GPU at 1x16, 1x8 and 8x128 tokens: cuvil_aot against
PyTorch eager (torch.nn.functional) and torch.compile reduce-overhead, checked against
NumPy float64, median µs from call to result.

    python bench/gpu/bert_probe.py
"""

import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from bench import gpu_transformers as G  # noqa: E402

source = (ROOT / "bench" / "transformer_models.py").read_text()
cut = source.index("@cv.optimize(signatures=[BERT])\ndef bert_layer_tanh")
work = Path(tempfile.mkdtemp())
(work / "bert_only.py").write_text(source[:cut])
sys.path.insert(0, str(work))
import bert_only  # noqa: E402


def wall_us(fn) -> float:
    for _ in range(5):
        fn()
    torch.cuda.synchronize()
    samples = []
    for _ in range(300):
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples) * 1e6


for b, t in ((1, 16), (1, 8), (8, 128)):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((b, t, 768)).astype(np.float32)
    mask = np.ones((b, t), np.float32)
    args = [x, mask, *G.bert_weights(rng)]
    ref = bert_only.bert_layer.py_func(*(a.astype(np.float64) for a in args))
    dev = [torch.from_numpy(a).cuda() for a in args]
    t0 = time.perf_counter()
    got = bert_only.bert_layer(*dev)
    first = time.perf_counter() - t0
    err = float(np.abs(got.cpu().numpy() - ref).max() / np.abs(ref).max())
    mine = wall_us(lambda dev=dev: bert_only.bert_layer(*dev))
    eager = wall_us(lambda dev=dev: G.torch_bert(*dev))
    graphs = torch.compile(G.torch_bert, mode="reduce-overhead", dynamic=False)
    reduced = wall_us(lambda dev=dev, graphs=graphs: graphs(*dev))
    print(f"{b}x{t}: cuvil_aot {mine:.0f} us (first call {first:.1f} s, max err {err:.1e}), "
          f"PyTorch eager {eager:.0f} us, torch.compile reduce-overhead {reduced:.0f} us",
          flush=True)
