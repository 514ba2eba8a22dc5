"""A GPU call's launches replayed as a CUDA graph (native/src/gpu_graph.c) on a real device:
a small transformer layer (six GEMMs, softmax, two layer norms: nine kernels, no
one-kernel) called many times with the same arrays, new arrays each call, its output fed
back (two sets of pointers in turn), on other torch streams, with changing shapes, inside
torch.cuda.graph capture, and with the knob off. Every result against NumPy in float64,
out= arrays poisoned first; native.info()'s counters say which path each call took.

Run on a machine with an NVIDIA GPU (tools/gpu_check.sh); skipped elsewhere."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import assert_close, compile_source
from gpu_harness import device_arch, knob

from cuvil_aot.runtime import native

pytestmark = pytest.mark.gpu

SOURCE = '''
import numpy as np
import cuvil_aot as cv


def _norm(a, g, b):
    mu = a.mean(axis=-1, keepdims=True)
    var = ((a - mu) ** 2).mean(axis=-1, keepdims=True)
    return (a - mu) / np.sqrt(var + 1e-5) * g + b


@cv.optimize
def layer(x: cv.f32["T", "D"], wqkv: cv.f32["D", "3D"], bqkv: cv.f32["3D"],
          wo: cv.f32["D", "D"], w1: cv.f32["D", "F"], b1: cv.f32["F"],
          w2: cv.f32["F", "D"], g1: cv.f32["D"], n1: cv.f32["D"], g2: cv.f32["D"],
          n2: cv.f32["D"]):
    d = x.shape[1]
    qkv = x @ wqkv + bqkv
    q, k, v = qkv[:, :d], qkv[:, d:2 * d], qkv[:, 2 * d:]
    s = q @ k.T * 0.125
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    p = p / p.sum(axis=-1, keepdims=True)
    h = _norm(p @ v @ wo + x, g1, n1)
    f = np.maximum(h @ w1 + b1, 0.0) @ w2
    return _norm(f + h, g2, n2)


@cv.optimize
def attend(x: cv.f32["B", "T", 64], wq: cv.f32[64, 64], bq: cv.f32[64], wk: cv.f32[64, 64],
           bk: cv.f32[64], wv: cv.f32[64, 64], bv: cv.f32[64]):
    b, t = x.shape[0], x.shape[1]

    def heads(a):
        return a.reshape(b, t, 4, 16).transpose(0, 2, 1, 3)

    q = heads(x @ wq.T + bq)
    k = heads(x @ wk.T + bk)
    v = heads(x @ wv.T + bv)
    s = q @ k.transpose(0, 1, 3, 2) * 0.25
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    p = p / p.sum(axis=-1, keepdims=True)
    return (p @ v).transpose(0, 2, 1, 3).reshape(b, t, 64)


def _pair(x, w, v):
    return np.tanh(np.tanh(x @ w) @ v)


@cv.optimize
def deep(x: cv.f32["T", "D"], w: cv.f32["D", "F"], v: cv.f32["F", "D"]):
    return _pair(_pair(_pair(_pair(_pair(_pair(x, w, v), w, v), w, v), w, v), w, v), w, v)
'''
D, F = 64, 256


@pytest.fixture(scope="module")
def mod(tmp_path_factory):
    return compile_source(tmp_path_factory.mktemp("graph"), SOURCE, cuda_archs=(device_arch(),))


@pytest.fixture(autouse=True)
def _graphs_on():
    with knob("cuda_graph", 4):
        yield


@pytest.fixture(scope="module")
def torch():
    return pytest.importorskip("torch")


def stats() -> dict[str, int]:
    return dict(native.info()["cuda_graph_stats"])


def weights(rng: np.random.Generator) -> list[np.ndarray]:
    shapes = [(D, 3 * D), (3 * D,), (D, D), (D, F), (F,), (F, D), (D,), (D,), (D,), (D,)]
    scale = [D ** -0.5, 1, D ** -0.5, D ** -0.5, 1, F ** -0.5, 1, 1, 1, 1]
    return [(rng.standard_normal(s) * c).astype(np.float32) for s, c in zip(shapes, scale)]


def reference(mod, x: np.ndarray, ws: list[np.ndarray]) -> np.ndarray:
    return mod.layer.py_func(*[a.astype(np.float64) for a in [x, *ws]])


def check(mod, got, x: np.ndarray, ws: list[np.ndarray]) -> None:
    got = got.cpu().numpy()
    assert np.isfinite(got).all()
    assert_close(got, reference(mod, x, ws), np.float32, 200)


def test_same_arrays_replay_one_graph(mod, torch):
    rng = np.random.default_rng(0)
    x, ws = rng.standard_normal((16, D)).astype(np.float32), weights(rng)
    dev = [torch.from_numpy(a).cuda() for a in [x, *ws]]
    out = torch.empty((16, D), device="cuda")
    before = stats()
    for _ in range(10):
        out.fill_(float("nan"))  # poisoned
        assert mod.layer(*dev, out=out) is out
        check(mod, out, x, ws)
    after = stats()
    assert after["replays"] - before["replays"] == 9  # built at the second call
    assert after["plain"] - before["plain"] <= 1  # a first call records the structure
    # a second graph where the pool hands the intermediates out in another order
    assert after["builds"] - before["builds"] <= 2


def test_many_intermediates_come_back_at_the_same_addresses(mod, torch):
    """Twelve GEMMs, eleven intermediates of two sizes (more than the spares once held):
    the same arrays call after call get the same scratch blocks back (cv_cuda_scratch's
    spares, the lowest address among equal sizes), so the graph replays with no node
    updated."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((16, D)).astype(np.float32)
    w = (rng.standard_normal((D, F)) * D ** -0.5).astype(np.float32)
    v = (rng.standard_normal((F, D)) * F ** -0.5).astype(np.float32)
    dev = [torch.from_numpy(a).cuda() for a in (x, w, v)]
    out = torch.empty((16, D), device="cuda")
    ref = mod.deep.py_func(*[a.astype(np.float64) for a in (x, w, v)])
    for call in range(10):
        if call == 3:
            before = stats()
        out.fill_(float("nan"))  # poisoned
        assert mod.deep(*dev, out=out) is out
        assert_close(out.cpu().numpy(), ref, np.float32, 200)
    after = stats()
    assert after["replays"] - before["replays"] == 7
    assert after["node_updates"] - before["node_updates"] == 0


def test_new_arrays_each_call_update_the_graph(mod, torch):
    rng = np.random.default_rng(1)
    ws = weights(rng)
    dws = [torch.from_numpy(a).cuda() for a in ws]
    before, keep = stats(), []
    for _ in range(8):
        x = rng.standard_normal((16, D)).astype(np.float32)
        got = mod.layer(torch.from_numpy(x).cuda(), *dws)  # new input, new output
        keep.append(got)  # alive: the allocator cannot hand their memory back
        check(mod, got, x, ws)
    after = stats()
    assert after["replays"] - before["replays"] >= 6
    assert after["node_updates"] > before["node_updates"]


def test_output_fed_back_alternates_two_graphs(mod, torch):
    """x = layer(x): two buffers in turn; a graph for each, replayed with no updates once
    both are built (TWINS in gpu_graph.c), results still each call's own."""
    rng = np.random.default_rng(2)
    ws = weights(rng)
    dws = [torch.from_numpy(a).cuda() for a in ws]
    x = rng.standard_normal((16, D)).astype(np.float32)
    bufs = [torch.from_numpy(x).cuda(), torch.empty((16, D), device="cuda")]
    ref, before = x.astype(np.float64), stats()
    for i in range(12):
        src, dst = bufs[i % 2], bufs[(i + 1) % 2]
        dst.fill_(float("nan"))
        mod.layer(src, *dws, out=dst)
        ref = mod.layer.py_func(ref, *[w.astype(np.float64) for w in ws])
        got = dst.cpu().numpy()
        assert np.isfinite(got).all()
        assert_close(got, ref, np.float32, 2000)  # twelve layers deep
    after = stats()
    assert after["replays"] - before["replays"] >= 10
    assert after["builds"] - before["builds"] <= 2


def test_other_streams(mod, torch):
    rng = np.random.default_rng(3)
    ws = weights(rng)
    dws = [torch.from_numpy(a).cuda() for a in ws]
    streams = [torch.cuda.Stream(), torch.cuda.Stream(), torch.cuda.default_stream()]
    before = stats()
    for i in range(12):
        x = rng.standard_normal((16, D)).astype(np.float32)
        s = streams[i % 3]
        with torch.cuda.stream(s):
            dx = torch.from_numpy(x).to("cuda", non_blocking=False)
            out = torch.full((16, D), float("nan"), device="cuda")
            torch.cuda._sleep(2_000_000)  # the stream's queue stays long
            mod.layer(dx, *dws, out=out)
        s.synchronize()
        check(mod, out, x, ws)
    for i in range(4):  # stream= of the call
        x = rng.standard_normal((16, D)).astype(np.float32)
        s = streams[i % 2]
        dx = torch.from_numpy(x).cuda()
        torch.cuda.synchronize()
        got = mod.layer(dx, *dws, stream=s.cuda_stream)
        s.synchronize()
        check(mod, got, x, ws)
    after = stats()
    assert after["replays"] - before["replays"] >= 8  # a structure per stream, seen 4-6 times


def test_changing_shapes(mod, torch):
    rng = np.random.default_rng(4)
    ws = weights(rng)
    dws = [torch.from_numpy(a).cuda() for a in ws]
    before = stats()
    for t in [16, 16, 7, 7, 16, 33, 7, 1, 33, 16, 64, 7, 64, 16]:
        x = rng.standard_normal((t, D)).astype(np.float32)
        out = torch.full((t, D), float("nan"), device="cuda")
        mod.layer(torch.from_numpy(x).cuda(), *dws, out=out)
        check(mod, out, x, ws)
    after = stats()
    assert after["replays"] - before["replays"] >= 5


def test_inside_torch_graph_capture(mod, torch):
    """The caller captures: our launches go into its graph one by one (no capture nested
    in it, no graph of ours launched into it), and its replays compute on new inputs."""
    rng = np.random.default_rng(5)
    ws = weights(rng)
    dws = [torch.from_numpy(a).cuda() for a in ws]
    x = torch.from_numpy(rng.standard_normal((16, D)).astype(np.float32)).cuda()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm-up on a side stream, as torch asks
        for _ in range(3):
            mod.layer(x, *dws)
    torch.cuda.current_stream().wait_stream(side)
    before = stats()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        y = mod.layer(x, *dws)
    assert stats()["capturing"] - before["capturing"] == 1
    for _ in range(3):
        new = rng.standard_normal((16, D)).astype(np.float32)
        x.copy_(torch.from_numpy(new))
        y.fill_(float("nan"))
        g.replay()
        torch.cuda.synchronize()
        check(mod, y, new, ws)
    after = mod.layer(x, *dws)  # and outside the capture, the graph path again
    check(mod, after, new, ws)


def test_knob_off_launches_one_by_one(mod, torch):
    rng = np.random.default_rng(6)
    ws = weights(rng)
    dws = [torch.from_numpy(a).cuda() for a in ws]
    native.configure(cuda_graph=0)
    assert native.info()["cuda_graph"] == 0
    before = stats()
    for _ in range(5):
        x = rng.standard_normal((16, D)).astype(np.float32)
        out = torch.full((16, D), float("nan"), device="cuda")
        mod.layer(torch.from_numpy(x).cuda(), *dws, out=out)
        check(mod, out, x, ws)
    after = stats()
    assert after["replays"] == before["replays"] and after["builds"] == before["builds"]
    assert after["plain"] - before["plain"] == 5
    native.configure(cuda_graph=100)  # more launches than the call has: one by one too
    mod.layer(torch.from_numpy(x).cuda(), *dws, out=out)
    check(mod, out, x, ws)
    assert stats()["replays"] == before["replays"]


def test_projections_sharing_an_input_run_at_once_and_agree(mod, torch):
    """Q, K and V read only x: in the call's graph none waits for another (gpu_deps.py).
    Fresh inputs each call, outputs poisoned: each result is its own call's."""
    rng = np.random.default_rng(7)
    ws = [(rng.standard_normal(s) * c).astype(np.float32)
          for _ in range(3) for s, c in (((64, 64), 0.125), ((64,), 1.0))]
    dws = [torch.from_numpy(a).cuda() for a in ws]
    out = torch.empty((4, 32, 64), device="cuda")
    before = stats()
    for _ in range(6):
        x = rng.standard_normal((4, 32, 64)).astype(np.float32)
        out.fill_(float("nan"))
        mod.attend(torch.from_numpy(x).cuda(), *dws, out=out)
        want = mod.attend.py_func(*[a.astype(np.float64) for a in [x, *ws]])
        got = out.cpu().numpy()
        assert np.isfinite(got).all()
        assert_close(got, want, np.float32, 200)
    assert stats()["replays"] - before["replays"] >= 4
