"""The native runtime cuvil_aot.runtime.native: CPU levels, the pool, GEMM vs NumPy."""

from __future__ import annotations

import os
import threading
import time
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cuvil_aot.runtime import native as rt

DETECTED = rt.info()["detected_cpu_level"]
LEVELS = list(range(1, DETECTED + 1))
V3 = {"avx", "avx2", "fma", "bmi1", "bmi2", "f16c", "lzcnt", "movbe"}
V4 = {"avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"}


@pytest.fixture(autouse=True)
def _restore_config():
    yield
    rt.configure(num_threads=0, cpu_level=0)


# ---- CPU levels --------------------------------------------------------------


def test_info_is_sane():
    info = rt.info()
    assert 1 <= info["cpu_level"] <= info["detected_cpu_level"] <= 4
    assert info["num_threads"] >= 1
    assert all(isinstance(f, str) for f in info["features"])
    feats = set(info["features"])
    if info["detected_cpu_level"] >= 3:
        assert feats >= V3
    if info["detected_cpu_level"] >= 4:
        assert feats >= V4
    if "avx512f" not in feats:
        assert info["detected_cpu_level"] <= 3
    for device in info["cuda_devices"]:  # those the runtime has opened: none without a GPU
        assert set(device) == {"device", "compute_capability", "sm_count", "images"}


def test_cpu_level_only_lowers():
    for level in LEVELS:
        rt.configure(cpu_level=level)
        assert rt.info()["cpu_level"] == level
    rt.configure(cpu_level=0)
    assert rt.info()["cpu_level"] == DETECTED
    with pytest.raises(ValueError):
        rt.configure(cpu_level=5)
    with pytest.raises(ValueError):
        rt.configure(num_threads=-1)


def test_capsule_is_exported():
    assert type(rt._C_API).__name__ == "PyCapsule"
    assert "cuvil_aot.runtime.native._C_API" in repr(rt._C_API)


# ---- the pool ----------------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(n=st.integers(0, 20000) | st.sampled_from([0, 1, 2, 3, 7, 64]), grain=st.integers(-1, 25000))
def test_parallel_for_covers_each_index_once(n, grain):
    once, nthreads = rt._parallel_check(n, grain)
    assert once == n
    assert nthreads <= rt.info()["num_threads"]
    if n == 0:
        assert nthreads == 0
    if 0 < n <= max(grain, 1):
        assert nthreads == 1  # inline on the caller


@pytest.mark.parametrize("threads", [1, 2, 3, 5])
def test_num_threads_resizes(threads):
    rt.configure(num_threads=threads)
    assert rt.info()["num_threads"] == threads
    for _ in range(20):
        once, seen = rt._parallel_check(1_000_000, 1)
        assert once == 1_000_000
        assert seen <= threads
        if seen == threads:
            break
    if threads <= len(os.sched_getaffinity(0)):
        assert seen == threads


def test_concurrent_callers():
    errors: list[str] = []

    def worker(seed: int) -> None:
        rng = np.random.default_rng(seed)
        for _ in range(200):
            n, grain = int(rng.integers(0, 50000)), int(rng.integers(1, 500))
            once, _ = rt._parallel_check(n, grain)
            if once != n:
                errors.append(f"n={n} grain={grain}: {once} covered once")

    threads = [threading.Thread(target=worker, args=(s,)) for s in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


def test_pool_works_in_forked_child():
    rt._parallel_check(1_000_000, 1)  # make sure the workers exist
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # fork with threads
        pid = os.fork()
    if pid == 0:
        ok = all(rt._parallel_check(n, 1)[0] == n for n in (10, 100_000, 1_000_000))
        os._exit(0 if ok else 1)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            assert os.waitstatus_to_exitcode(status) == 0
            return
        time.sleep(0.01)
    os.kill(pid, 9)
    os.waitpid(pid, 0)
    pytest.fail("parallel_for hung in a forked child")


# ---- GEMM --------------------------------------------------------------------

LAYOUTS = ["c", "t", "neg", "step", "bneg"]


def make(rng, shape, layout, dtype):
    """A random array of `shape` laid out in memory as `layout` says."""
    if layout == "t" and len(shape) >= 2:
        x = rng.uniform(-1, 1, shape[:-2] + shape[::-1][:2]).astype(dtype)
        return x.swapaxes(-1, -2)
    if layout == "neg":
        return rng.uniform(-1, 1, shape).astype(dtype)[..., ::-1, ::-1]
    if layout == "step":
        big = rng.uniform(-1, 1, tuple(2 * s for s in shape)).astype(dtype)
        return big[tuple(slice(None, None, 2) for _ in shape)]
    if layout == "bneg" and len(shape) == 3:
        return rng.uniform(-1, 1, shape).astype(dtype)[::-1]
    return rng.uniform(-1, 1, shape).astype(dtype)


def poisoned(shape, layout, dtype):
    rng = np.random.default_rng(0)
    out = make(rng, shape, layout, dtype)
    out[...] = np.nan
    return out


def tolerance(a, b, dtype):
    """Error bound of a k-term dot product in `dtype`, elementwise."""
    eps = np.finfo(dtype).eps
    k = a.shape[-1]
    return 2 * (k + 2) * eps * (np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64)))


def check(out, pairs, dtype):
    want = sum(a.astype(np.float64) @ b.astype(np.float64) for a, b in pairs)
    tol = sum(tolerance(a, b, dtype) for a, b in pairs)
    want = np.broadcast_to(want, out.shape)
    assert not np.isnan(out).any(), "elements left unwritten"
    assert (np.abs(out - want) <= tol + 1e-30).all(), np.abs(out - want).max()


def run(pairs, out):
    (a, b), more = pairs[0], pairs[1:]
    calls, overwrites, rows, cols = rt._gemm(a, b, out, more=more)
    assert overwrites == 0, "an element was stored by two epilogue calls"
    assert (calls == 0) == (out.size == 0)
    return calls, rows, cols


dims = st.integers(0, 40) | st.sampled_from([1, 2, 15, 16, 17, 31, 33, 64, 65, 97, 130])


@st.composite
def gemm_cases(draw):
    dtype = draw(st.sampled_from([np.float32, np.float64]))
    m, k, n = draw(dims), draw(dims), draw(dims)
    batch = draw(st.sampled_from([None, 1, 2, 3]))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)

    def operand(shape):
        if batch is None:
            return make(rng, shape, draw(st.sampled_from(LAYOUTS)), dtype)
        lead = draw(st.sampled_from([(), (1,), (batch,)]))
        return make(rng, lead + shape, draw(st.sampled_from(LAYOUTS)), dtype)

    nterms = draw(st.sampled_from([1, 1, 1, 2, 3]))
    pairs = []
    for t in range(nterms):
        kt = k if t == 0 else draw(dims)
        pairs.append((operand((m, kt)), operand((kt, n))))
    oshape = (m, n) if batch is None else (batch, m, n)
    out = poisoned(oshape, draw(st.sampled_from(["c", "t", "neg", "step"])), dtype)
    return pairs, out, dtype


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=gemm_cases(), level=st.sampled_from(LEVELS))
def test_gemm_matches_numpy(case, level):
    pairs, out, dtype = case
    if out.ndim == 2 and any(x.ndim == 3 for p in pairs for x in p):
        out = poisoned((1,) + out.shape, "c", dtype)
    rt.configure(cpu_level=level)
    run(pairs, out)
    check(out, pairs, dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize(
    "m,k,n",
    [
        (1, 512, 2048),
        (3, 300, 1000),
        (16, 700, 129),
        (9, 1100, 300),  # rows kernel: B past RG_CACHED, m >= 2 RMAX: RG_MANY-row blocks
        (6, 1100, 300),  # the same with m < 2 RMAX: RG-row blocks
        (14, 1037, 280),  # the same, row groups of 4, 4, 4, 2 and k % 32 rows left
        (4, 1100, 300),  # B past RG_CACHED, m = RMAX: RG-row blocks
        (1, 3001, 300),  # one row, B past RG_CACHED in short runs: rows_stream, k % 8 rows left
        (32, 128, 64),  # tiny: small-m path in two row groups
        (27, 200, 150),  # tiny: row groups of 16 and 11
        (24, 1100, 300),  # not tiny, up to 32 rows: small-m path in one row group
        (32, 300, 1000),  # the same at 32 rows, B in several column chunks
        (30, 100, 8),  # tiny and narrower than a column group: the packed path
        (200, 1100, 300),
        (40, 300, 768),  # packed, 3 column units (float32) made 4: every thread two
        (150, 64, 1280),  # the same, 5 made 6 (float64: 10 units)
        (40, 300, 384),  # float64: 3 column units made 4
        (600, 70, 90),
        (37, 9, 5000),
    ],
)
def test_gemm_crosses_blocks(dtype, level, m, k, n):
    """Shapes that span several cache blocks in every dimension and both paths."""
    rng = np.random.default_rng(m * 7 + k * 3 + n)
    rt.configure(cpu_level=level)
    for la, lb in [("c", "c"), ("c", "t"), ("t", "t"), ("neg", "step")]:
        a, b = make(rng, (m, k), la, dtype), make(rng, (k, n), lb, dtype)
        out = poisoned((m, n), "c", dtype)
        run([(a, b)], out)
        check(out, [(a, b)], dtype)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(m=st.integers(33, 256), k=st.sampled_from([1, 7, 64, 300, 1100]),
       n=st.sampled_from([64, 128, 192, 768, 2304]), batch=st.sampled_from([0, 2]),
       b_rows=st.sampled_from(["own", "wide", "per_batch"]), threads=st.sampled_from([1, 2, 3]),
       dtype=st.sampled_from([np.float32, np.float64]), level=st.sampled_from(LEVELS),
       seed=st.integers(0, 2**32 - 1))
def test_gemm_of_33_to_256_rows_and_b_by_rows(m, k, n, batch, b_rows, threads, dtype, level,
                                              seed):
    """33 to 256 rows (batches included, a prefill's x @ w), B's columns contiguous (a row
    slice of a wider array too), B shared by the batches or one per batch, k across
    blocks, a short last row panel: the same result as NumPy within a dot product's
    error."""
    rng = np.random.default_rng(seed)
    rt.configure(cpu_level=level, num_threads=threads)
    try:
        lead = (batch,) if batch else ()
        if lead and m * batch > 256:
            m = 256 // batch
        a = make(rng, lead + (m, k), "c", dtype)
        b_lead = lead if b_rows == "per_batch" else ()
        full = make(rng, b_lead + (k, 2 * n if b_rows == "wide" else n), "c", dtype)
        b = full[..., :n]
        out = poisoned(lead + (m, n), "c", dtype)
        run([(a, b)], out)
        check(out, [(a, b)], dtype)
    finally:
        rt.configure(num_threads=0)


@pytest.mark.parametrize("threads", [1, 2, 3, 4, 5])
@pytest.mark.parametrize("m,k,n", [(40, 300, 768), (150, 64, 1280), (40, 70, 33), (33, 5, 3000),
                                   (128, 64, 2304)])
def test_gemm_units_balanced_over_any_thread_count(threads, m, k, n):
    """The packed path's column units, rebalanced over the thread count (fewer than 16 a
    thread and not a multiple of it: 9 units of 2304 columns on 2 threads), cover every
    column once with 1 to 5 threads."""
    rng = np.random.default_rng(m + k + n + threads)
    rt.configure(num_threads=threads)
    try:
        for dtype in (np.float32, np.float64):
            a, b = make(rng, (m, k), "c", dtype), make(rng, (k, n), "t", dtype)
            out = poisoned((m, n), "c", dtype)
            run([(a, b)], out)
            check(out, [(a, b)], dtype)
    finally:
        rt.configure(num_threads=0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("level", LEVELS)
def test_gemm_one_row_streamed_in_two_terms(dtype, level):
    """x @ wx + h @ wh at one row with B in short runs past RG_CACHED: the
    second term adds to the first's sums (rows_stream accumulating)."""
    rng = np.random.default_rng(7)
    rt.configure(cpu_level=level)
    pairs = [
        (make(rng, (1, k), la, dtype), make(rng, (k, 333), "c", dtype))
        for k, la in [(2100, "c"), (1703, "t")]
    ]
    out = poisoned((1, 333), "c", dtype)
    run(pairs, out)
    check(out, pairs, dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("m,n", [(1, 640), (4, 320), (6, 640), (2, 300)])
def test_gemm_b_at_every_misalignment(dtype, level, m, n):
    """B starting anywhere in a 64-byte line: the rows kernel's masked lead
    columns (rows of n * itemsize a multiple of 64 bytes) and its absence."""
    rng = np.random.default_rng(m * 1000 + n)
    rt.configure(cpu_level=level)
    size = np.dtype(dtype).itemsize
    k = 150
    a = make(rng, (m, k), "c", dtype)
    buf = rng.uniform(-1, 1, k * n + 64).astype(dtype)
    base = (-buf.ctypes.data % 64) // size
    for off in range(0, 64 // size):
        b = buf[base + off : base + off + k * n].reshape(k, n)
        out = poisoned((m, n), "c", dtype)
        run([(a, b)], out)
        check(out, [(a, b)], dtype)


@settings(max_examples=60, deadline=None)
@given(m=st.integers(1, 32), k=st.integers(1, 2600), n=st.integers(1, 70),
       a_rows=st.sampled_from([1, 3]), b_cols=st.sampled_from([1, 2]),
       level=st.sampled_from(LEVELS), seed=st.integers(0, 2**32 - 1))
def test_gemm_dots_kernel_matches_numpy(m, k, n, a_rows, b_cols, level, seed):
    """x @ W.T with few rows, the small-m dots kernel (A with unit column stride, B with
    unit row stride): row blocks of 4 and a rest, k blocks past CV_DOTS_WS, the prefetch of
    later columns from more than 4 rows, every column-block remainder; A every a_rows-th
    row of a larger array, W every b_cols-th row."""
    rng = np.random.default_rng(seed)
    rt.configure(cpu_level=level)
    for dtype in (np.float32, np.float64):
        a = rng.uniform(-1, 1, (m * a_rows, k)).astype(dtype)[::a_rows]
        b = rng.uniform(-1, 1, (n * b_cols, k)).astype(dtype)[::b_cols].T
        out = poisoned((m, n), "c", dtype)
        run([(a, b)], out)
        check(out, [(a, b)], dtype)


def test_gemm_from_many_threads_while_resizing():
    """Concurrent GEMMs (small-m and packed paths) while the pool is resized."""
    errors: list[str] = []
    stop = threading.Event()

    def worker(seed: int) -> None:
        rng = np.random.default_rng(seed)
        while not stop.is_set():
            m = int(rng.choice([1, 5, 40, 300]))
            k, n = int(rng.integers(1, 300)), int(rng.integers(1, 700))
            a, b = make(rng, (m, k), "c", np.float32), make(rng, (k, n), "c", np.float32)
            out = poisoned((m, n), "c", np.float32)
            rt._gemm(a, b, out)
            want = a.astype(np.float64) @ b.astype(np.float64)
            if not (np.abs(out - want) <= tolerance(a, b, np.float32) + 1e-30).all():
                errors.append(f"{m}x{k}x{n}")

    threads = [threading.Thread(target=worker, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for nt in [1, 3, 2, 0, 4, 1, 0] * 3:
        rt.configure(num_threads=nt)
        time.sleep(0.02)
    stop.set()
    for t in threads:
        t.join()
    assert not errors


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gemm_k_zero_gives_zeros(dtype):
    a, b = np.ones((5, 0), dtype), np.ones((0, 7), dtype)
    out = poisoned((5, 7), "c", dtype)
    run([(a, b)], out)
    assert (out == 0).all()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gemm_propagates_nan_and_inf(dtype):
    rng = np.random.default_rng(5)
    a, b = make(rng, (9, 40), "c", dtype), make(rng, (40, 70), "c", dtype)
    a[2, 3], a[4, 5], b[6, 7] = np.nan, np.inf, -np.inf
    out = poisoned((9, 70), "c", dtype)
    rt._gemm(a, b, out)
    # Every product as IEEE arithmetic says (0 * inf is NaN): not BLAS, which may skip
    # zero multipliers, and without the "invalid value" warnings NaN sums raise.
    with np.errstate(invalid="ignore", over="ignore"):
        want = (a.astype(np.float64)[:, :, None] * b.astype(np.float64)[None, :, :]).sum(axis=1)
    np.testing.assert_array_equal(np.isnan(out), np.isnan(want))
    np.testing.assert_array_equal(np.isinf(out), np.isinf(want))
    fin = np.isfinite(want)
    assert np.allclose(out[fin], want[fin], rtol=1e-4, atol=1e-4)


def test_gemm_rejects_bad_arguments():
    f4, f8 = np.ones((3, 4), np.float32), np.ones((4, 5), np.float64)
    with pytest.raises(TypeError):
        rt._gemm(f4, f8, np.empty((3, 5), np.float32))
    with pytest.raises(ValueError):
        rt._gemm(f4, np.ones((3, 5), np.float32), np.empty((3, 5), np.float32))
    with pytest.raises(TypeError):
        rt._gemm(np.ones((3, 4), np.int32), np.ones((4, 5), np.int32), np.empty((3, 5), np.int32))
    with pytest.raises((ValueError, BufferError)):
        ro = np.empty((3, 5), np.float32)
        ro.flags.writeable = False
        rt._gemm(f4, np.ones((4, 5), np.float32), ro)
