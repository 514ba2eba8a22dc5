"""The GEMM's reuse-distance estimate (native/src/gemm_reuse.h): a matrix counts as out of
the L3, so its rows are prefetched into L2, when it is new or when more than half the L3
of other matrices was streamed since its last use. The addresses are never read."""

from __future__ import annotations

from pathlib import Path

from cuvil_aot.runtime import native as rt

SYSFS_L3 = Path("/sys/devices/system/cpu/cpu0/cache/index3/size")


def half_l3() -> int:
    try:
        text = SYSFS_L3.read_text().strip()
    except OSError:
        text = ""
    kb = int(text[:-1]) if text.endswith("K") and text[:-1].isdigit() else 0
    return (kb << 10 if kb > 0 else 32 << 20) // 2


def test_new_is_cold_then_warm_until_half_the_l3_streams_past() -> None:
    a, mb = 0x7A00_0000_0000, 1 << 20
    assert rt._reuse_cold(a, mb)                  # never seen
    assert not rt._reuse_cold(a, mb)              # just read
    assert rt._reuse_cold(a, 2 * mb)              # another matrix at the same address
    assert not rt._reuse_cold(a, 2 * mb)
    rt._reuse_cold(a + 4 * mb, half_l3())         # half the L3 past it: still warm
    assert not rt._reuse_cold(a, 2 * mb)
    rt._reuse_cold(a + 4 * mb, half_l3() + 1)     # more than half: out
    assert rt._reuse_cold(a, 2 * mb)


def test_the_least_recently_used_of_64_is_forgotten() -> None:
    a, small = 0x7B00_0000_0000, 4096
    rt._reuse_cold(a, small)
    for i in range(1, 64):                        # 63 others and a fill the table
        rt._reuse_cold(a + i * small, small)
    assert not rt._reuse_cold(a, small)           # a is the newest again
    for i in range(64, 128):                      # 64 more push it out, a few KB later
        rt._reuse_cold(a + i * small, small)
    assert rt._reuse_cold(a, small)
