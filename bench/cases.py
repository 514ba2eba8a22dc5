"""The benchmark cases: inputs, the model each one runs, its work, and its target."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

Shape = tuple[int, ...]
CORE = ("cuvil_aot", "NumPy", "numexpr", "Numba", "PyTorch eager", "torch.compile",
        "ONNX Runtime")
TRANSFORMER = ("cuvil_aot", "cuvil_aot frozen", "NumPy", "PyTorch eager", "torch.compile",
               "ONNX Runtime", "ONNX Runtime fused")
OURS = ("cuvil_aot", "cuvil_aot frozen")
"""cuvil_aot frozen: the same compiled function with the weights passed through
cuvil_aot.freeze (packed once, as ONNX Runtime's initializers are)"""
COMPETITORS = tuple(dict.fromkeys(CORE + TRANSFORMER))


@dataclass(frozen=True)
class Case:
    name: str
    title: str
    model: str
    """the function's name, in ``module`` and in every impl_*.py"""
    inputs: tuple[tuple, ...]
    """(shape, scale[, kind]) of each float32 input: kind "normal" (the default) draws
    scale * N(0, 1); "ones" 1 + scale * N(0, 1) (LayerNorm gammas); "mask" a 0/1 padding
    mask (B, T) (see ``padding_mask``); "int" the Python int ``scale`` (shape ())"""
    outputs: tuple[Shape, ...]
    flops: float
    target: str
    """the issue's target, as text; 'anchors' means faster than every anchor"""
    target_us: float | None = None
    target_floor: float | None = None
    """the target as a multiple of the floor"""
    module: str = "examples.models"
    """where the cuvil_aot function (and its NumPy original, ``py_func``) lives"""
    big: bool = False
    """fewer timed repeats"""
    parallel: bool = False
    """Numba with parallel=True"""
    group: str = "core"
    """the report's section; ``run.py --cases GROUP`` selects a whole group"""
    competitors: tuple[str, ...] = CORE
    """the competitors that implement this case (run.py runs no other on it)"""
    target_vs_best: float | None = None
    """the target as a speed-up over the best anchor (1.25: 1.25× faster than it)"""
    weight_inputs: int = 0
    """the number of trailing inputs that are weights (constants of a deployed model)"""
    note: str = ""
    """shown under the case's title in the report"""

    def make(self, rng: np.random.Generator) -> tuple[np.ndarray, ...]:
        return tuple(_draw(rng, *spec) for spec in self.inputs)

    @property
    def io_bytes(self) -> int:
        """Bytes of all inputs and outputs: what one call must move at least once."""
        shapes = [spec[0] for spec in self.inputs] + list(self.outputs)
        return 4 * sum(math.prod(s) for s in shapes)

    @property
    def weight_bytes(self) -> int:
        specs = self.inputs[len(self.inputs) - self.weight_inputs:]
        return 4 * sum(math.prod(spec[0]) for spec in specs)


def padding_mask(shape: Shape) -> np.ndarray:
    """(B, T) ones; the last quarter of the tokens is padding (0) in the first ceil(B/2)
    sequences (so a batch of 1 is padded too)."""
    b, t = shape
    mask = np.ones(shape, np.float32)
    mask[:(b + 1) // 2, t - t // 4:] = 0.0
    return mask


def _draw(rng: np.random.Generator, shape: Shape, scale: float, kind: str = "normal"):
    if kind == "int":
        return int(scale)
    if kind == "mask":
        return padding_mask(shape)
    x = (rng.standard_normal(shape) * scale).astype(np.float32)
    return x + np.float32(1.0) if kind == "ones" else x


def _matmul(b: int, k: int, n: int) -> dict:
    return {"model": "matmul_relu", "inputs": (((b, k), 1.0), ((k, n), k**-0.5), ((n,), 0.1)),
            "outputs": ((b, n),), "flops": 2.0 * b * k * n}


def _lstm(b: int) -> dict:
    w = 512**-0.5
    return {"model": "lstm_step",
            "inputs": (((b, 512), 1.0), ((b, 512), 1.0), ((b, 512), 1.0), ((512, 2048), w),
                       ((512, 2048), w), ((2048,), 0.1)),
            "outputs": ((b, 512), (b, 512)), "flops": 2.0 * b * 1024 * 2048}


def _resnet(b: int) -> dict:
    return {"model": "resnet_head",
            "inputs": (((b, 512, 7, 7), 1.0), ((512, 1000), 512**-0.5 * 4), ((1000,), 0.1)),
            "outputs": ((b, 1000),), "flops": 2.0 * b * 512 * 1000}


def _ffn(t: int) -> dict:
    return {"model": "ffn_block",
            "inputs": (((t, 768), 1.0), ((768,), 1.0), ((768,), 0.1), ((768, 3072), 768**-0.5),
                       ((3072,), 0.1), ((3072, 768), 3072**-0.5), ((768,), 0.1)),
            "outputs": ((t, 768),), "flops": 4.0 * t * 768 * 3072}


_CHAIN = {"model": "elementwise_chain", "inputs": (((1 << 24,), 1.0), ((1 << 24,), 1.0)),
          "outputs": ((1 << 24,),), "flops": 0.0}
_SOFTMAX = {"model": "softmax", "inputs": (((4096, 4096), 3.0),), "outputs": ((4096, 4096),),
            "flops": 0.0}
_ADD = {"model": "add", "inputs": (((1,), 1.0), ((1,), 1.0)), "outputs": ((1,),), "flops": 0.0}

CASES = [
    Case("matmul_small", "matmul_relu 32×128×64", **_matmul(32, 128, 64),
         target="≤ 8 µs", target_us=8),
    Case("matmul_big", "matmul_relu 4096×1024×4096", **_matmul(4096, 1024, 4096),
         target="≤ NumPy's `x @ w` alone (the SGEMM floor)", target_floor=1.0,
         module="bench.models", big=True, parallel=True),
    Case("lstm_1", "LSTM step batch 1 (512 in, 512 hidden)", **_lstm(1),
         target="≤ 1.15× floor", target_floor=1.15),
    Case("lstm_256", "LSTM step batch 256 (512 in, 512 hidden)", **_lstm(256),
         target="anchors", parallel=True),
    Case("resnet_1", "ResNet-18 head batch 1", **_resnet(1), target="≤ 45 µs", target_us=45),
    Case("resnet_256", "ResNet-18 head batch 256", **_resnet(256), target="anchors",
         parallel=True),
    Case("ffn_1", "FFN block 1 token (768→3072→768)", **_ffn(1),
         target="≤ 1.2× floor", target_floor=1.2),
    Case("ffn_2048", "FFN block 2048 tokens (768→3072→768)", **_ffn(2048),
         target="≤ 150,000 µs", target_us=150_000, big=True, parallel=True),
    Case("chain_16m", "elementwise chain, 16M float32", **_CHAIN,
         target="≤ 40,000 µs", target_us=40_000, big=True, parallel=True),
    Case("softmax_4096", "row softmax 4096×4096", **_SOFTMAX,
         target="≤ 25,000 µs", target_us=25_000, big=True, parallel=True),
    Case("overhead", "call overhead, 1-element arrays (x + y)", **_ADD,
         target="≤ 1.5× one `np.add`", target_floor=1.5, module="bench.models"),
]


# --- transformers (bench/transformer_models.py; issue 22) ------------------------------

D, FF, HEADS, HEAD = 768, 3072, 12, 64
LAYER_PARAMS = 4 * D * D + 2 * D * FF
"""the weights of the GEMMs of one BERT or GPT-2 layer"""
W = 0.02
"""BERT's and GPT-2's initializer range: weights and biases are 0.02 * N(0, 1)"""
_LN = (((D,), 0.05, "ones"), ((D,), W))
"""a LayerNorm's gamma (1 + 0.05 * N(0, 1)) and beta"""
BERT_WEIGHTS = (((D, D), W), ((D,), W), ((D, D), W), ((D,), W), ((D, D), W), ((D,), W),
                ((D, D), W), ((D,), W), *_LN, ((FF, D), W), ((FF,), W), ((D, FF), W), ((D,), W),
                *_LN)
"""wq bq wk bk wv bv wo bo g1 b1 wi bi wf bf g2 b2: (out, in) weights as in PyTorch"""
GPT2_WEIGHTS = (*_LN, ((D, 3 * D), W), ((3 * D,), W), ((D, D), W), ((D,), W), *_LN,
                ((D, FF), W), ((FF,), W), ((FF, D), W), ((D,), W))
"""ln1 w_attn b_attn w_proj b_proj ln2 w_fc b_fc w_out b_out: (in, out) as in HF's Conv1D"""
_ORT_NOTE = "ONNX Runtime fused (com.microsoft ops): "
"""the case's note: what the fused graph runs (report_transformers.py says the rest)"""


def _gemm_flops(b: int, t: int, kv: int | None = None) -> float:
    """The projections and FFN (2 * tokens * params) and attention (Q K^T and P V)."""
    return 2.0 * b * t * LAYER_PARAMS + 4.0 * b * HEADS * t * (kv or t) * HEAD


def _bert(b: int, t: int, model: str = "bert_layer") -> dict:
    return {"model": model, "inputs": (((b, t, D), 1.0), ((b, t), 1.0, "mask"), *BERT_WEIGHTS),
            "outputs": ((b, t, D),), "flops": _gemm_flops(b, t),
            "weight_inputs": len(BERT_WEIGHTS),
            "note": _ORT_NOTE + "Attention (packed QKV weight (768, 2304), bias (2304,), "
            "mask_index = the padding mask cast to int32), SkipLayerNormalization, "
            + ("BiasGelu (erf)." if model == "bert_layer" else "FastGelu (tanh).")}


def _gpt2(b: int, t: int) -> dict:
    return {"model": "gpt2_block", "inputs": (((b, t, D), 1.0), *GPT2_WEIGHTS),
            "outputs": ((b, t, D),), "flops": _gemm_flops(b, t),
            "weight_inputs": len(GPT2_WEIGHTS),
            "note": _ORT_NOTE + "LayerNormalization, Attention (unidirectional = 1, packed "
            "weight (768, 2304)), SkipLayerNormalization (its input_skip_bias_sum output is "
            "the residual), FastGelu. The GEMM FLOPs count causal attention as full T×T."}


def _gpt2_decode(b: int, past: int) -> dict:
    cache = (b, HEADS, past, HEAD)
    return {"model": "gpt2_decode",
            "inputs": (((b, 1, D), 1.0), (cache, 1.0), (cache, 1.0), *GPT2_WEIGHTS),
            "outputs": ((b, 1, D), (b, HEADS, past + 1, HEAD), (b, HEADS, past + 1, HEAD)),
            "flops": _gemm_flops(b, 1, past + 1), "weight_inputs": len(GPT2_WEIGHTS),
            "note": _ORT_NOTE + "LayerNormalization, MatMul and Split into Q, K, V, "
            "MultiHeadAttention (QKV bias, past_key / past_value in, present_key / "
            "present_value out: the grown caches), SkipLayerNormalization, FastGelu. (Attention "
            "takes one packed past (2, B, 12, P, 64): packing the two caches would copy them.)"}


def _gpt2_decode_inplace(b: int, past: int) -> dict:
    cache = (b, HEADS, past + 1, HEAD)
    return {"model": "gpt2_decode_inplace",
            "inputs": (((b, 1, D), 1.0), (cache, 1.0), (cache, 1.0), ((), past, "int"),
                       *GPT2_WEIGHTS),
            "outputs": ((b, 1, D),), "flops": _gemm_flops(b, 1, past + 1),
            "weight_inputs": len(GPT2_WEIGHTS),
            "note": "The decode step as servers write it: caches preallocated for one more "
            "token, the new key and value written at position t = 255, attention over "
            "positions 0..t (cuvil_aot and NumPy write the caller's arrays; PyTorch too, "
            "by slice assignment). ONNX Runtime in standard ops: the decode case's graph on "
            "positions 0..t-1 of the caches as the past (sliced, then grown by Concat; the "
            "caches unwritten). " + _ORT_NOTE + "LayerNormalization, MatMul and Split into "
            "Q, K, V, GroupQueryAttention (12 K/V heads) on the caches as past_key / "
            "past_value with its present outputs bound to the same buffers (IO binding: "
            "past_present_share_buffer, the new key and value written in place at "
            "seqlens_k = t), SkipLayerNormalization, FastGelu."}


def _bert_stack(b: int, t: int, layers: int) -> dict:
    one = _bert(b, t)
    return {**one, "model": "bert_stack", "inputs": one["inputs"][:2] + BERT_WEIGHTS * layers,
            "flops": layers * one["flops"], "weight_inputs": layers * len(BERT_WEIGHTS),
            "note": f"bert_stack: {layers} bert_layer calls from a Python loop (cuvil_aot: the "
            "dispatcher; NumPy: bert_layer.py_func; PyTorch: the eager function, or "
            "torch.compile of the whole loop; ONNX Runtime: one graph of the layers, as an "
            "exported model is). " + one["note"]}


_T = {"module": "bench.transformer_models", "group": "transformers", "competitors": TRANSFORMER,
      "target": "1.25× faster than the best anchor", "target_vs_best": 1.25}

CASES += [
    Case("bert_1x16", "BERT-base layer, 1×16 tokens (erf GELU)", **_bert(1, 16), **_T),
    Case("bert_8x128", "BERT-base layer, 8×128 tokens (erf GELU)", **_bert(8, 128), **_T),
    Case("bert_32x128", "BERT-base layer, 32×128 tokens (erf GELU)", **_bert(32, 128), **_T,
         big=True),
    Case("bert_tanh_8x128", "BERT-base layer, 8×128 tokens (tanh GELU)",
         **_bert(8, 128, "bert_layer_tanh"), **_T),
    Case("gpt2_1x128", "GPT-2-small block, prefill 1×128 tokens", **_gpt2(1, 128), **_T),
    Case("gpt2_8x128", "GPT-2-small block, prefill 8×128 tokens", **_gpt2(8, 128), **_T),
    Case("gpt2_decode_1", "GPT-2-small block, decode 1 token, 255 past", **_gpt2_decode(1, 255),
         **_T),
    Case("gpt2_decode_8", "GPT-2-small block, decode 8 sequences of 1 token, 255 past",
         **_gpt2_decode(8, 255), **_T),
    Case("gpt2_decode_inplace_1", "GPT-2-small block, decode 1 token into its cache, 255 "
         "past", **_gpt2_decode_inplace(1, 255), **_T),
    Case("gpt2_decode_inplace_8", "GPT-2-small block, decode 8 sequences of 1 token into "
         "their caches, 255 past", **_gpt2_decode_inplace(8, 255), **_T),
    Case("bert_stack_1x8", "4 BERT-base layers, 1×8 tokens, from a Python loop",
         **_bert_stack(1, 8, 4), **_T),
]
BY_NAME = {c.name: c for c in CASES}
GROUPS = {g: [c.name for c in CASES if c.group == g] for g in dict.fromkeys(c.group for c in CASES)}
