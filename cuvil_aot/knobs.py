"""Every environment knob of cuvil_aot, read in one place.

Knobs are read at the edge (when a build or a load starts) and passed down
explicitly; nothing below this module looks at ``os.environ``. A knob that
changes generated code is part of the cache key (see ``codegen_knobs``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

MODES = ("strict", "import", "lazy")


class KnobError(ValueError):
    """An environment variable of cuvil_aot holds a value it cannot use."""


@dataclass(frozen=True)
class Knobs:
    mode: str = "import"
    """CUVIL_AOT_MODE: strict (never compile), import (compile on import), lazy (on first call)."""
    cache_dir: Path | None = None
    """CUVIL_AOT_CACHE_DIR: the compile cache; default the per-user cache directory."""
    cache_max_bytes: int = 4 << 30
    """CUVIL_AOT_CACHE_MAX_BYTES: size cap of the cache, least recently used entries go first."""
    num_threads: int = 0
    """CUVIL_AOT_NUM_THREADS: threads of the kernel pool; 0 means one per core."""
    cpu_level: int = 0
    """CUVIL_AOT_CPU_LEVEL: highest x86-64 level (1-4) kernels may use; 0 means detected."""
    output_cache_bytes: int = 256 << 20
    """CUVIL_AOT_OUTPUT_CACHE_BYTES: freed output arrays of 1 MiB or more whose memory is
    kept (at most 4 blocks, this many bytes) so the next call of a fitting size skips page
    faults and page zeroing; 0 keeps none."""
    cc: str = ""
    """CUVIL_AOT_CC: the C compiler; default the one Python was built with, else cc."""
    hook: bool = False
    """CUVIL_AOT_HOOK: 1 installs the import hook at startup (through the opt-in .pth file)."""
    cuda_archs: str = ""
    """CUVIL_AOT_CUDA_ARCHS: GPU targets, e.g. "sm_90,compute_90"; "none" builds CPU-only;
    default: the GPUs this machine has (load/gpus.py), CPU-only without one."""
    cuda_one: bool = True
    """CUVIL_AOT_CUDA_ONE: 0 launches a GPU call's kernels one by one instead of as one
    (cooperative) kernel, to compare; 1 (default) uses the one kernel where it can run."""
    cuda_pool: bool = True
    """CUVIL_AOT_CUDA_POOL: 0 allocates GPU intermediates through the arrays' framework
    instead of the runtime's stream-ordered memory pool; 1 (default) uses the pool."""
    cuda_wgmma: bool = True
    """CUVIL_AOT_CUDA_WGMMA: 0 keeps float32 GEMMs off the Hopper wgmma main loop (to
    compare, or to rule it out); 1 (default) runs it where the device and layout allow."""
    cuda_wgmma_transpose: bool = True
    """CUVIL_AOT_CUDA_WGMMA_TRANSPOSE: 0 keeps the wgmma main loop to GEMMs whose operands are
    K-major as they are (``x @ w.T``); 1 (default) also runs it over K-major copies, made at
    each call, of operands that are not (``x @ w`` of an (in, out) weight), where a model
    of their cost says they pay (gpu_wrap.h). CUVIL_AOT_CUDA_WGMMA=0 turns both off."""
    cuda_wg_tail: bool = True
    """CUVIL_AOT_CUDA_WG_TAIL: 1 (default) lets the wgmma main loop split k of its last,
    partial round of tiles only, the rows before it in whole tiles (cv_gpu_wg_split,
    gpu_wrap.h), in a GEMM of one batch, and folds a batched GEMM whose batches step as rows
    (a contiguous x of (B, T, K) @ w) into one GEMM of B·T rows for it
    (codegen/batch_fold.py); 0: split all tiles where they are too few, or none, and
    batches as they are. On (2026-12-05, H100, with CUVIL_AOT_CUDA_WG_NMAJOR): GPT-2 at
    8 × 128 0.94x the time of NMAJOR alone (bench/gpu/h100_2026-12-05/)."""
    cuda_wg_nmajor: bool = True
    """CUVIL_AOT_CUDA_WG_NMAJOR: 1 (default) lets the 3xTF32 wgmma main loop read an N-major
    B (``x @ w`` of an (in, out) weight) as it is, its tiles transposed in shared memory as
    they are split (cuda_wg_split.h); 0 copies it K-major first at each call, as
    CUVIL_AOT_CUDA_WGMMA_TRANSPOSE allows. GPT-2 at 8 × 128: 0.94x the time of the copies
    (2026-12-05, H100, bench/gpu/h100_2026-12-05/)."""
    cuda_tc_cluster: bool = True
    """CUVIL_AOT_CUDA_TC_CLUSTER: 1 (default) lets a float32 GEMM whose tensor-core tiles are
    too few split k over the blocks of a thread-block cluster on sm_90, the chunks added up
    in distributed shared memory (cuda_gemm_tc.h's cv_gemm_tc_cluster); 0: partial sums in
    global memory, added by a kernel of their own (_ksum). On (2026-12-06, H100,
    bench/gpu/h100_2026-12-06/knob_ab.md): GPT-2 at 1 x 128 0.87x the time, 8 x 128 1.00x."""
    cuda_attention: bool = True
    """CUVIL_AOT_CUDA_ATTENTION: 0 runs a recognized attention as its three kernels (two
    GEMMs and the softmax) instead of the fused flash-style kernel (to compare); 1
    (default) runs the fused kernel where the head dims fit it."""
    cuda_attention_split: bool = True
    """CUVIL_AOT_CUDA_ATTENTION_SPLIT: 1 (default) lets a fused attention whose blocks would
    fill less than half the SMs (GPT-2 at 1 x 128: 24 blocks on 132) run its split entry:
    blocks of 32 query rows whose two halves of warps take alternate tiles of keys, merged
    at the end (cuda_attention_tc.h); 0: blocks of 64 rows. On (2026-12-06, H100): GPT-2 at
    1 x 128 0.96x the time, with the cluster split-K 0.85x."""
    cuda_attention_grouped: bool = True
    """CUVIL_AOT_CUDA_ATTENTION_GROUPED: 1 (default) lets the fused attention run
    grouped-query attention (K/V heads repeated by repeat_kv or np.repeat, which
    passes/grouped_query.py turns into one matmul per K/V head: the kernel then reads K and
    V at head h / n, attention_match.Match.grouped); 0 runs such an attention as its two
    matmuls and softmax, per K/V head. On since test_gpu_attention.py's grouped cases
    passed on an H100 (2026-12-07, 24 of them, the setting on and off)."""
    cuda_graph: int = 4
    """CUVIL_AOT_CUDA_GRAPH: a GPU call of this many kernel launches or more replays a CUDA
    graph of them (built the second time the same kernels and grids come on a device and
    stream, its arguments updated per call); 0 launches every kernel one by one. The default
    is the runtime's (CV_GRAPH_MIN_DEFAULT, native/src/cuda_internal.h)."""
    cuda_home: str = ""
    """CUDA_HOME (else CUDA_PATH): a CUDA toolkit whose bin/nvcc builds the GPU kernels."""
    signing_key: str = ""
    """CUVIL_AOT_SIGNING_KEY: sign every cache entry this process publishes: an HMAC-SHA-256
    secret (the value, or ``file:PATH``), or ``ed25519:PATH`` (a PEM private key; needs the
    ``cryptography`` package). Entries signed with it are checked on lookup (SECURITY.md)."""
    verify_key: str = ""
    """CUVIL_AOT_VERIFY_KEY: one more trusted key, in the same forms (``ed25519:PATH`` may be
    a public key): readers of a shared cache that must not sign."""
    require_signed: bool = False
    """CUVIL_AOT_REQUIRE_SIGNED: 1 refuses cache entries without a valid signature by a
    trusted key (they are set aside and rebuilt, signed)."""
    test_stop_at: str = ""
    """CUVIL_AOT_TEST_STOP_AT: tests only. The process stops itself (SIGSTOP) when a cache
    publish reaches this step (cache.store.PUBLISH_STEPS), for a test to kill -9 it there."""
    lock_timeout: int = 30
    """CUVIL_AOT_LOCK_TIMEOUT: seconds an import waits for another process building the same
    module (it may be stopped or hung) before building it in a private cache, with a warning.
    With a remote cache, also how long it waits for another machine building the same key."""
    remote_cache: str = ""
    """CUVIL_AOT_REMOTE_CACHE: a cache shared by many machines, behind the local one:
    ``redis://host:port/db`` or ``s3://bucket/prefix``; read on a local miss, written after
    a build. Needs signing (CUVIL_AOT_SIGNING_KEY or CUVIL_AOT_VERIFY_KEY): its entries
    are only taken signed by a trusted key. Needs ``pip install 'cuvil-aot[remote]'``."""
    remote_timeout: float = 1.5
    """CUVIL_AOT_REMOTE_CACHE_TIMEOUT: seconds one request to the remote cache may take;
    past it the remote counts as down for the rest of the process (one warning)."""
    remote_ttl: int = 30 * 86400
    """CUVIL_AOT_REMOTE_CACHE_TTL: seconds a Redis entry lives unread (each read renews
    it); S3 expires entries by a bucket lifecycle rule instead."""
    remote_endpoint: str = ""
    """CUVIL_AOT_REMOTE_CACHE_ENDPOINT: the S3 endpoint URL (an S3-compatible server);
    default boto3's (AWS_ENDPOINT_URL, else AWS)."""


def _int(env: Mapping[str, str], name: str, default: int, lo: int, hi: int) -> int:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw, 0)
    except ValueError:
        raise KnobError(f"{name}={raw!r}: expected an integer") from None
    if not lo <= value <= hi:
        raise KnobError(f"{name}={raw!r}: expected an integer in [{lo}, {hi}]")
    return value


def _float(env: Mapping[str, str], name: str, default: float, lo: float, hi: float) -> float:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise KnobError(f"{name}={raw!r}: expected a number of seconds") from None
    if not lo <= value <= hi:
        raise KnobError(f"{name}={raw!r}: expected a number in [{lo:g}, {hi:g}]")
    return value


def _flag(env: Mapping[str, str], name: str, default: bool) -> bool:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    if raw not in ("0", "1"):
        raise KnobError(f"{name}={raw!r}: expected 0 or 1")
    return raw == "1"


def read(env: Mapping[str, str] | None = None) -> Knobs:
    """Read every knob from ``env`` (default ``os.environ``), validating each."""
    env = os.environ if env is None else env
    mode = env.get("CUVIL_AOT_MODE", "import").strip() or "import"
    if mode not in MODES:
        raise KnobError(f"CUVIL_AOT_MODE={mode!r}: expected one of {', '.join(MODES)}")
    cache_dir = env.get("CUVIL_AOT_CACHE_DIR", "").strip()
    return Knobs(
        mode=mode,
        cache_dir=Path(cache_dir).expanduser() if cache_dir else None,
        cache_max_bytes=_int(env, "CUVIL_AOT_CACHE_MAX_BYTES", 4 << 30, 0, 1 << 62),
        num_threads=_int(env, "CUVIL_AOT_NUM_THREADS", 0, 0, 1024),
        cpu_level=_int(env, "CUVIL_AOT_CPU_LEVEL", 0, 0, 4),
        output_cache_bytes=_int(env, "CUVIL_AOT_OUTPUT_CACHE_BYTES", 256 << 20, 0, 1 << 62),
        cc=env.get("CUVIL_AOT_CC", "").strip(),
        hook=env.get("CUVIL_AOT_HOOK", "").strip() not in ("", "0"),
        cuda_archs=env.get("CUVIL_AOT_CUDA_ARCHS", "").strip(),
        cuda_one=_flag(env, "CUVIL_AOT_CUDA_ONE", True),
        cuda_pool=_flag(env, "CUVIL_AOT_CUDA_POOL", True),
        cuda_wgmma=_flag(env, "CUVIL_AOT_CUDA_WGMMA", True),
        cuda_wgmma_transpose=_flag(env, "CUVIL_AOT_CUDA_WGMMA_TRANSPOSE", True),
        cuda_wg_tail=_flag(env, "CUVIL_AOT_CUDA_WG_TAIL", True),
        cuda_wg_nmajor=_flag(env, "CUVIL_AOT_CUDA_WG_NMAJOR", True),
        cuda_tc_cluster=_flag(env, "CUVIL_AOT_CUDA_TC_CLUSTER", True),
        cuda_attention=_flag(env, "CUVIL_AOT_CUDA_ATTENTION", True),
        cuda_attention_split=_flag(env, "CUVIL_AOT_CUDA_ATTENTION_SPLIT", True),
        cuda_attention_grouped=_flag(env, "CUVIL_AOT_CUDA_ATTENTION_GROUPED", True),
        cuda_graph=_int(env, "CUVIL_AOT_CUDA_GRAPH", 4, 0, 1024),
        cuda_home=(env.get("CUDA_HOME", "") or env.get("CUDA_PATH", "")).strip(),
        signing_key=env.get("CUVIL_AOT_SIGNING_KEY", ""),
        verify_key=env.get("CUVIL_AOT_VERIFY_KEY", "").strip(),
        require_signed=env.get("CUVIL_AOT_REQUIRE_SIGNED", "").strip() not in ("", "0"),
        test_stop_at=env.get("CUVIL_AOT_TEST_STOP_AT", "").strip(),
        lock_timeout=_int(env, "CUVIL_AOT_LOCK_TIMEOUT", 30, 0, 86400),
        remote_cache=env.get("CUVIL_AOT_REMOTE_CACHE", "").strip(),
        remote_timeout=_float(env, "CUVIL_AOT_REMOTE_CACHE_TIMEOUT", 1.5, 0.01, 600.0),
        remote_ttl=_int(env, "CUVIL_AOT_REMOTE_CACHE_TTL", 30 * 86400, 1, 1 << 31),
        remote_endpoint=env.get("CUVIL_AOT_REMOTE_CACHE_ENDPOINT", "").strip(),
    )
