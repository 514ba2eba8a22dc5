"""Normalization: layernorm, RMSNorm, group norm, batch norm, standardization, L2."""

import numpy as np

import cuvil_aot as cv

RMS_EPS = 1e-6
GROUPS = 4


@cv.optimize
def layer_norm(x: cv.f32["B", "T", "D"], gamma: cv.f32["D"], beta: cv.f32["D"],
               eps: float = 1e-5):
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * gamma + beta


@cv.optimize
def layer_norm_np_var(x: cv.f32["N", "D"], gamma: cv.f32["D"], beta: cv.f32["D"]):
    mu = np.mean(x, axis=1, keepdims=True)
    sigma = np.sqrt(np.var(x, axis=1, keepdims=True) + 1e-5)
    return gamma * (x - mu) / sigma + beta


@cv.optimize
def rms_norm(x: cv.f32["B", "T", "D"], weight: cv.f32["D"]):
    variance = np.mean(np.square(x), axis=-1, keepdims=True)
    return x / np.sqrt(variance + RMS_EPS) * weight


@cv.optimize
def rms_norm_f16(x: cv.f16["N", "D"], weight: cv.f16["D"]):
    # Llama style: compute in float32, cast back to the activations' dtype
    h = x.astype(np.float32)
    h = h * (1.0 / np.sqrt((h * h).mean(-1, keepdims=True) + RMS_EPS))
    return weight * h.astype(x.dtype)


@cv.optimize
def group_norm(x: cv.f32["B", "C", "L"], gamma: cv.f32["C"], beta: cv.f32["C"]):
    b, c, length = x.shape
    g = x.reshape(b, GROUPS, -1)
    mean = g.mean(axis=-1, keepdims=True)
    var = g.var(axis=-1, keepdims=True)
    g = (g - mean) / np.sqrt(var + 1e-5)
    x = g.reshape(b, c, length)
    return x * gamma[None, :, None] + beta[None, :, None]


@cv.optimize
def batch_norm_inference(x: cv.f32["B", "C", "H", "W"], running_mean: cv.f32["C"],
                         running_var: cv.f32["C"], gamma: cv.f32["C"], beta: cv.f32["C"]):
    shape = (1, -1, 1, 1)
    inv_std = 1.0 / np.sqrt(running_var.reshape(shape) + 1e-5)
    return (x - running_mean.reshape(shape)) * inv_std * gamma.reshape(shape) \
        + beta.reshape(shape)


@cv.optimize
def global_standardize(x: cv.f32["N", "D"]):
    return (x - x.mean()) / (x.std() + 1e-8)


@cv.optimize
def feature_standardize(x: cv.f64["N", "D"]):
    return (x - x.mean(axis=0)) / x.std(axis=0, ddof=1)


@cv.optimize
def l2_normalize(x: cv.f32["N", "D"]):
    norm = np.linalg.norm(x, axis=-1, keepdims=True)
    return x / np.maximum(norm, 1e-12)


@cv.optimize
def cosine_similarity_matrix(a: cv.f32["N", "D"], b: cv.f32["M", "D"]):
    a = a / np.linalg.norm(a, axis=1, keepdims=True)
    b = b / np.linalg.norm(b, axis=1, keepdims=True)
    return a @ b.T


@cv.optimize
def cosine_similarity_rows(a: cv.f32["N", "D"], b: cv.f32["N", "D"]):
    dot = np.sum(a * b, axis=-1)
    return dot / (np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1) + 1e-8)


@cv.optimize
def layer_norm_inplace_ops(x: cv.f32["N", "D"], gamma: cv.f32["D"], beta: cv.f32["D"]):
    x = x - x.mean(axis=-1, keepdims=True)
    x /= np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + 1e-5)
    x *= gamma
    x += beta
    return x
