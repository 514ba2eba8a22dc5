"""The Hopper GEMM's 3xTF32 split of a landed B tile (cuda_wg_split.h) on the CPU: the
header's functions compiled by g++ with a block's consumer threads as std::threads and its
named barriers as std::barriers. A B that landed N-major (x @ w of an (in, out) weight,
cv_wg_split_nmajor) must leave exactly the big and small tiles that the K-major split
(cv_wg_split, what the device has run since the wgmma loop landed) leaves from the same
values landed K-major in the 128-byte swizzle, and those must hold tf32(x) and
tf32(x - tf32(x)) at row n, chunk kc ^ (n % 8). What the device adds (TMA's boxes, the
barriers' timing) runs in tests/test_gpu_wgmma_copies.py."""

from __future__ import annotations

import ctypes
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent

EMULATOR = r"""
#include <barrier>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>
struct dim { unsigned x; };
static thread_local dim threadIdx;
static std::barrier<> *named[16];
/* what cuda_wg_split.h takes from the headers it includes, for the host */
#define CUVIL_AOT_CUDA_GEMM_TC_H
#define CUVIL_AOT_CUDA_WGMMA_OPS_H
#define CV_WGMMA_OK 1
#define CV_DEV static inline
struct float4 { float x, y, z, w; };
struct uint4 { uint32_t x, y, z, w; };
static float4 make_float4(float x, float y, float z, float w) { return {x, y, z, w}; }
static uint4 make_uint4(uint32_t x, uint32_t y, uint32_t z, uint32_t w) { return {x, y, z, w}; }
static uint32_t __float_as_uint(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static float __uint_as_float(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
static void cv_split_tf32(float x, uint32_t &big, uint32_t &small) { /* cuda_gemm_tc.h's */
    big = (__float_as_uint(x) + 0x1000u) & 0xffffe000u;
    small = (__float_as_uint(x - __uint_as_float(big)) + 0x1000u) & 0xffffe000u;
}
static void cv_bar_sync(int id, int) { named[id]->arrive_and_wait(); }
#include "cuvil_aot/cuda_wg_split.h"

/* The two consumers (threads 128 .. 383 of the block) on a B tile of BN rows, as
 * cv_wg_split_stage calls them. */
template <int BN>
static void consumers(unsigned char *b, unsigned char *small, int nmajor) {
    std::barrier<> b2(128), b3(128);
    named[2] = &b2, named[3] = &b3;
    std::vector<std::thread> ts;
    for (unsigned t = 128; t < 384; t++)
        ts.emplace_back([=] {
            threadIdx.x = t;
            const int c = (int)t / 128 - 1, half = BN * 128 / 2;
            if (nmajor) cv_wg_split_nmajor<BN>(b + c * half, small + c * half, c);
            else cv_wg_split(b + c * half, small + c * half, (int)(t & 127), BN / 32);
        });
    for (auto &t : ts) t.join();
}
extern "C" void split(int bn, unsigned char *b, unsigned char *small, int nmajor) {
    if (bn == 128) consumers<128>(b, small, nmajor);
    else consumers<256>(b, small, nmajor);
}
"""


@pytest.fixture(scope="module")
def emulator(tmp_path_factory):
    if shutil.which("g++") is None:
        pytest.skip("g++ not found")
    folder = tmp_path_factory.mktemp("wgsplit")
    src, lib = folder / "emu.cpp", folder / "emu.so"
    src.write_text(EMULATOR)
    subprocess.run(["g++", "-std=c++20", "-O1", "-shared", "-fPIC", "-pthread",
                    f"-I{ROOT / 'native' / 'include'}", str(src), "-o", str(lib)], check=True)
    emu = ctypes.CDLL(str(lib))
    emu.split.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int]
    return emu


def _tf32(x: np.ndarray) -> np.ndarray:
    """Round to the nearest tf32, ties away (cuda_gemm_tc.h's cv_tf32)."""
    u = (x.view(np.uint32).astype(np.uint64) + 0x1000) & 0xFFFFE000
    return u.astype(np.uint32).view(np.float32)


def _k_major_swizzled(tile: np.ndarray) -> np.ndarray:
    """tile[n, k] (BN x 32) as TMA's 128-byte swizzle lands a K-major box: row n's chunk kc
    (k 4kc .. 4kc + 3) at chunk kc ^ (n % 8)."""
    bn = tile.shape[0]
    out = np.full((bn, 8, 4), np.nan, np.float32)
    n = np.arange(bn)[:, None]
    out[n, np.arange(8)[None, :] ^ (n % 8)] = tile.reshape(bn, 8, 4)
    return out.reshape(-1)


def _n_major_halves(tile: np.ndarray) -> np.ndarray:
    """tile[n, k] as the producer's two unswizzled boxes land it: each consumer's half of
    the columns, 32 rows of k of BN / 2 contiguous n."""
    halves = tile.reshape(2, tile.shape[0] // 2, 32)  # (c, nn, k)
    return np.ascontiguousarray(halves.transpose(0, 2, 1)).reshape(-1)


def _split(emu, bn: int, landed: np.ndarray, nmajor: bool) -> tuple[np.ndarray, np.ndarray]:
    big = landed.copy()
    small = np.full_like(landed, np.nan)  # poisoned: every element must be written
    emu.split(bn, big.ctypes.data, small.ctypes.data, int(nmajor))
    return big, small


@pytest.mark.parametrize("bn", [128, 256])
@pytest.mark.parametrize("seed", range(3))
def test_an_n_major_tile_splits_as_the_k_major_one(emulator, bn, seed):
    rng = np.random.default_rng(seed * 1000 + bn)
    # a spread of magnitudes and signs (ties of the rounding among them: small integers)
    tile = (rng.standard_normal((bn, 32)) * 10.0 ** rng.integers(-8, 8, (bn, 32)))
    tile = tile.astype(np.float32)
    tile[0, :8] = np.arange(8, dtype=np.float32) + 0.5
    big_k, small_k = _split(emulator, bn, _k_major_swizzled(tile), False)
    big_n, small_n = _split(emulator, bn, _n_major_halves(tile), True)
    np.testing.assert_array_equal(big_n, big_k)
    np.testing.assert_array_equal(small_n, small_k)
    want_big = _tf32(tile)
    np.testing.assert_array_equal(big_n, _k_major_swizzled(want_big))
    np.testing.assert_array_equal(small_n, _k_major_swizzled(_tf32(tile - want_big)))
    # the split is exact to float32's 24 bits where nothing underflows
    sum_back = big_n.astype(np.float64) + small_n.astype(np.float64)
    ref = _k_major_swizzled(tile).astype(np.float64)
    assert np.all(np.abs(sum_back - ref) <= np.abs(ref) * 2.0 ** -21 + 1e-38)
