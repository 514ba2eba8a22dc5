"""Recurrent cells: GRU and LSTM (PyTorch's gate layout), a short unrolled RNN."""

# ruff: noqa: F722 - dims like "3H" read to pyflakes as broken forward annotations

import numpy as np

import cuvil_aot as cv

STEPS = 4


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


@cv.optimize
def gru_cell(x: cv.f32["B", "I"], h: cv.f32["B", "H"], w_ih: cv.f32["I", "3H"],
             w_hh: cv.f32["H", "3H"], b_ih: cv.f32["3H"], b_hh: cv.f32["3H"]):
    gi = x @ w_ih + b_ih
    gh = h @ w_hh + b_hh
    i_r, i_z, i_n = np.split(gi, 3, axis=1)
    h_r, h_z, h_n = np.split(gh, 3, axis=1)
    r = sigmoid(i_r + h_r)
    z = sigmoid(i_z + h_z)
    n = np.tanh(i_n + r * h_n)
    return (1 - z) * n + z * h


@cv.optimize
def lstm_cell(x: cv.f32["B", "I"], h: cv.f32["B", "H"], c: cv.f32["B", "H"],
              w_ih: cv.f32["I", "4H"], w_hh: cv.f32["H", "4H"], b: cv.f32["4H"]):
    gates = x @ w_ih + h @ w_hh + b
    i, f, g, o = np.split(gates, 4, axis=-1)
    i, f, o = sigmoid(i), sigmoid(f), sigmoid(o)
    c_next = f * c + i * np.tanh(g)
    h_next = o * np.tanh(c_next)
    return h_next, c_next


@cv.optimize
def lstm_cell_sliced(x: cv.f32["B", "I"], h: cv.f32["B", "H"], c: cv.f32["B", "H"],
                     w: cv.f32["I+H", "4H"], b: cv.f32["4H"]):
    hidden = h.shape[1]
    z = np.concatenate([x, h], axis=1) @ w + b
    i = sigmoid(z[:, :hidden])
    f = sigmoid(z[:, hidden:2 * hidden])
    g = np.tanh(z[:, 2 * hidden:3 * hidden])
    o = sigmoid(z[:, 3 * hidden:])
    c = f * c + i * g
    return o * np.tanh(c), c


@cv.optimize
def elman_rnn_unrolled(xs: cv.f32["B", 4, "I"], h0: cv.f32["B", "H"],
                       w_xh: cv.f32["I", "H"], w_hh: cv.f32["H", "H"], b: cv.f32["H"]):
    h = h0
    outputs = []
    for t in range(STEPS):
        h = np.tanh(xs[:, t] @ w_xh + h @ w_hh + b)
        outputs.append(h)
    return np.stack(outputs, axis=1), h


@cv.optimize
def rnn_over_time(xs: cv.f32["B", "T", "I"], h0: cv.f32["B", "H"],
                  w_xh: cv.f32["I", "H"], w_hh: cv.f32["H", "H"]):
    h = h0
    for t in range(xs.shape[1]):
        h = np.tanh(xs[:, t, :] @ w_xh + h @ w_hh)
    return h
