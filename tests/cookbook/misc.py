"""Everything else: MLP heads, losses, one-hot, cumulative sums, distances, a causal
depthwise convolution."""

import numpy as np

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
