"""Decoding: greedy steps and a greedy loop storing its tokens, temperature, top-k
(argpartition and sort), Gumbel-max sampling with given noise, repetition penalty, beam
candidates."""

import numpy as np

import cuvil_aot as cv

BEAM = 2


def softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def log_softmax(x, axis=-1):
    x = x - x.max(axis=axis, keepdims=True)
    return x - np.log(np.exp(x).sum(axis=axis, keepdims=True))


@cv.optimize
def greedy_step(hidden: cv.f32["B", "D"], lm_head: cv.f32["D", "V"]):
    logits = hidden @ lm_head
    return np.argmax(logits, axis=-1)


@cv.optimize
def greedy_last_token(hidden: cv.f32["B", "T", "D"], lm_head: cv.f32["D", "V"]):
    logits = hidden[:, -1, :] @ lm_head
    next_token = logits.argmax(-1)
    return next_token, logits.max(-1)


@cv.optimize
def temperature_softmax(logits: cv.f32["B", "V"], temperature: float):
    return softmax(logits / temperature)


@cv.optimize
def top_k_filter_argpartition(logits: cv.f32["B", "V"], k: int):
    idx = np.argpartition(logits, -k, axis=-1)[:, -k:]
    kth = np.take_along_axis(logits, idx, axis=-1).min(axis=-1, keepdims=True)
    return np.where(logits < kth, -np.inf, logits)


@cv.optimize
def top_k_filter_sort(logits: cv.f32["B", "V"], k: int):
    kth = np.sort(logits, axis=-1)[:, -k][:, None]
    return np.where(logits < kth, -np.inf, logits)


@cv.optimize
def top_k_probs(logits: cv.f32["B", "V"]):
    top = np.sort(logits, axis=-1)[:, ::-1][:, :BEAM]
    return softmax(top)


@cv.optimize
def gumbel_max_sample(logits: cv.f32["B", "V"], u: cv.f32["B", "V"], temperature: float):
    gumbel = -np.log(-np.log(u))
    return np.argmax(logits / temperature + gumbel, axis=-1)


@cv.optimize
def repetition_penalty(logits: cv.f32["B", "V"], prev_ids: cv.i64["B", "S"],
                       penalty: float):
    rows = np.arange(logits.shape[0])[:, None]
    score = logits[rows, prev_ids]
    score = np.where(score < 0, score * penalty, score / penalty)
    logits[rows, prev_ids] = score
    return logits


@cv.optimize
def beam_candidates(logits: cv.f32["B", "V"], beam_scores: cv.f32["B"]):
    vocab = logits.shape[-1]
    scores = log_softmax(logits) + beam_scores[:, None]
    flat = scores.reshape(1, -1)
    best = np.argsort(flat, axis=-1)[:, ::-1][:, :BEAM]
    return best // vocab, best % vocab, np.take_along_axis(flat, best, axis=-1)


@cv.optimize
def greedy_generate(h: cv.f32["B", "D"], emb: cv.f32["V", "D"], w_h: cv.f32["D", "D"],
                    lm_head: cv.f32["D", "V"], out_ids: cv.i64["B", "S"]):
    for t in range(out_ids.shape[1]):
        ids = np.argmax(h @ lm_head, axis=-1)
        out_ids[:, t] = ids
        h = np.tanh(emb[ids] + h @ w_h)
    return out_ids, h
