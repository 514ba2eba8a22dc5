"""The GPU path on a real device: every op and fusion pattern of the CPU tests on CuPy,
PyTorch and Numba arrays (PyCUDA where installed) against NumPy in float64; views,
zero-size arrays, out=, streams, errors, the embedded fatbin and no JIT on the device.

Run on a machine with an NVIDIA GPU (tools/gpu_check.sh); skipped elsewhere."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import assert_close, compile_source, load_source
from gpu_harness import Framework, check_module, device_arch, run_check
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from test_elementwise import SOURCE as ELEMENTWISE
from test_matmul import SOURCE as MATMUL
from test_reductions import SOURCE as REDUCTIONS

from cuvil_aot.compiler import pipeline
from cuvil_aot.errors import CudaError
from cuvil_aot.options import DEFAULT_ARCHS
from cuvil_aot.runtime import extension, native

pytestmark = pytest.mark.gpu


def group(name: str):  # noqa: ANN201 - xdist_group where pytest-xdist is installed
    """Each big module compiles once, on one xdist worker (--dist loadgroup), in parallel."""
    try:
        import xdist  # noqa: F401
    except ImportError:
        return lambda test: test
    return pytest.mark.xdist_group(name)

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
FRAMEWORKS = ["cupy", "torch"]


@pytest.fixture(scope="module")
def arch() -> str:
    return device_arch()


def _compiled(tmp_path_factory: pytest.TempPathFactory, source: str, arch: str):
    return compile_source(tmp_path_factory.mktemp("gpu"), source, cuda_archs=(arch,))


@pytest.fixture(scope="module")
def models(tmp_path_factory, arch):
    return _compiled(tmp_path_factory, (EXAMPLES / "models.py").read_text(), arch)


@pytest.fixture(scope="module")
def elementwise(tmp_path_factory, arch):
    return _compiled(tmp_path_factory, ELEMENTWISE, arch)


@pytest.fixture(scope="module")
def reductions(tmp_path_factory, arch):
    return _compiled(tmp_path_factory, REDUCTIONS, arch)


@pytest.fixture(scope="module")
def matmuls(tmp_path_factory, arch):
    return _compiled(tmp_path_factory, MATMUL, arch)


@group("elementwise")
@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_elementwise_ops(elementwise, framework):
    sizes = lambda rng: {"A": int(rng.integers(0, 7)), "B": int(rng.integers(0, 40))}  # noqa
    failures = check_module(elementwise, Framework(framework), 1, lambda name, s: 4.0, True,
                            sizes)
    assert not failures, "\n".join(failures)


@group("reductions")
@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_reductions(reductions, framework):
    sizes = lambda rng: {k: int(rng.integers(1, 6)) for k in "ABC"} | {  # noqa
        "N": int(rng.choice([3, 40, 1500]))}
    failures = check_module(reductions, Framework(framework), 2, lambda name, s: 50.0, False,
                            sizes)
    assert not failures, "\n".join(failures)


@group("matmul")
@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_matmul_and_epilogues(matmuls, framework):
    sizes = lambda rng: {"M": int(rng.choice([0, 1, 3, 8, 9, 32, 33, 140])),  # noqa
                         "K": int(rng.choice([0, 1, 7, 300])),
                         "N": int(rng.choice([1, 5, 130, 132])),  # 132: float4 GEMV loads
                         "J": int(rng.integers(1, 20)), "Z": int(rng.integers(0, 3))}
    scale = lambda name, s: 10.0 * (s.get("K", 0) + s.get("J", 0) + 1)  # noqa
    failures = check_module(matmuls, Framework(framework), 3, scale, False, sizes,
                            ("contiguous", "strided", "transposed", "misaligned"))
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("framework", FRAMEWORKS + ["numba"])
def test_models(models, framework):
    """The fusion patterns of the examples at sizes that take every kernel variant."""
    fw = Framework(framework)
    # B = 16: a ResNet head's one-kernel over 8192 pooled rows
    sizes = lambda rng: {"B": int(rng.choice([1, 3, 16, 70])),  # noqa
                         "N": int(rng.choice([5, 3000, 100003])),
                         "D": 300, "T": int(rng.choice([1, 20])), "I": 48, "H": 40}
    scale = lambda name, s: 4000.0 if name in ("ffn_block", "resnet_head", "lstm_step") else 50.0  # noqa
    failures = check_module(models, fw, 4, scale, False, sizes)
    assert not failures, "\n".join(failures)


# GEMVs whose elementwise consumer reads their columns in runs n / runs apart (a GLU, as
# the LSTM step's gates; three runs, which no tile of 8, 16 or 32 columns splits; eight,
# a float4 per run in a 32-column tile), and one whose consumer's columns line up only
# where N = 2.
TILE_CONSUMERS = """
import numpy as np
import cuvil_aot as cv


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


@cv.optimize(signatures=["f32[B,I], f32[I,2H], f32[2H]"])
def glu(x, w, b):
    g = x @ w + b
    n = g.shape[1] // 2
    return g[:, :n] * sigmoid(g[:, n:])


@cv.optimize(signatures=["f32[B,I], f32[I,3H]"])
def three_runs(x, w):
    g = x @ w
    n = g.shape[1] // 3
    return np.tanh(g[:, :n]) * g[:, n:2 * n] + g[:, 2 * n:]


@cv.optimize(signatures=["f32[B,I], f32[I,8H]"])
def eight_runs(x, w):
    g = x @ w
    n = g.shape[1] // 8
    return ((g[:, :n] + g[:, n:2 * n]) * (g[:, 2 * n:3 * n] - g[:, 3 * n:4 * n])
            + np.tanh(g[:, 4 * n:5 * n]) * g[:, 5 * n:6 * n] - g[:, 6 * n:7 * n] * g[:, 7 * n:])


@cv.optimize(signatures=["f32[B,I], f32[I,N]"])
def shifted(x, w):
    g = x @ w
    return g[:, 1:] - g[:, :-1]
"""


@pytest.fixture(scope="module")
def consumers(tmp_path_factory, arch):
    return _compiled(tmp_path_factory, TILE_CONSUMERS, arch)


@group("models")
@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(b=st.one_of(st.just(1), st.integers(1, 40)), i=st.integers(1, 300),
       h=st.integers(1, 600), view=st.sampled_from(["contiguous", "misaligned", "strided"]),
       seed=st.integers(0, 2**32 - 1))
@example(b=1, i=512, h=512, view="contiguous", seed=0)
@example(b=16, i=512, h=512, view="contiguous", seed=1)
@example(b=1, i=7, h=1, view="contiguous", seed=2)
@example(b=1, i=64, h=300, view="contiguous", seed=3)  # eight runs, a float4 each
def test_gemv_consumers_run_in_its_tiles(models, consumers, b, i, h, view, seed):
    """A batch-1..32 call whose GEMV feeds an elementwise consumer reading its columns in
    aligned runs (the LSTM step's gates, a GLU) computes that consumer in the GEMV's
    tiles, with no grid barrier, where the widths split into whole runs (of float4s on
    the float4 path); else, and for a consumer whose columns do not line up, after the
    barrier. Batches of one and four rows per tile, widths that do and do not split,
    aligned, misaligned and strided weights; B > 32 takes the separate kernels."""
    fw = Framework("torch")
    rng = np.random.default_rng(seed)
    draw = lambda *shape, k=1.0: (rng.standard_normal(shape) * k).astype(np.float32)  # noqa
    k = 1 / np.sqrt(i + h)
    lstm = [draw(b, i), draw(b, h), draw(b, h), draw(i, 4 * h, k=k), draw(h, 4 * h, k=k),
            draw(4 * h, k=0.1)]
    run_check(models.lstm_step, fw, lstm, view, 4000)
    run_check(consumers.glu, fw, [draw(b, i), draw(i, 2 * h, k=k), draw(2 * h, k=0.1)], view,
              4000)
    run_check(consumers.three_runs, fw, [draw(b, i), draw(i, 3 * h, k=k)], view, 4000)
    run_check(consumers.eight_runs, fw, [draw(b, i), draw(i, 8 * h, k=k)], view, 4000)
    n = 1 + h % 3 if h % 2 else h  # lines up at N = 2 only
    run_check(consumers.shifted, fw, [draw(b, i), draw(i, n, k=k)], view, 4000)


def test_large_gemm_is_fp32_exact(models):
    fw = Framework("torch")
    rng = np.random.default_rng(5)
    x = rng.standard_normal((300, 128), np.float32)
    w = rng.standard_normal((128, 64), np.float32)
    b = rng.standard_normal(64, np.float32)
    run_check(models.matmul_relu, fw, [x, w, b], "contiguous", 200)
    big = [rng.standard_normal(s, np.float32) for s in ((1000, 768), (768,), (768,),
                                                        (768, 3072), (3072,), (3072, 768), (768,))]
    run_check(models.ffn_block, fw, big, "contiguous", 4000)


@pytest.mark.parametrize("rows,length", [(3000, 7), (9000, 7), (8998, 49), (9000, 64), (3000, 300),
                                         (2500, 700), (3000, 2000), (100, 4096), (2200, 4096),
                                         (100, 2002), (64, 1001), (5, 4097)])
def test_row_kernels(models, rows, length):
    """Every row kernel entry of softmax and layernorm: a quarter warp (many short rows, a
    multiple of 4 of them), a warp or a block per row, few or many rows, the row in
    registers (few contiguous rows up to 4096: in runs of 4 where the rows are aligned
    runs of 4, else one element at a time) or re-read; strided and misaligned views; a
    NaN that must spread over its row."""
    fw = Framework("torch")
    rng = np.random.default_rng(rows + length)
    x = (rng.standard_normal((rows, length)) * 4).astype(np.float32)
    x[rows // 2, length // 3] = np.nan
    g, b = (rng.standard_normal(length).astype(np.float32) for _ in range(2))
    for view in ("contiguous", "strided", "misaligned"):
        run_check(models.softmax, fw, [x], view, 50)
        run_check(models.layer_norm, fw, [x, g, b], view, 50)


def test_intermediates_are_not_framework_allocations(models):
    """A two-kernel call (the LSTM step's gate pre-activation between them) with out=
    allocates nothing through PyTorch: the intermediate comes from the runtime's pool."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(9)
    shapes = [(3, 48), (3, 40), (3, 40), (48, 160), (40, 160), (160,)]
    args = [torch.from_numpy(rng.standard_normal(s).astype(np.float32)).cuda() for s in shapes]
    outs = (torch.empty(3, 40, device="cuda"), torch.empty(3, 40, device="cuda"))
    models.lstm_step(*args, out=outs)
    torch.cuda.synchronize()
    before = torch.cuda.memory_stats()["allocation.all.allocated"]
    for _ in range(3):
        outs[0].fill_(float("nan"))
        models.lstm_step(*args, out=outs)
    torch.cuda.synchronize()
    assert torch.cuda.memory_stats()["allocation.all.allocated"] == before
    ref = models.lstm_step.py_func(*[a.cpu().numpy().astype(np.float64) for a in args])
    assert_close(outs[0].cpu().numpy(), ref[0], np.float32, 200)
    assert_close(outs[1].cpu().numpy(), ref[1], np.float32, 200)


def test_calls_queued_back_to_back_keep_their_own_intermediates(models):
    """LSTM steps queued with no synchronize behind a slow kernel, batch sizes growing and
    shrinking, one of them on a side stream: on the default stream a call's freed
    intermediate is the next call's (cv_cuda_scratch's spares, flushed to the pool when
    none is big enough); every result is still its own call's."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(11)
    calls = []
    for b in [1, 3, 40, 3, 1, 64, 2, 2]:
        shapes = [(b, 48), (b, 40), (b, 40), (48, 160), (40, 160), (160,)]
        calls.append([torch.from_numpy(rng.standard_normal(s).astype(np.float32)).cuda()
                      for s in shapes])
    side = torch.cuda.Stream()
    torch.cuda.synchronize()
    torch.cuda._sleep(100_000_000)  # the default stream's queue stays long
    results = []
    for i, args in enumerate(calls):
        with torch.cuda.stream(side if i == 4 else torch.cuda.default_stream()):
            results.append(models.lstm_step(*args))
    torch.cuda.synchronize()
    for args, got in zip(calls, results):
        ref = models.lstm_step.py_func(*[a.cpu().numpy().astype(np.float64) for a in args])
        assert_close(got[0].cpu().numpy(), ref[0], np.float32, 200)
        assert_close(got[1].cpu().numpy(), ref[1], np.float32, 200)


def test_misaligned_and_odd_sizes_take_the_strided_path(models):
    fw = Framework("cupy")
    x = fw.lib.asarray(np.random.default_rng(6).standard_normal(100004, np.float32))
    y = fw.lib.asarray(np.random.default_rng(7).standard_normal(100004, np.float32))
    got = fw.get(models.elementwise_chain(x[1:100002], y[3:]))  # 4-byte aligned, odd length
    xs, ys = fw.get(x[1:100002]).astype(np.float64), fw.get(y[3:]).astype(np.float64)
    ref = np.tanh(xs * 0.5 + ys) / (1 + np.exp(-ys)) - np.abs(xs) * 0.25
    assert_close(got, ref, np.float32, 4)


def test_out_aliasing_an_input_and_non_contiguous_out(models):
    cp = Framework("cupy").lib
    x = cp.asarray(np.random.default_rng(8).standard_normal((64, 3000), np.float32))
    ref = cp.asnumpy(models.softmax(x))
    models.softmax(x, out=x)  # in place: computed into a temporary, then copied
    np.testing.assert_allclose(cp.asnumpy(x), ref, rtol=1e-6)
    wide = cp.full((64, 6000), cp.nan, cp.float32)
    models.softmax(x, out=wide[:, ::2])
    np.testing.assert_allclose(cp.asnumpy(wide[:, ::2]), cp.asnumpy(models.softmax(x)), rtol=1e-6)
    assert bool(cp.isnan(wide[:, 1::2]).all())


def test_torch_side_stream_ordering(models):
    torch = pytest.importorskip("torch")
    x = torch.zeros(4096, 4096, device="cuda")
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        torch.cuda._sleep(200_000_000)  # ~0.1 s: a late producer
        x.fill_(1.0)
        y = models.softmax(x)  # queued on `side` after the fill, no host sync
        z = y * 4096
    side.synchronize()
    assert torch.allclose(z, torch.ones_like(z))


def test_cupy_current_stream_and_stream_keyword(models):
    cp = pytest.importorskip("cupy")
    torch = pytest.importorskip("torch")
    x = cp.zeros((2048, 2048), cp.float32)
    s = cp.cuda.Stream(non_blocking=True)
    with s:
        x += 1  # queued on s
        y = models.softmax(x)
    s.synchronize()
    np.testing.assert_allclose(cp.asnumpy(y), 1 / 2048, rtol=1e-6)
    t = torch.zeros(2048, 2048, device="cuda")
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        torch.cuda._sleep(100_000_000)
        t.fill_(2.0)
    y = models.softmax(t, stream=side)  # explicit stream: ordered after the fill
    side.synchronize()
    assert torch.allclose(y, torch.full_like(y, 1 / 2048))


class OnStream:
    """A CuPy array seen through __cuda_array_interface__ v3 naming its producer stream."""

    def __init__(self, a, stream):
        self.a, self.stream = a, stream

    @property
    def __cuda_array_interface__(self):
        cai = dict(self.a.__cuda_array_interface__)
        cai["stream"] = self.stream.ptr
        return cai


def test_producer_stream_of_the_interface_is_waited_for(models):
    cp = pytest.importorskip("cupy")
    torch = pytest.importorskip("torch")
    producer = torch.cuda.Stream()
    a = torch.zeros(4096, 4096, device="cuda")
    x = cp.asarray(a)  # shares a's memory
    with torch.cuda.stream(producer):
        torch.cuda._sleep(200_000_000)
        a.fill_(3.0)
    stream = type("S", (), {"ptr": producer.cuda_stream})()
    consumer = cp.cuda.Stream(non_blocking=True)
    y = cp.empty_like(x)  # OnStream is no kind cuvil_aot can allocate: out= it is
    models.softmax(OnStream(x, stream), stream=consumer.ptr, out=y)
    consumer.synchronize()
    np.testing.assert_allclose(cp.asnumpy(y), 1 / 4096, rtol=1e-6)


def test_errors_name_the_problem(models):
    cp = pytest.importorskip("cupy")
    x = cp.ones((3, 128), cp.float32)
    with pytest.raises(TypeError, match="argument 'w': expected a float32 array"):
        models.matmul_relu(x, cp.ones((128, 64), cp.float64), cp.ones(64, cp.float32))
    with pytest.raises(TypeError, match="must be a device array like 'x'"):
        models.matmul_relu(x, np.ones((128, 64), np.float32), cp.ones(64, cp.float32))
    with pytest.raises(ValueError, match="dimension 0 is 7, expected 128"):
        models.matmul_relu(x, cp.ones((7, 64), cp.float32), cp.ones(64, cp.float32))

    class Bogus:
        __cuda_array_interface__ = {"shape": (3, 128), "typestr": "<f4", "version": 3,
                                    "data": (16, False)}

    with pytest.raises(CudaError, match="cuPointerGetAttribute"):
        models.matmul_relu(Bogus(), cp.ones((128, 64), cp.float32), cp.ones(64, cp.float32))
    np.testing.assert_array_equal(cp.asnumpy(models.matmul_relu(x, cp.ones((128, 64), cp.float32),
                                                                cp.zeros(64, cp.float32))), 128)


def test_sticky_error_reports_a_lost_context(tmp_path):
    """A kernel fault poisons the context: every later call says so (in a child process)."""
    script = tmp_path / "fault.py"
    script.write_text(f'''
import sys; sys.path.insert(0, {str(Path(__file__).parent)!r})
import cupy as cp
from conftest import compile_source
from pathlib import Path
from cuvil_aot.errors import CudaError
m = compile_source(Path({str(tmp_path)!r}), open({str(EXAMPLES / "models.py")!r}).read(),
                   cuda_archs=({device_arch()!r},))
x, out = cp.ones(16, cp.float32), cp.empty(16, cp.float32)
big = cp.ones(1 << 32, cp.float32)  # 16 GB: outputs come from the first argument's kind
class Huge:  # claims far more memory than it owns: the kernel reads past the end
    __cuda_array_interface__ = dict(x.__cuda_array_interface__, shape=(1 << 32,))
try:
    m.elementwise_chain(big, Huge()); cp.cuda.runtime.deviceSynchronize()
except Exception as e:
    print("FAULT", type(e).__name__, e)
for attempt in range(2):  # the launch finds the sticky error, then every call says so
    try:
        m.elementwise_chain(x, x, out=out)
    except CudaError as e:
        print("LOST" if "context is lost" in str(e) else "OTHER", e)
''')
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         timeout=120)
    assert "LOST" in out.stdout, out.stdout + out.stderr


@pytest.fixture
def runtime_mode():
    """Sets the runtime's CUVIL_AOT_MODE (read at import, not per call); restored after."""
    before = native.info()["mode"]
    yield lambda mode: native.configure(mode=mode)
    native.configure(mode=before)


def test_fatbin_lists_every_arch_and_the_device_needs_no_jit(tmp_path, runtime_mode):
    artifact = pipeline.build(load_source(tmp_path, (EXAMPLES / "models.py").read_text()),
                            pipeline.Options(cuda_archs=DEFAULT_ARCHS), out_dir=tmp_path)
    fatbin = tmp_path / "f2.fatbin"  # softmax's unit
    assert fatbin.read_bytes() in artifact.path.read_bytes()
    cuobjdump = shutil.which("cuobjdump")
    if cuobjdump:
        listing = subprocess.run([cuobjdump, "--list-elf", "--list-ptx", str(fatbin)],
                                 capture_output=True, text=True).stdout
        for arch in DEFAULT_ARCHS:
            number = arch.split("_")[1]
            wanted = "cubin" if arch.startswith("sm_") else "ptx"
            # sm_90's SASS is built as sm_90a (gpu_targets.py): its wgmma entry needs it
            assert re.search(rf"(sm|compute)_{number}a?\.{wanted}", listing), (arch, listing)
    runtime_mode("strict")  # a PTX JIT would be an error
    ext = extension.load(artifact.ext_name, artifact.path)
    cp = pytest.importorskip("cupy")
    x = cp.ones((2, 10), cp.float32)
    np.testing.assert_allclose(cp.asnumpy(ext.softmax(x)), 0.1, rtol=1e-6)


def test_ptx_only_module_is_jit_compiled_with_a_warning(tmp_path, runtime_mode, arch):
    cp = pytest.importorskip("cupy")
    ptx = f"compute_{int(arch[3:]) // 10 * 10 - 10}"  # an older major: no matching SASS
    module = compile_source(tmp_path, (EXAMPLES / "models.py").read_text(),
                            cuda_archs=(ptx,))
    x = cp.ones((2, 10), cp.float32)
    runtime_mode("strict")
    with pytest.raises(CudaError, match="JIT"):
        module.softmax(x)
    runtime_mode("import")
    with pytest.warns(RuntimeWarning, match="JIT-compiles PTX"):
        y = module.softmax(x)
    np.testing.assert_allclose(cp.asnumpy(y), 0.1, rtol=1e-6)


def test_pycuda_arrays(models):
    pytest.importorskip("pycuda.autoprimaryctx")
    fw = Framework("pycuda.gpuarray")
    x = np.random.default_rng(9).standard_normal((5, 700)).astype(np.float32)
    got = models.softmax(fw.lib.to_gpu(x))
    e = np.exp(x - x.max(1, keepdims=True))
    assert_close(got.get(), e / e.sum(1, keepdims=True), np.float32, 4)


def test_calls_stay_right_when_the_one_kernel_is_off(tmp_path):
    """Where a call's one-kernel cannot run (CUVIL_AOT_CUDA_ONE=0 says so, as a device
    without cooperative launches would), every call launches its kernels one by one: the
    first and the later ones (in a child process: the knob is read once)."""
    script = tmp_path / "one_off.py"
    script.write_text(f'''
import sys; sys.path.insert(0, {str(Path(__file__).parent)!r})
import json
import numpy as np, torch
from conftest import compile_source
from pathlib import Path
m = compile_source(Path({str(tmp_path)!r}), open({str(EXAMPLES / "models.py")!r}).read(),
                   cuda_archs=({device_arch()!r},))
rng = np.random.default_rng(5)
shapes = [(1, 48), (1, 40), (1, 40), (48, 160), (40, 160), (160,)]
errs = []
for call in range(3):
    args = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    outs = (torch.full((1, 40), float("nan"), device="cuda"),
            torch.full((1, 40), float("nan"), device="cuda"))
    m.lstm_step(*[torch.from_numpy(a).cuda() for a in args], out=outs)
    ref = m.lstm_step.py_func(*[a.astype(np.float64) for a in args])
    errs.append(max(float(np.abs(o.cpu().numpy() - r).max()) for o, r in zip(outs, ref)))
print(json.dumps(errs))
''')
    env = {**os.environ, "CUVIL_AOT_CUDA_ONE": "0"}
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         timeout=180, env=env)
    assert out.returncode == 0, out.stdout + out.stderr
    errs = json.loads(out.stdout.strip().splitlines()[-1])
    assert len(errs) == 3 and all(e < 1e-5 for e in errs), errs


def test_second_device(models):
    """On a machine with two GPUs: a call runs on the device holding its arrays, with the
    module loaded there too, on that device's current stream; arrays on two devices in one
    call are an error naming both."""
    torch = pytest.importorskip("torch")
    if torch.cuda.device_count() < 2:
        pytest.skip("one GPU")
    rng = np.random.default_rng(11)
    host = [rng.standard_normal(s).astype(np.float32) for s in ((64, 128), (128, 64), (64,))]
    ref = models.matmul_relu.py_func(*[a.astype(np.float64) for a in host])
    for device in ("cuda:1", "cuda:0", "cuda:1"):
        args = [torch.from_numpy(a).to(device) for a in host]
        with torch.cuda.device(0):  # the current device is not the arrays' device
            got = models.matmul_relu(*args)
            assert torch.cuda.current_device() == 0  # and stays the caller's
        assert got.device == torch.device(device)
        assert_close(got.cpu().numpy(), ref, np.float32, 200)
        side = torch.cuda.Stream(device=device)
        with torch.cuda.stream(side):
            out = torch.full((64, 64), float("nan"), device=device)
            models.matmul_relu(*args, out=out)  # queued on `side` after the fill
        side.synchronize()
        assert_close(out.cpu().numpy(), ref, np.float32, 200)
    mixed = [torch.from_numpy(host[0]).to("cuda:0"), torch.from_numpy(host[1]).to("cuda:1"),
             torch.from_numpy(host[2]).to("cuda:0")]
    with pytest.raises(ValueError, match=r"'x' on cuda:0, 'w' on cuda:1"):
        models.matmul_relu(*mixed)
