"""Output arrays and intermediates of 1 MiB or more come from the runtime's block cache (outbuf.c):
reused blocks must never leak old values, the cache stays within its bounds, and
arrays stay valid across threads, resizes, fork and interpreter shutdown."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest
from conftest import assert_close, compile_source

import cuvil_aot
from cuvil_aot import knobs
from cuvil_aot.runtime import native as rt

SOURCE = """
import numpy as np
import cuvil_aot as cv

@cv.optimize
def scaled(x: cv.f32["N"], y: cv.f32["N"]):
    return x * 2.0 + y

@cv.optimize
def softmax(x: cv.f32["B", "N"]):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)

@cv.optimize
def centered_max(x: cv.f32["B", "K"], w: cv.f32["K", "N"]):
    h = x @ w
    return (h - h.mean(axis=-1, keepdims=True)).max(axis=-1)
"""
BIG = 1 << 19  # float32 elements: 2 MiB, above the 1 MiB threshold
DEFAULT = knobs.Knobs.output_cache_bytes
SLOTS = 32  # the most blocks the cache keeps (outbuf.c's CV_OUT_SLOTS)


@pytest.fixture(scope="module")
def mod(tmp_path_factory: pytest.TempPathFactory):
    return compile_source(tmp_path_factory.mktemp("outmem"), SOURCE)


@pytest.fixture(autouse=True)
def _fresh_cache():
    rt.configure(output_cache_bytes=0)  # empty, then the default again
    rt.configure(output_cache_bytes=DEFAULT)
    yield
    rt.configure(output_cache_bytes=0)
    rt.configure(output_cache_bytes=DEFAULT)


def _inputs(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(n).astype(np.float32),
            rng.standard_normal(n).astype(np.float32))


def test_reused_block_is_fully_rewritten(mod):
    x, y = _inputs(BIG, 1)
    first = mod.scaled(x, y)
    first[:] = np.nan  # poison the block, then give it back
    del first
    assert rt.output_cache()["blocks"] == 1
    x, y = _inputs(BIG, 2)
    again = mod.scaled(x, y)
    assert rt.output_cache()["blocks"] == 0  # the poisoned block was taken
    assert_close(again, x.astype(np.float64) * 2.0 + y)


def test_row_kernel_output_reuses_poisoned_block(mod):
    rng = np.random.default_rng(3)
    x = (rng.standard_normal((512, 1024)) * 3).astype(np.float32)
    first = mod.softmax(x)
    first[:] = np.nan
    del first
    got = mod.softmax(x)
    assert rt.output_cache()["blocks"] == 0
    assert_close(got, mod.softmax.py_func(x.astype(np.float64)))


def test_small_outputs_keep_numpys_allocator(mod):
    x, y = _inputs(1000, 4)
    mod.scaled(x, y)  # a temporary, freed at once
    assert rt.output_cache()["blocks"] == 0


def test_large_intermediates_come_from_the_cache(mod):
    """A call's intermediates of 1 MiB or more come back to the cache (freed to glibc,
    those above its mmap threshold were page-faulted afresh by every call)."""
    rng = np.random.default_rng(8)
    x = rng.standard_normal((512, 64)).astype(np.float32)
    w = rng.standard_normal((64, 1024)).astype(np.float32)  # h: 512 x 1024, 2 MiB
    got = mod.centered_max(x, w)
    assert rt.output_cache()["blocks"] == 1  # h's block; the 2 KiB result is NumPy's
    again = mod.centered_max(x, w)  # h in the same block, rewritten
    assert rt.output_cache()["blocks"] == 1
    ref = mod.centered_max.py_func(x.astype(np.float64), w.astype(np.float64))
    assert_close(got, ref, np.float32, 10)
    assert_close(again, ref, np.float32, 10)


def test_cache_stays_within_its_bounds(mod):
    rt.configure(output_cache_bytes=24 << 20)
    alive = []
    for k in range(12):  # sizes that do not fit each other: each a new block
        x, y = _inputs(BIG * (k + 1) // 2 + BIG, k)
        alive.append(mod.scaled(x, y))
    while alive:  # smallest first, so the largest come back last
        del alive[0]
    state = rt.output_cache()
    assert state["blocks"] <= SLOTS and state["held"] <= 24 << 20
    assert state["blocks"] >= 1
    rt.configure(output_cache_bytes=0)
    assert rt.output_cache() == {"limit": 0, "held": 0, "blocks": 0}
    x, y = _inputs(BIG, 5)
    mod.scaled(x, y)
    assert rt.output_cache()["blocks"] == 0  # off: nothing is kept


def test_block_is_not_handed_to_a_much_smaller_output(mod):
    x, y = _inputs(8 * BIG, 6)
    mod.scaled(x, y)
    x, y = _inputs(BIG, 7)
    small = mod.scaled(x, y)
    assert rt.output_cache()["blocks"] == 1  # the 16 MiB block stays for its size
    assert_close(small, x.astype(np.float64) * 2.0 + y)


def test_resize_keeps_values(mod):
    x, y = _inputs(BIG, 8)
    out = mod.scaled(x, y)
    want = out.copy()
    out.resize(3 * BIG, refcheck=False)  # a realloc through the array's handler
    np.testing.assert_array_equal(out[:BIG], want)
    out.resize(BIG // 4, refcheck=False)
    np.testing.assert_array_equal(out, want[:BIG // 4])


def test_many_threads_allocate_and_free(mod):
    errors: list[BaseException] = []

    def work(seed: int) -> None:
        try:
            for i in range(20):
                x, y = _inputs(BIG + 4096 * (seed % 3), seed * 100 + i)
                got = mod.scaled(x, y)
                np.testing.assert_array_equal(got, x * np.float32(2.0) + y)
        except BaseException as exc:  # noqa: BLE001  (reported below)
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(s,)) for s in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]
    state = rt.output_cache()
    assert state["blocks"] <= SLOTS and state["held"] <= DEFAULT


SCRIPT = """
import os, sys
import numpy as np
sys.path.insert(0, {path!r})
from conftest import compile_source
from pathlib import Path
mod = compile_source(Path({tmp!r}), {source!r})
x = np.ones(1 << 19, np.float32)
kept = [mod.scaled(x, x) for _ in range(6)]  # alive at exit, past the module's teardown
del kept[0]
pid = os.fork()
if pid == 0:  # the child allocates and frees with the parent's cache state
    got = mod.scaled(x, x)
    del kept[1]
    os._exit(0 if got[0] == 3.0 else 1)
_, status = os.waitpid(pid, 0)
assert os.waitstatus_to_exitcode(status) == 0
sys.modules.pop(mod.__name__)
del mod
print("ok")
"""


def test_arrays_outlive_module_and_survive_fork(tmp_path: Path):
    script = SCRIPT.format(path=str(Path(__file__).parent), tmp=str(tmp_path), source=SOURCE)
    root = str(Path(cuvil_aot.__file__).resolve().parents[1])  # the cuvil_aot under test
    env = {**os.environ, "CUVIL_AOT_OUTPUT_CACHE_BYTES": str(8 << 20), "PYTHONPATH": root}
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          cwd=tmp_path, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "ok"


def test_knob_is_read():
    assert knobs.read({"CUVIL_AOT_OUTPUT_CACHE_BYTES": "0"}).output_cache_bytes == 0
    assert knobs.read({}).output_cache_bytes == 256 << 20
    with pytest.raises(knobs.KnobError):
        knobs.read({"CUVIL_AOT_OUTPUT_CACHE_BYTES": "-1"})
