"""The benchmark cases: inputs, the model each one runs, its work, and its target."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

Shape = tuple[int, ...]


@dataclass(frozen=True)
class Case:
    name: str
    title: str
    model: str
    """the function's name, in ``module`` and in every impl_*.py"""
    inputs: tuple[tuple[Shape, float], ...]
    """(shape, scale) of each float32 input, drawn from a normal distribution"""
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

    def make(self, rng: np.random.Generator) -> tuple[np.ndarray, ...]:
        return tuple((rng.standard_normal(s) * k).astype(np.float32) for s, k in self.inputs)

    @property
    def io_bytes(self) -> int:
        """Bytes of all inputs and outputs: what one call must move at least once."""
        shapes = [s for s, _ in self.inputs] + list(self.outputs)
        return 4 * sum(math.prod(s) for s in shapes)


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

BY_NAME = {c.name: c for c in CASES}
