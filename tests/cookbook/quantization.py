"""Quantization: symmetric int8, per-channel absmax, asymmetric uint8, int8 matmul,
weight-only int8 (declared by a signature string, as the README's LSTM step is)."""

import numpy as np

import cuvil_aot as cv


@cv.optimize
def quantize_int8(x: cv.f32["N", "D"], scale: float):
    return np.round(x / scale).clip(-128, 127).astype(np.int8)


@cv.optimize
def dequantize_int8(q: cv.i8["N", "D"], scale: float):
    return q.astype(np.float32) * scale


@cv.optimize
def quantize_per_channel(w: cv.f32["K", "N"]):
    scale = np.abs(w).max(axis=0, keepdims=True) / 127.0
    q = np.clip(np.round(w / scale), -127, 127).astype(np.int8)
    return q, scale.astype(np.float32)


@cv.optimize
def fake_quant(x: cv.f32["N", "D"], scale: float, zero_point: int):
    q = np.clip(np.round(x / scale) + zero_point, 0, 255)
    return (q - zero_point) * scale


@cv.optimize
def quantize_uint8_minmax(x: cv.f32["N", "D"]):
    lo, hi = min(x.min(), 0.0), max(x.max(), 0.0)
    scale = (hi - lo) / 255.0
    zero_point = np.round(-lo / scale)
    q = np.clip(np.round(x / scale) + zero_point, 0, 255).astype(np.uint8)
    return q, np.float32(scale), np.uint8(zero_point)


@cv.optimize
def int8_matmul_dequant(xq: cv.i8["M", "K"], wq: cv.i8["K", "N"], x_scale: cv.f32["M", 1],
                        w_scale: cv.f32[1, "N"]):
    acc = xq.astype(np.int32) @ wq.astype(np.int32)
    return acc.astype(np.float32) * x_scale * w_scale


@cv.optimize(signatures=["i8[K,N], f32[N], f32[M,K]"])
def weight_only_int8_linear(wq, w_scale, x):
    w = wq.astype(np.float32) * w_scale
    return x @ w
