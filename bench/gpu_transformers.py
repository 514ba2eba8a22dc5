"""Transformer layers on the GPU: cuvil_aot (bench/transformer_models.py called with torch CUDA
tensors) against PyTorch eager, Hugging Face transformers' BertLayer, and torch.compile
(--modes: default and reduce-overhead unless told otherwise), from the
Python call until the result is ready (a synchronize per call), medians after warm-up.
Every result is checked against NumPy float64 before it is timed.

    python bench/gpu_transformers.py OUTDIR [--cases bert_1x16,...]
        [--modes default,reduce-overhead,max-autotune-no-cudagraphs|none]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import cuvil_aot  # noqa: E402
from bench import transformer_models as T  # noqa: E402

torch.set_grad_enabled(False)
H, FF = T.HIDDEN, T.FFN

CASES = {  # name: (model, batch, tokens)
    "bert_1x16": ("bert", 1, 16), "bert_8x128": ("bert", 8, 128),
    "bert_32x128": ("bert", 32, 128), "gpt2_1x128": ("gpt2", 1, 128),
    "gpt2_8x128": ("gpt2", 8, 128), "gpt2_decode_1": ("decode", 1, 255),
    "gpt2_decode_8": ("decode", 8, 255), "bert_stack_1x8": ("stack", 1, 8),
}


def bert_weights(rng: np.random.Generator) -> list[np.ndarray]:
    def w(*shape, scale=0.02, base=0.0):
        return (base + rng.standard_normal(shape) * scale).astype(np.float32)
    return [w(H, H), w(H), w(H, H), w(H), w(H, H), w(H), w(H, H), w(H), w(H, base=1),
            w(H), w(FF, H), w(FF), w(H, FF), w(H), w(H, base=1), w(H)]


def gpt2_weights(rng: np.random.Generator) -> list[np.ndarray]:
    def w(*shape, scale=0.02, base=0.0):
        return (base + rng.standard_normal(shape) * scale).astype(np.float32)
    return [w(H, base=1), w(H), w(H, 3 * H), w(3 * H), w(H, H), w(H), w(H, base=1), w(H),
            w(H, FF), w(FF), w(FF, H), w(H)]


def inputs(case: str, rng: np.random.Generator) -> tuple[list[np.ndarray], int]:
    """The arguments of one call (for the stack: x, mask and 4 layers' weights)."""
    model, b, t = CASES[case]
    if model in ("bert", "stack"):
        x = rng.standard_normal((b, t, H)).astype(np.float32)
        mask = np.ones((b, t), np.float32)
        mask[: (b + 1) // 2, t - t // 4:] = 0
        layers = 4 if model == "stack" else 1
        return [x, mask, *(a for _ in range(layers) for a in bert_weights(rng))], layers
    if model == "gpt2":
        return [rng.standard_normal((b, t, H)).astype(np.float32), *gpt2_weights(rng)], 1
    x = rng.standard_normal((b, 1, H)).astype(np.float32)
    past = [rng.standard_normal((b, 12, t, 64)).astype(np.float32) for _ in range(2)]
    return [x, *past, *gpt2_weights(rng)], 1


def numpy_model(model: str) -> Callable:
    if model == "stack":
        def stack(x, mask, *ws):
            for i in range(0, len(ws), 16):
                x = T.bert_layer.py_func(x, mask, *ws[i:i + 16])
            return x
        return stack
    return {"bert": T.bert_layer, "gpt2": T.gpt2_block, "decode": T.gpt2_decode}[model].py_func


def cuvil_model(model: str) -> Callable:
    if model == "stack":
        def stack(x, mask, *ws):
            for i in range(0, len(ws), 16):
                x = T.bert_layer(x, mask, *ws[i:i + 16])
            return x
        return stack
    return {"bert": T.bert_layer, "gpt2": T.gpt2_block, "decode": T.gpt2_decode}[model]


# --- PyTorch, written as its users write it ---------------------------------------------


def _heads(x: torch.Tensor) -> torch.Tensor:
    b, t, _ = x.shape
    return x.view(b, t, 12, 64).transpose(1, 2)


def _merge(x: torch.Tensor) -> torch.Tensor:
    b, _, t, _ = x.shape
    return x.transpose(1, 2).reshape(b, t, H)


def torch_bert(x, mask, wq, bq, wk, bk, wv, bv, wo, bo, g1, b1, wi, bi, wf, bf, g2, b2):
    bias = ((1.0 - mask[:, None, None, :]) * -10000.0).to(x.dtype)
    q, k, v = _heads(F.linear(x, wq, bq)), _heads(F.linear(x, wk, bk)), _heads(F.linear(x, wv, bv))
    a = _merge(F.scaled_dot_product_attention(q, k, v, attn_mask=bias))
    a = F.layer_norm(x + F.linear(a, wo, bo), (H,), g1, b1, eps=T.EPS)
    f = F.linear(F.gelu(F.linear(a, wi, bi)), wf, bf)
    return F.layer_norm(a + f, (H,), g2, b2, eps=T.EPS)


def torch_gpt2(x, g1, b1, wa, ba, wp, bp, g2, b2, wfc, bfc, wo, bo, past=None):
    h = F.layer_norm(x, (H,), g1, b1, eps=1e-5)
    q, k, v = (_heads(p) for p in torch.addmm(ba, h.reshape(-1, H), wa)
               .view(*x.shape[:2], 3 * H).split(H, dim=-1))
    if past is not None:
        k, v = torch.cat([past[0], k], 2), torch.cat([past[1], v], 2)
    a = F.scaled_dot_product_attention(q, k, v, is_causal=past is None)
    x = x + _merge(a) @ wp + bp
    h = F.layer_norm(x, (H,), g2, b2, eps=1e-5)
    out = x + F.gelu(h @ wfc + bfc, approximate="tanh") @ wo + bo
    return out if past is None else (out, k, v)


def torch_model(model: str) -> Callable:
    if model == "bert":
        return torch_bert
    if model == "stack":
        def stack(x, mask, *ws):
            for i in range(0, len(ws), 16):
                x = torch_bert(x, mask, *ws[i:i + 16])
            return x
        return stack
    if model == "gpt2":
        return torch_gpt2
    return lambda x, kp, vp, *ws: torch_gpt2(x, *ws, past=(kp, vp))


def hf_bert(weights: list[torch.Tensor], layers: int) -> Callable:
    """transformers' own BertLayer (sdpa attention) with the same weights."""
    from transformers import BertConfig
    from transformers.models.bert.modeling_bert import BertLayer

    config = BertConfig(hidden_size=H, num_attention_heads=12, intermediate_size=FF,
                        hidden_act="gelu", layer_norm_eps=T.EPS, attn_implementation="sdpa")
    mods = []
    names = ["attention.self.query", "attention.self.key", "attention.self.value",
             "attention.output.dense", "attention.output.LayerNorm", "intermediate.dense",
             "output.dense", "output.LayerNorm"]
    for i in range(layers):
        ws = weights[16 * i:16 * i + 16]
        state = {}
        for n, (w, b) in zip(names, zip(ws[0::2], ws[1::2])):
            state[f"{n}.weight"], state[f"{n}.bias"] = w, b
        layer = BertLayer(config).cuda().eval()
        layer.load_state_dict(state)
        mods.append(layer)

    def run(x, mask):
        bias = ((1.0 - mask[:, None, None, :]) * -10000.0).to(x.dtype)
        for layer in mods:
            out = layer(x, attention_mask=bias)
            x = out[0] if isinstance(out, tuple) else out
        return x
    return run


# --- timing and checking ----------------------------------------------------------------


def wall_us(fn: Callable[[], object], seconds: float = 1.0) -> float:
    """Median µs from the call until the result is ready (a synchronize per call)."""
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    fn()
    torch.cuda.synchronize()
    n = int(min(2000, max(10, seconds / max(time.perf_counter() - t0, 1e-6))))
    samples = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples) * 1e6


def max_err(got: object, ref: object) -> float:
    gots = got if isinstance(got, (tuple, list)) else (got,)
    refs = ref if isinstance(ref, (tuple, list)) else (ref,)
    worst = 0.0
    for g, r in zip(gots, refs):
        g = g.float().cpu().numpy() if isinstance(g, torch.Tensor) else np.asarray(g)
        worst = max(worst, float(np.max(np.abs(g - r)) / (np.max(np.abs(r)) or 1.0)))
    return worst


def run_case(case: str, modes: list[str]) -> dict:
    model, b, t = CASES[case]
    args, layers = inputs(case, np.random.default_rng(0))
    ref = numpy_model(model)(*(a.astype(np.float64) for a in args))
    dev = [torch.from_numpy(a).cuda() for a in args]
    competitors: dict[str, Callable[[], object]] = {
        "cuvil_aot": lambda: cuvil_model(model)(*dev),
        "PyTorch eager": lambda: torch_model(model)(*dev),
    }
    if model in ("bert", "stack"):
        hf = hf_bert(dev[2:], layers)
        competitors["transformers eager"] = lambda: hf(dev[0], dev[1])
    for mode in modes:
        compiled = torch.compile(torch_model(model), mode=mode, dynamic=False)
        competitors[f"torch.compile {mode}"] = (lambda c: lambda: c(*dev))(compiled)
    row: dict = {"case": case}
    for name, fn in competitors.items():
        try:
            t0 = time.perf_counter()
            err = max_err(fn(), ref)
            prepare = time.perf_counter() - t0
            row[name] = {"us": wall_us(fn), "max_err": err, "first_call_s": prepare}
        except Exception as exc:  # reported, never timed
            row[name] = {"error": f"{type(exc).__name__}: {exc}"[:300]}
            traceback.print_exc()
        print(case, name, row[name], flush=True)
    return row


def report(rows: list[dict]) -> str:
    names = sorted({k for r in rows for k in r if k != "case"},
                   key=lambda n: (n != "cuvil_aot", n))
    lines = ["| case | " + " | ".join(names) + " | best other / cuvil_aot |",
             "|---" * (len(names) + 2) + "|"]
    for r in rows:
        cells, others = [], []
        for n in names:
            v = r.get(n, {})
            cells.append(f"{v['us']:,.0f} µs" if "us" in v else "error" if v else "—")
            if n != "cuvil_aot" and "us" in v:
                others.append(v["us"])
        mine = r.get("cuvil_aot", {}).get("us")
        ratio = f"{min(others) / mine:.2f}×" if mine and others else "—"
        lines.append(f"| {r['case']} | " + " | ".join(cells) + f" | {ratio} |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("outdir", type=Path)
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--modes", default="default,reduce-overhead",
                    help="torch.compile modes, comma-separated; 'none' for none")
    opts = ap.parse_args()
    modes = [] if opts.modes == "none" else opts.modes.split(",")
    opts.outdir.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    T.bert_layer(*[torch.from_numpy(a).cuda() for a in inputs("bert_1x16",
                                                               np.random.default_rng(0))[0]])
    build = time.perf_counter() - t0
    rows: list[dict] = []
    for case in opts.cases.split(","):  # the report is rewritten after each case
        rows.append(run_case(case, modes))
        graphs = cuvil_aot.info()
        text = (f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
                f"{torch.cuda.get_device_name()}; torch {torch.__version__}; module build "
                f"and first call {build:.1f} s; CUVIL_AOT_CUDA_GRAPH={graphs['cuda_graph']} "
                f"({graphs['cuda_graph_stats']})\n\n{report(rows)}\n")
        (opts.outdir / "gpu_transformers.md").write_text(text)
        (opts.outdir / "gpu_transformers.json").write_text(json.dumps(rows, indent=1))
    print(text)


if __name__ == "__main__":
    main()
