"""Pooling: masked mean and max over tokens, CLS and attention pooling, strided average
pooling, 2x2 max pooling over sliding windows, a ResNet-style head."""

# ruff: noqa: F722 - dims like "3H" read to pyflakes as broken forward annotations

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

import cuvil_aot as cv


@cv.optimize
def masked_mean_pool(hidden: cv.f32["B", "T", "D"], attention_mask: cv.i64["B", "T"]):
    # sentence-transformers' mean pooling
    mask = attention_mask[..., None].astype(hidden.dtype)
    summed = (hidden * mask).sum(axis=1)
    counts = np.clip(mask.sum(axis=1), 1e-9, None)
    return summed / counts


@cv.optimize
def masked_max_pool(hidden: cv.f32["B", "T", "D"], mask: cv.bool_["B", "T"]):
    return np.where(mask[:, :, None], hidden, -np.inf).max(axis=1)


@cv.optimize
def masked_mean_pool_bool(hidden: cv.f32["B", "T", "D"], mask: cv.bool_["B", "T"]):
    lengths = mask.sum(axis=1, keepdims=True)
    return np.where(mask[..., None], hidden, 0.0).sum(axis=1) / lengths


@cv.optimize
def cls_pooler_classifier(hidden: cv.f32["B", "T", "D"], w_pool: cv.f32["D", "D"],
                          b_pool: cv.f32["D"], w_cls: cv.f32["D", "C"], b_cls: cv.f32["C"]):
    pooled = np.tanh(hidden[:, 0] @ w_pool + b_pool)
    return pooled @ w_cls + b_cls


@cv.optimize
def attention_pool(hidden: cv.f32["B", "T", "D"], w: cv.f32["D"]):
    scores = hidden @ w
    scores = scores - scores.max(axis=1, keepdims=True)
    weights = np.exp(scores)
    weights = weights / weights.sum(axis=1, keepdims=True)
    return np.sum(weights[:, :, None] * hidden, axis=1)


@cv.optimize
def avg_pool1d_stride2(x: cv.f32["B", "C", "2L"]):
    b, c, length = x.shape
    return x.reshape(b, c, length // 2, 2).mean(axis=-1)


@cv.optimize
def resnet_head(features: cv.f32["B", "C", "H", "W"], fc_w: cv.f32["C", "K"],
                fc_b: cv.f32["K"]):
    pooled = features.mean(axis=(2, 3))
    return pooled @ fc_w + fc_b


@cv.optimize
def max_pool_2x2(x: cv.f32["B", "C", "2H", "2W"]):
    b, c, h, w = x.shape
    return x.reshape(b, c, h // 2, 2, w // 2, 2).max(axis=(3, 5))


@cv.optimize
def max_pool2d_windows(x: cv.f32["C", "2H", "2W"]):
    # 2x2 max pooling with stride 2, written with NumPy's sliding windows
    win = sliding_window_view(x, (2, 2), axis=(1, 2))
    return win[:, ::2, ::2].max(axis=(-2, -1))
