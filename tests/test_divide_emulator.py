"""cuda_divide.h's float32 division (``cv_divf``, what generated CUDA runs for every
float32 ``/``) on the CPU: tests/divide_emulator.cpp runs the header's own arithmetic with
rcp.approx modelled as IEEE's reciprocal moved by up to 0, 1 or 2 ulp, over operands of
every magnitude (subnormals, the extremes, zeros of both signs, infinities, NaN) against
IEEE division. What a device adds (tests/test_gpu_divide.py) is the real rcp.approx."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ needed")


@pytest.fixture(scope="module")
def divide(tmp_path_factory) -> Path:
    exe = tmp_path_factory.mktemp("divide") / "divide"
    subprocess.run(["g++", "-std=c++17", "-O1", f"-I{ROOT / 'native' / 'include'}",
                    str(ROOT / "tests" / "divide_emulator.cpp"), "-o", str(exe)], check=True)
    return exe


@pytest.mark.parametrize("ulps", [0, 1, 2])
@pytest.mark.parametrize("seed", [1, 2])
def test_within_one_ulp_and_almost_always_exact(divide, ulps, seed):
    out = subprocess.run([str(divide), "1000000", str(ulps), str(seed)], capture_output=True,
                         text=True, check=True).stdout.split()
    worst, special, inexact, normal, subnormal = map(int, out)
    assert normal > 500_000 and subnormal > 10_000  # the operands reach both ranges
    assert special == 0  # zeros (with their signs), infinities and NaN as IEEE's
    assert worst <= 1
    assert inexact <= 1e-4 * normal, inexact
