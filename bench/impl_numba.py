"""The models as Numba code: loops over rows (prange), matmuls through Numba's BLAS call.

Compiled with ``njit(fastmath=False, parallel=...)`` by ``build``; float32 constants keep
the arithmetic in float32 as in the NumPy model.
"""

import numba
import numpy as np
from numba import prange

F = np.float32
ONE, HALF, QUARTER = F(1.0), F(0.5), F(0.25)
EPS, K0, K1 = F(1e-5), F(0.7978845608028654), F(0.044715)
NEG_INF = F(-np.inf)


@numba.njit(fastmath=False, inline="always")
def _sig(v):
    return ONE / (ONE + np.exp(-v))


def matmul_relu(x, w, b):
    t = x @ w
    for i in prange(t.shape[0]):
        for j in range(t.shape[1]):
            v = t[i, j] + b[j]
            t[i, j] = v if v > 0 else F(0)
    return t


def lstm_step(x, h, c, wx, wh, b):
    gates = x @ wx + h @ wh
    n = h.shape[1]
    h2, c2 = np.empty_like(c), np.empty_like(c)
    for r in prange(gates.shape[0]):
        for j in range(n):
            gi = _sig(gates[r, j] + b[j])
            gf = _sig(gates[r, n + j] + b[n + j])
            gg = np.tanh(gates[r, 2 * n + j] + b[2 * n + j])
            go = _sig(gates[r, 3 * n + j] + b[3 * n + j])
            cc = gf * c[r, j] + gi * gg
            c2[r, j] = cc
            h2[r, j] = go * np.tanh(cc)
    return h2, c2


def resnet_head(fmap, w, b):
    nb, nc = fmap.shape[0], fmap.shape[1]
    pooled = np.empty((nb, nc), np.float32)
    for i in prange(nb):
        for ch in range(nc):
            s = F(0)
            for p in range(fmap.shape[2]):
                for q in range(fmap.shape[3]):
                    s += fmap[i, ch, p, q]
            pooled[i, ch] = s / F(fmap.shape[2] * fmap.shape[3])
    t = pooled @ w
    for i in prange(nb):
        m = NEG_INF
        for j in range(t.shape[1]):
            t[i, j] += b[j]
            m = max(m, t[i, j])
        s = F(0)
        for j in range(t.shape[1]):
            t[i, j] = np.exp(t[i, j] - m)
            s += t[i, j]
        for j in range(t.shape[1]):
            t[i, j] /= s
    return t


def ffn_block(x, g, beta, w1, b1, w2, b2):
    nt, d = x.shape
    hn = np.empty_like(x)
    for t in prange(nt):
        mu = F(0)
        for k in range(d):
            mu += x[t, k]
        mu /= F(d)
        var = F(0)
        for k in range(d):
            dv = x[t, k] - mu
            var += dv * dv
        sd = np.sqrt(var / F(d) + EPS)
        for k in range(d):
            hn[t, k] = (x[t, k] - mu) / sd * g[k] + beta[k]
    a = hn @ w1
    for t in prange(nt):
        for j in range(a.shape[1]):
            v = a[t, j] + b1[j]
            a[t, j] = HALF * v * (ONE + np.tanh(K0 * (v + K1 * v * v * v)))
    y = a @ w2
    for t in prange(nt):
        for k in range(d):
            y[t, k] += x[t, k] + b2[k]
    return y


def elementwise_chain(x, y):
    out = np.empty_like(x)
    for i in prange(x.shape[0]):
        out[i] = np.tanh(x[i] * HALF + y[i]) * _sig(y[i]) - abs(x[i]) * QUARTER
    return out


def softmax(x):
    out = np.empty_like(x)
    for i in prange(x.shape[0]):
        m = NEG_INF
        for j in range(x.shape[1]):
            m = max(m, x[i, j])
        s = F(0)
        for j in range(x.shape[1]):
            out[i, j] = np.exp(x[i, j] - m)
            s += out[i, j]
        for j in range(x.shape[1]):
            out[i, j] /= s
    return out


def add(x, y):
    return x + y


def build(model: str, parallel: bool):
    """The model compiled as the benchmark runs it."""
    return numba.njit(fastmath=False, parallel=parallel)(globals()[model])

