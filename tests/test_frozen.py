"""Frozen weights (cuvil_aot.freeze, native/src/frozen.c): a read-only copy nothing can make
writable, whose packed GEMM panels are made at the first product and kept. Every result is
checked against float64 on fresh random operands with the output poisoned first; the
packed forms are counted to show the kept panels are the ones read."""

from __future__ import annotations

import gc
import threading

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cuvil_aot as cv
from cuvil_aot.frozen import is_frozen
from cuvil_aot.runtime import native as rt

DETECTED = rt.info()["detected_cpu_level"]
LEVELS = list(range(1, DETECTED + 1))


def owner(a: np.ndarray) -> object:
    while isinstance(a, np.ndarray):
        a = a.base
    return a


def forms(a: np.ndarray) -> int:
    return owner(a).forms  # type: ignore[attr-defined]


def view(frozen: np.ndarray, layout: str) -> np.ndarray:
    """A k x n operand read from a frozen buffer in another layout."""
    return {"c": frozen, "t": frozen.T, "neg": frozen[::-1, ::-1],
            "step": frozen[::2, 1::2], "cut": frozen[3:, 2:-1]}[layout]


def bound(pairs: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """The float64 sum of the products, and the error bound of k-term float dot products."""
    want = sum(a.astype(np.float64) @ b.astype(np.float64) for a, b in pairs)
    tol = sum(2 * (a.shape[-1] + 2) * np.finfo(a.dtype).eps
              * (np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64))) for a, b in pairs)
    return want, tol


def gemm(pairs: list[tuple[np.ndarray, np.ndarray]], shape: tuple[int, ...]) -> np.ndarray:
    out = np.full(shape, np.nan, pairs[0][0].dtype)
    (a, b), more = pairs[0], pairs[1:]
    calls, overwrites, _, _ = rt._gemm(a, b, out, more=more)
    assert overwrites == 0
    return out


def check(out: np.ndarray, pairs: list[tuple[np.ndarray, np.ndarray]]) -> None:
    want, tol = bound(pairs)
    assert not np.isnan(out).any(), "elements left unwritten"
    assert (np.abs(out - want) <= tol + 1e-30).all(), np.abs(out - want).max()


def test_a_frozen_copy_is_equal_read_only_and_stays_so() -> None:
    w = np.random.default_rng(1).standard_normal((33, 70)).astype(np.float32)
    f = cv.freeze(w[:, ::2])
    assert is_frozen(f) and is_frozen(f.T[1:]) and not is_frozen(w)
    assert np.array_equal(f, w[:, ::2]) and f.flags.c_contiguous
    for v in (f, f.T, f[1:]):
        with pytest.raises(ValueError, match="read-only"):
            v[0, 0] = 1.0
        with pytest.raises(ValueError, match="WRITEABLE"):
            v.flags.writeable = True
    with pytest.raises(TypeError, match="read-only"):
        memoryview(owner(f)).cast("B")[0:1] = b"\0"  # type: ignore[arg-type]
    assert cv.freeze(f) is f
    assert cv.freeze([1.0, 2.0]).tolist() == [1.0, 2.0]
    for a in (np.float64(2.5), np.zeros((0, 3), np.float32), np.asfortranarray(w[:3, :4]),
              np.array([True, False]), np.arange(6, dtype=np.int8).reshape(2, 3)):
        f = cv.freeze(a)
        assert f.shape == np.shape(a) and f.dtype == a.dtype and np.array_equal(f, a)
    with pytest.raises(TypeError, match="numbers"):
        cv.freeze(np.array([object()]))


dims = st.sampled_from([1, 2, 7, 16, 31, 33, 64, 65, 97, 130])


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(dtype=st.sampled_from([np.float32, np.float64]), m=st.sampled_from([1, 5, 33, 70, 200]),
       k=dims, n=dims, layout=st.sampled_from(["c", "t", "neg", "step", "cut"]),
       two=st.booleans(), batch=st.sampled_from([None, 3]), level=st.sampled_from(LEVELS),
       seed=st.integers(0, 2**32 - 1))
def test_products_with_frozen_b_match_float64_call_after_call(dtype, m, k, n, layout, two,
                                                              batch, level, seed) -> None:
    rng = np.random.default_rng(seed)
    grow = {"c": (0, 0), "t": (0, 0), "neg": (0, 0), "step": (k, n + 1), "cut": (3, 3)}[layout]
    shape = (n, k) if layout == "t" else (k + grow[0], n + grow[1])
    b = view(cv.freeze(rng.uniform(-1, 1, shape).astype(dtype)), layout)
    assert b.shape == (k, n)
    lead = () if batch is None else (batch,)
    pairs = [(rng.uniform(-1, 1, lead + (m, k)).astype(dtype), b)]
    if two:  # a second term of an ordinary B: packed per call beside the kept one
        pairs.append((rng.uniform(-1, 1, lead + (m, 9)).astype(dtype),
                      rng.uniform(-1, 1, (9, n)).astype(dtype)))
    rt.configure(cpu_level=level)
    try:
        for _ in range(2):
            check(gemm(pairs, lead + (m, n)), pairs)
    finally:
        rt.configure(cpu_level=0)
    assert forms(b) == 1 if m > 32 else forms(b) <= 1  # from 33 rows the packed path


def test_the_packed_form_is_made_once_and_read_after() -> None:
    rng = np.random.default_rng(2)
    a = rng.uniform(-1, 1, (128, 300)).astype(np.float32)
    w = cv.freeze(rng.uniform(-1, 1, (300, 500)).astype(np.float32))
    pairs = [(a, w)]
    assert forms(w) == 0
    first = gemm(pairs, (128, 500))
    assert forms(w) == 1
    assert np.array_equal(gemm(pairs, (128, 500)), first)  # same panels, same sums
    check(first, pairs)
    other = [(a[:, :200], w[:200][::-1])]
    check(gemm(other, (128, 500)), other)
    assert forms(w) == 2  # another view: another form
    few = [(a[:8], w)]  # 8 rows: the dots kernel on w's transpose, kept too
    check(gemm(few, (8, 500)), few)
    assert forms(w) == 3
    check(gemm(few, (8, 500)), few)
    one = [(a[:1], w)]  # 1 row: the rows kernel reads w in place
    check(gemm(one, (1, 500)), one)
    few_t = [(rng.uniform(-1, 1, (4, 500)).astype(np.float32), w.T)]  # read in place
    check(gemm(few_t, (4, 300)), few_t)
    assert forms(w) == 3


def test_a_new_buffer_at_a_freed_ones_address_gets_its_own_panels() -> None:
    rng = np.random.default_rng(3)
    a = rng.uniform(-1, 1, (96, 256)).astype(np.float32)
    seen = set()
    for _ in range(6):  # freed and made again: the allocator often hands back the address
        w = cv.freeze(rng.uniform(-1, 1, (256, 256)).astype(np.float32))
        seen.add(w.ctypes.data)
        check(gemm([(a, w)], (96, 256)), [(a, w)])
        del w
        gc.collect()
    assert seen


def test_threads_making_the_same_form_at_once_agree() -> None:
    rng = np.random.default_rng(4)
    w = cv.freeze(rng.uniform(-1, 1, (512, 384)).astype(np.float32))
    inputs = [rng.uniform(-1, 1, (64, 512)).astype(np.float32) for _ in range(6)]
    outs: list[np.ndarray | None] = [None] * len(inputs)

    def work(i: int) -> None:
        outs[i] = gemm([(inputs[i], w)], (64, 384))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(inputs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for x, out in zip(inputs, outs):
        assert out is not None
        check(out, [(x, w)])
    assert forms(w) == 1


SOURCE = """
import numpy as np
import cuvil_aot as cv
from cuvil_aot import f32

@cv.optimize
def linear(x: f32["m", "k"], w: f32["k", "n"], b: f32["n"]):
    return np.maximum(x @ w + b, 0.0)

@cv.optimize
def linear_t(x: f32["m", "k"], w: f32["n", "k"]):
    return x @ w.T

@cv.optimize
def bump(w: f32["k", "n"]):
    w[0] += 1.0
    return w
"""


def test_compiled_functions_read_frozen_weights(compiled) -> None:
    rng = np.random.default_rng(5)
    x = rng.standard_normal((128, 200)).astype(np.float32)
    w = rng.standard_normal((200, 300)).astype(np.float32)
    b = rng.standard_normal(300).astype(np.float32)
    fw = cv.freeze(w)
    want = np.maximum(x.astype(np.float64) @ w + b, 0.0)
    for _ in range(3):
        np.testing.assert_allclose(compiled.linear(x, fw, b), want, rtol=1e-4, atol=1e-4)
    assert forms(fw) == 1
    np.testing.assert_allclose(compiled.linear_t(x, fw.T), x.astype(np.float64) @ w,
                               rtol=1e-4, atol=1e-4)
    with pytest.raises(ValueError, match="read-only"):
        compiled.bump(fw)
    assert np.array_equal(fw, w)


def test_a_models_parameters_freeze_in_one_call(compiled) -> None:
    """A dict, or a list or tuple holding arrays (named, nested), comes back as the same
    structure, its NumPy arrays frozen and everything else as it was (a list of numbers
    is an array, as for np.asarray); the frozen weights then run compiled."""
    from collections import namedtuple

    rng = np.random.default_rng(6)
    Layer = namedtuple("Layer", "w b")
    w = rng.standard_normal((200, 300)).astype(np.float32)
    b = rng.standard_normal(300).astype(np.float32)
    params = {"layers": [Layer(w, b), (w.T, 3)], "n_head": 12, "name": "gpt2", "none": None,
              "sizes": [1, 2]}
    frozen = cv.freeze(params)
    assert type(frozen) is dict and list(frozen) == list(params)
    first, second = frozen["layers"]
    assert type(frozen["layers"]) is list and type(first) is Layer and type(second) is tuple
    assert all(is_frozen(a) for a in (first.w, first.b, second[0]))
    assert np.array_equal(first.w, w) and np.array_equal(second[0], w.T)
    assert (second[1], frozen["n_head"], frozen["name"], frozen["none"]) == (3, 12, "gpt2", None)
    assert frozen["sizes"] == [1, 2] and type(frozen["sizes"]) is list
    pair = cv.freeze((w, b))
    assert type(pair) is tuple and all(is_frozen(a) for a in pair)
    assert not is_frozen(w) and params["layers"][0].w is w  # the input is left alone
    x = rng.standard_normal((128, 200)).astype(np.float32)
    want = np.maximum(x.astype(np.float64) @ w + b, 0.0)
    np.testing.assert_allclose(compiled.linear(x, *first), want, rtol=1e-4, atol=1e-4)
    assert forms(first.w) == 1
    with pytest.raises(TypeError, match="numbers"):
        cv.freeze([np.array([object()])])
