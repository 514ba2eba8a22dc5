"""Everything else: MLP heads, losses, one-hot, cumulative sums, distances, a causal
depthwise convolution, convolutions over sliding windows (1-D as einsum, 2-D as im2col), a
smoothing np.convolve, a mixture-of-experts layer's top-2 routing."""

# ruff: noqa: F722 - dims like "5T" read to pyflakes as broken forward annotations

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

import cuvil_aot as cv

NUM_CLASSES = 10
KERNEL = 4


def log_softmax(x):
    x = x - x.max(axis=-1, keepdims=True)
    return x - np.log(np.exp(x).sum(axis=-1, keepdims=True))


@cv.optimize
def mlp_head_probs(x: cv.f32["B", "D"], w1: cv.f32["D", "H"], b1: cv.f32["H"],
                   w2: cv.f32["H", "C"], b2: cv.f32["C"]):
    h = np.maximum(x @ w1 + b1, 0)
    logits = h @ w2 + b2
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


@cv.optimize
def label_smoothing_loss(logits: cv.f32["B", "C"], labels: cv.i64["B"], smoothing: float):
    logp = log_softmax(logits)
    nll = -logp[np.arange(logits.shape[0]), labels]
    smooth = -logp.mean(axis=-1)
    return np.mean((1.0 - smoothing) * nll + smoothing * smooth)


@cv.optimize
def cross_entropy_take_along(logits: cv.f32["B", "C"], labels: cv.i64["B"]):
    logp = log_softmax(logits)
    return -np.take_along_axis(logp, labels[:, None], axis=1).mean()


@cv.optimize
def bce_with_logits(z: cv.f32["B", "K"], y: cv.f32["B", "K"]):
    loss = np.maximum(z, 0) - z * y + np.log1p(np.exp(-np.abs(z)))
    return loss.mean()


@cv.optimize
def accuracy(logits: cv.f32["B", "C"], labels: cv.i64["B"]):
    return (np.argmax(logits, axis=-1) == labels).mean()


@cv.optimize
def one_hot_eye(labels: cv.i64["B"]):
    return np.eye(NUM_CLASSES, dtype=np.float32)[labels]


@cv.optimize
def one_hot_compare(labels: cv.i64["B"]):
    return (labels[:, None] == np.arange(NUM_CLASSES)[None, :]).astype(np.float32)


@cv.optimize
def running_mean(x: cv.f32["B", "T", "D"]):
    t = x.shape[1]
    return np.cumsum(x, axis=1) / np.arange(1, t + 1)[None, :, None]


@cv.optimize
def segment_offsets(lengths: cv.i64["N"]):
    ends = np.cumsum(lengths)
    starts = np.concatenate([np.zeros(1, dtype=lengths.dtype), ends[:-1]])
    return starts, ends


@cv.optimize
def pairwise_sq_distances(a: cv.f32["N", "D"], b: cv.f32["M", "D"]):
    aa = (a ** 2).sum(axis=1)[:, None]
    bb = (b ** 2).sum(axis=1)[None, :]
    return np.maximum(aa - 2 * a @ b.T + bb, 0.0)


@cv.optimize
def causal_depthwise_conv1d(x: cv.f32["B", "T", "D"], w: cv.f32[4, "D"], bias: cv.f32["D"]):
    # Mamba-style short convolution over time, left-padded
    t = x.shape[1]
    xp = np.pad(x, ((0, 0), (KERNEL - 1, 0), (0, 0)))
    out = bias
    for i in range(KERNEL):
        out = out + xp[:, i:i + t, :] * w[i]
    return out * (1 / (1 + np.exp(-out)))


@cv.optimize
def residual_dropout_free_block(x: cv.f32["B", "D"], w: cv.f32["D", "D"], b: cv.f32["D"],
                                gamma: cv.f32["D"]):
    h = x + np.maximum(x @ w + b, 0.0)
    mu = h.mean(-1, keepdims=True)
    sd = h.std(-1, keepdims=True)
    return gamma * (h - mu) / (sd + 1e-6)


@cv.optimize
def image_preprocess(img: cv.u8["B", "H", "W", 3], mean: cv.f32[3], std: cv.f32[3]):
    # HWC uint8 from a decoder -> normalized NCHW float32
    x = img.astype(np.float32) / 255.0
    x = (x - mean) / std
    return x.transpose(0, 3, 1, 2)


@cv.optimize
def pcm_preemphasis(pcm: cv.i16["B", "N"]):
    x = pcm.astype(np.float32) / 32768.0
    return np.concatenate([x[:, :1], x[:, 1:] - 0.97 * x[:, :-1]], axis=1)


@cv.optimize
def torch_layout_linear(x: cv.f32["B", "I"], weight: cv.f32["O", "I"], bias: cv.f32["O"]):
    # weights exported from PyTorch: (out_features, in_features)
    return np.dot(x, weight.T) + bias


@cv.optimize
def entropy_and_kl(p_logits: cv.f32["B", "C"], q_logits: cv.f32["B", "C"]):
    logp, logq = log_softmax(p_logits), log_softmax(q_logits)
    p = np.exp(logp)
    entropy = -(p * logp).sum(axis=-1)
    kl = (p * (logp - logq)).sum(axis=-1)
    return entropy, kl


@cv.optimize
def conv1d_windows(x: cv.f32["C", "T"], w: cv.f32["O", "C", 3], b: cv.f32["O"]):
    # Whisper-style 1-D convolution, kernel 3, "same" padding
    xp = np.pad(x, ((0, 0), (1, 1)))
    return np.einsum("ctk,ock->ot", sliding_window_view(xp, 3, axis=1), w) + b[:, None]


@cv.optimize
def conv2d_im2col(x: cv.f32["C", "H", "W"], w: cv.f32["O", "C", 3, 3]):
    # a 3x3 convolution as im2col: every window a row, one GEMM with the flattened kernel
    c, h, wd = x.shape
    cols = sliding_window_view(np.pad(x, ((0, 0), (1, 1), (1, 1))), (3, 3), axis=(1, 2))
    cols = cols.transpose(1, 2, 0, 3, 4).reshape(h * wd, c * 9)
    return (cols @ w.reshape(w.shape[0], -1).T).T.reshape(w.shape[0], h, wd)


@cv.optimize
def smooth_signal(x: cv.f32["5T"], taps: cv.f32[5]):
    return np.convolve(x, taps / taps.sum(), mode="same")


@cv.optimize
def moe_top2(x: cv.f32["T", "D"], gate: cv.f32["E", "D"], w_in: cv.f32["E", "F", "D"],
             w_out: cv.f32["E", "D", "F"]):
    # Mixtral-style routing: the two best experts per token, their softmaxed gate weights
    logits = x @ gate.T
    top = np.argsort(logits, axis=-1)[:, -2:]
    g = np.take_along_axis(logits, top, axis=-1)
    g = np.exp(g - g.max(axis=-1, keepdims=True))
    g = g / g.sum(axis=-1, keepdims=True)
    h = np.einsum("td,tkfd->tkf", x, w_in[top])
    h = h / (1.0 + np.exp(-h))
    y = np.einsum("tkf,tkdf->tkd", h, w_out[top])
    return (y * g[..., None]).sum(axis=1)
