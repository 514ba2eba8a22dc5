"""Index ramps (np.arange, and the masks built from them: triu, tril, eye, causal) read
inside the kernels that use them on the GPU: in elementwise kernels of several loops (no
``_flat`` path), row kernels, GEMM epilogues of two and three loops (no batch fold) and the
fused attention's scores; against NumPy in float64 on CuPy and PyTorch arrays of random
shapes, contiguous, strided and transposed, outputs poisoned.

Run on a machine with an NVIDIA GPU (tools/gpu_check.sh); skipped elsewhere."""

from __future__ import annotations

import pytest
from conftest import compile_source
from gpu_harness import Framework, check_module, device_arch

pytestmark = pytest.mark.gpu

SOURCE = '''
import numpy as np
import cuvil_aot as cv

@cv.optimize(signatures=["f32[T,T]", "f64[T,T]"])
def causal_by_ramps(s):
    t = s.shape[0]
    return np.where(np.arange(t)[:, None] >= np.arange(t)[None, :], s, -np.inf)

@cv.optimize(signatures=["f32[Q,K]"])
def causal_by_triu(s):
    q, k = s.shape
    return s + np.triu(np.full((q, k), -1e9, dtype=np.float32), 1)

@cv.optimize(signatures=["f64[B,N,M]", "i32[B,N,M]"])
def triangles(x):
    return np.tril(x), np.triu(x, 1), np.tril(x, -2), np.triu(x, -1)

@cv.optimize(signatures=["f64[N,M], int"])
def triangles_at(x, k):
    n, m = x.shape
    return np.tril(x, k), np.triu(x, -k), np.tri(n, m, k), np.eye(n, m, k=k + 1, dtype=x.dtype)

@cv.optimize(signatures=["f32[N,D]"])
def positions(x):
    n, d = x.shape
    pos = np.arange(n, dtype=np.float32)[:, None]
    inv = 1.0 / (10000.0 ** (np.arange(0, d, dtype=np.float32) / d))
    return x + np.sin(pos * inv), np.arange(n * d).reshape(n, d) - np.arange(d)[::-1]

@cv.optimize(signatures=["f32[B,T,T]"])
def causal_softmax(s):
    t = s.shape[-1]
    x = s + np.triu(np.full((t, t), -1e9, dtype=np.float32), 1)
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)

@cv.optimize(signatures=["f32[M,K], f32[K,N]", "f32[B,M,K], f32[K,N]"])
def gemm_plus_ramps(x, w):
    n = w.shape[1]
    m = x.shape[-2]
    return (x @ w + np.arange(n, dtype=np.float32) * 0.5
            - np.arange(m, dtype=np.float32)[:, None] * 0.25)
'''


@pytest.fixture(scope="module")
def ramps(tmp_path_factory):
    return compile_source(tmp_path_factory.mktemp("gpu_ramps"), SOURCE,
                          cuda_archs=(device_arch(),))


@pytest.mark.parametrize("framework", ["cupy", "torch"])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_ramps_inside_kernels(ramps, framework, seed):
    sizes = lambda rng: {k: int(rng.choice([0, 1, 2, 5, 17, 64, 131])) for k in  # noqa: E731
                         ("T", "Q", "K", "N", "M", "D")} | {"B": int(rng.integers(1, 4))}
    failures = check_module(ramps, Framework(framework), seed, lambda name, s: 4.0, False,
                            sizes)
    assert not failures, "\n".join(failures)
