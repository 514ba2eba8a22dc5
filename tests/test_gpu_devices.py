"""Devices as cuvil_aot.info() reports them, and two threads driving two devices at once
(issue 26). The two-device test skips on a machine with one GPU; the concurrency figures
(the pair's wall time against each device's alone) come from bench/gpu/two_devices.py.

Run on a machine with an NVIDIA GPU (tools/gpu_check.sh); skipped elsewhere."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from conftest import assert_close, compile_source
from gpu_harness import device_arch

import cuvil_aot

pytestmark = pytest.mark.gpu

SOURCE = '''
import numpy as np
import cuvil_aot as cv

@cv.optimize
def linear_tanh(x: cv.f32["M", "K"], w: cv.f32["N", "K"], b: cv.f32["N"]):
    return np.tanh(x @ w.T + b)
'''

CALLS = 10_000


@pytest.fixture(scope="module")
def module(tmp_path_factory):
    return compile_source(tmp_path_factory.mktemp("devices"), SOURCE,
                          cuda_archs=(device_arch(),))


def _host(seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s).astype(np.float32) for s in ((37, 96), (65, 96), (65,))]


def _device_entry(device: int) -> dict:
    entries = [d for d in cuvil_aot.info()["cuda_devices"] if d["device"] == device]
    assert len(entries) == 1, cuvil_aot.info()["cuda_devices"]
    return entries[0]


def test_info_lists_the_device_and_the_sass_it_loaded(module):
    torch = pytest.importorskip("torch")
    host = _host(1)
    got = module.linear_tanh(*[torch.from_numpy(a).cuda() for a in host])
    assert_close(got.cpu().numpy(), module.linear_tanh.py_func(
        *[a.astype(np.float64) for a in host]), np.float32, 200)
    entry = _device_entry(0)
    major, minor = torch.cuda.get_device_capability(0)
    assert entry["compute_capability"] == f"{major}.{minor}"
    assert entry["sm_count"] == torch.cuda.get_device_properties(0).multi_processor_count
    assert entry["images"].get(device_arch(), 0) >= 1, entry  # SASS, no PTX JIT


def _drive(module, torch, device: str, host: list[np.ndarray], errors: list[str]) -> None:
    """CALLS calls on `device`, every result checked against NumPy float64."""
    try:
        args = [torch.from_numpy(a).to(device) for a in host]
        ref = module.linear_tanh.py_func(*[a.astype(np.float64) for a in host])
        outs = [torch.full(ref.shape, float("nan"), device=device) for _ in range(2)]
        for i in range(CALLS):
            out = outs[i % 2]
            module.linear_tanh(*args, out=out)
            if i % 1000 == 999:  # odd i: outs[1], poisoned again after each check
                assert_close(out.cpu().numpy(), ref, np.float32, 200)
                out.fill_(float("nan"))
        assert_close(outs[0].cpu().numpy(), ref, np.float32, 200)  # the last even call's
    except Exception as exc:  # reported by the main thread
        errors.append(f"{device}: {type(exc).__name__}: {exc}")


def test_two_threads_drive_two_devices(module):
    """Two threads, one device each, CALLS calls each at the same time: every result is
    NumPy's, each device loaded the module, and neither thread's calls land on the other's
    device."""
    torch = pytest.importorskip("torch")
    if torch.cuda.device_count() < 2:
        pytest.skip("one GPU")
    errors: list[str] = []
    threads = [threading.Thread(target=_drive, args=(module, torch, f"cuda:{d}", _host(d),
                                                     errors)) for d in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for device in (0, 1):
        assert sum(_device_entry(device)["images"].values()) >= 1
