"""Runs compiled functions on device arrays and judges them against NumPy in float64.

Inputs are drawn per signature string (``"f32[A,B], f64[B]"``, ``"f32[I,4H], float"``)
with fresh random sizes and values, put on the device by a framework (CuPy, PyTorch,
Numba) as contiguous arrays or as views, and the results (and poisoned ``out=`` arrays)
are compared as the CPU tests compare theirs (conftest.check).
"""

from __future__ import annotations

import contextlib
import ctypes
import re
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest
from conftest import assert_close, poisoned, to64

DTYPES = {"f16": "float16", "f32": "float32", "f64": "float64", "i8": "int8", "i16": "int16",
          "i32": "int32", "i64": "int64", "u8": "uint8", "u64": "uint64", "bool_": "bool"}
_PARAM = re.compile(r"(\w+)\[([^\]]*)\]|\bfloat\b|\bint\b")
_DIM = re.compile(r"(\d*)\*?([A-Za-z_]\w*)?")


def device_arch() -> str:
    """sm_XY of device 0, from the driver."""
    cuda = ctypes.CDLL("libcuda.so.1")
    major, minor, dev = ctypes.c_int(), ctypes.c_int(), ctypes.c_int()
    assert cuda.cuInit(0) == 0 and cuda.cuDeviceGet(ctypes.byref(dev), 0) == 0
    cuda.cuDeviceGetAttribute(ctypes.byref(major), 75, dev)
    cuda.cuDeviceGetAttribute(ctypes.byref(minor), 76, dev)
    return f"sm_{major.value}{minor.value}"


class Framework:
    """How one array library puts NumPy arrays on the device and back."""

    def __init__(self, name: str):
        self.name = name
        self.lib = pytest.importorskip(name if name != "numba" else "numba.cuda")

    def put(self, a: np.ndarray, view: str = "contiguous") -> Any:
        """A device copy of ``a``; a transposed, strided or misaligned (contiguous, one
        element past an allocation's start) view of one where asked (Numba's device arrays
        take none: they stay contiguous)."""
        if self.name != "numba" and view == "transposed" and a.ndim == 2:
            return self._put(np.array(a.T, order="C")).T
        if self.name != "numba" and view == "strided" and a.ndim >= 1:
            return self._put(np.repeat(a, 2, axis=-1))[..., ::2]
        if self.name != "numba" and view == "misaligned" and a.ndim >= 1:  # 4 bytes past 16
            return self._put(np.concatenate([a.ravel()[:1], a.ravel()]))[1:].reshape(a.shape)
        return self._put(np.array(a, order="C"))  # (ascontiguousarray would make 0-d 1-d)

    def _put(self, a: np.ndarray) -> Any:
        if self.name == "torch":
            return self.lib.from_numpy(a).cuda()
        if self.name == "cupy":
            return self.lib.asarray(a)
        return self.lib.to_device(a)

    def get(self, x: Any) -> np.ndarray:
        if self.name == "torch":
            return x.cpu().numpy()
        if self.name == "cupy":
            return self.lib.asnumpy(x)
        return x.copy_to_host()

    def kind(self) -> type:
        return type(self._put(np.zeros(1, np.float32)))

    def sync(self) -> None:
        if self.name == "torch":
            self.lib.cuda.synchronize()
        elif self.name == "cupy":
            self.lib.cuda.runtime.deviceSynchronize()
        else:
            self.lib.synchronize()


def parse_signature(sig: str) -> list[tuple[str, tuple[str, ...]] | str]:
    """'x: f32[A, B], s: float' -> [('float32', ('A', 'B')), 'float']."""
    params: list[tuple[str, tuple[str, ...]] | str] = []
    for m in _PARAM.finditer(sig):
        if m.group(1):
            dims = tuple(d.strip() for d in m.group(2).split(",") if d.strip())
            params.append((DTYPES[m.group(1)], dims))
        else:
            params.append(m.group(0))
    return params


def dim_size(spec: str, sizes: dict[str, int]) -> int:
    m = _DIM.fullmatch(spec.replace(" ", ""))
    assert m, spec
    coeff = int(m.group(1)) if m.group(1) else 1
    return coeff * sizes.setdefault(m.group(2), 0) if m.group(2) else coeff


def random_array(rng: np.random.Generator, dtype: str, shape: tuple[int, ...],
                 special: bool) -> np.ndarray:
    # np.asarray: of shape () the generators and ufuncs give NumPy scalars, which an
    # f32[()] signature refuses as NumPy's own functions would not; a 0-d array it takes
    if dtype == "bool":
        return np.asarray(rng.random(shape) < 0.5)
    if dtype.startswith("int"):
        return np.asarray(rng.integers(-50, 51, shape).astype(dtype))
    if dtype.startswith("uint"):
        return np.asarray(rng.integers(0, 101, shape).astype(dtype))
    a = np.asarray((rng.standard_normal(shape) * 3).astype(dtype))
    if special and a.size:
        mask = rng.random(shape) < 0.1
        a[mask] = rng.choice(np.array([np.nan, np.inf, -np.inf, 0.0, -0.0], dtype), mask.sum())
    return a


def draw_args(rng: np.random.Generator, sig: str, sizes: dict[str, int],
              special: bool) -> list[Any]:
    args: list[Any] = []
    for p in parse_signature(sig):
        if p == "float":
            args.append(float(rng.uniform(-4, 4)))
        elif p == "int":
            args.append(int(rng.integers(-4, 5)))
        else:
            dtype, dims = p  # type: ignore[misc]
            shape = tuple(dim_size(d, sizes) for d in dims)
            args.append(random_array(rng, dtype, shape, special))
    return args


def run_check(fn: Callable[..., Any], fw: Framework, args: list[Any], view: str,
              scale: float) -> None:
    """fn on device arrays (fresh outputs and poisoned out=) against NumPy in float64."""
    py = fn.py_func  # type: ignore[attr-defined]
    dev = [fw.put(a, view) if isinstance(a, np.ndarray) else a for a in args]
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            expect = py(*args)
        except (ValueError, TypeError, ZeroDivisionError) as exc:
            with pytest.raises(type(exc)):
                fn(*dev)
            return
        ref = py(*to64(args))
    expects = expect if isinstance(expect, tuple) else (expect,)
    refs = ref if isinstance(ref, tuple) else (ref,)
    refs = tuple(r if np.asarray(e).dtype.kind == "f" else e for r, e in zip(refs, expects))
    got = fn(*dev)
    gots = got if isinstance(got, tuple) else (got,)
    kind = fw.kind()
    for g, r, e in zip(gots, refs, expects):
        assert isinstance(g, kind), f"result is {type(g).__name__}, not {kind.__name__}"
        host = fw.get(g)
        assert host.dtype == np.asarray(e).dtype, (host.dtype, np.asarray(e).dtype)
        assert_close(host, r, host.dtype, scale, e)
    outs = tuple(fw.put(poisoned(np.shape(e), np.asarray(e).dtype)) for e in expects)
    back = fn(*dev, out=outs if len(outs) > 1 else outs[0])
    for o, b, r, e in zip(outs, back if isinstance(back, tuple) else (back,), refs, expects):
        assert b is o
        assert_close(fw.get(o), r, np.asarray(e).dtype, scale, e)


def check_module(module: Any, fw: Framework, seed: int, scale: Callable[[str, dict], float],
                 special: bool,
                 sizes_of: Callable[[np.random.Generator], dict[str, int]],
                 views: tuple[str, ...] = ("contiguous", "strided", "transposed")) -> list[str]:
    """Every signature of every compiled function of ``module`` with its inputs in each of
    ``views`` (see Framework.put); the failures, described."""
    failures = []
    rng = np.random.default_rng(seed)
    for name, sigs in sorted(module.__artifact__.manifest["functions"].items()):
        fn = getattr(module, name)
        for sig in sigs:
            for view in views:
                sizes = sizes_of(rng)
                try:  # float -> int casts of NaN/Inf/huge values are undefined: no specials
                    args = draw_args(rng, sig, sizes, special and name != "casts")
                    run_check(fn, fw, args, view, scale(name, sizes))
                except Exception as exc:  # noqa: BLE001 - every failure is reported at the end
                    text = str(exc).replace("\n", " ")[:300]
                    failures.append(f"{name}({sig}) {view} {sizes}: {type(exc).__name__}: {text}")
    return failures


def put_in_layout(a: np.ndarray, layout: str):
    """``a`` as a torch CUDA tensor laid out as ``layout``: contiguous; padded: rows past
    their length, 16-byte aligned (row stride != k); shifted: one element off (misaligned:
    no tensor maps, no cp.async); strided: every other element of the last axis."""
    torch = pytest.importorskip("torch")
    if layout == "contiguous" or a.ndim < 2:
        return torch.from_numpy(a).cuda()
    last = a.shape[-1]
    if layout == "strided":
        return torch.from_numpy(np.repeat(a, 2, axis=-1)).cuda()[..., ::2]
    width = (last + 3) // 4 * 4 + 4 if layout == "padded" else last + 1
    store = torch.zeros((*a.shape[:-1], width), dtype=torch.float32, device="cuda")
    first = 1 if layout == "shifted" else 0
    store[..., first:first + last] = torch.from_numpy(a)
    return store[..., first:first + last]


def function_for(module: Any, case: str) -> Any:
    """The module's function a test case is named after: ``mm_t_deep`` -> ``mm_t``."""
    name = case
    while not hasattr(module, name):
        name = name.rsplit("_", 1)[0]
    return getattr(module, name)


def kernels_launched(run: Callable[[], Any]) -> list[str]:
    """The names of the CUDA kernels ``run()`` launched (torch's profiler: CUPTI sees the
    driver's launches too); [] where it records none (then ``run()`` ran plainly)."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    try:
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            run()
            torch.cuda.synchronize()
        return [e.key for e in prof.key_averages()]
    except RuntimeError:  # no CUPTI: judge the numbers only
        run()
        return []


@contextlib.contextmanager
def knob(name: str, value: Any) -> Iterator[Any]:
    """The runtime's setting ``name`` (``native.configure``) at ``value`` inside; as it was
    after."""
    from cuvil_aot.runtime import native

    before = native.info()[name]
    native.configure(**{name: value})
    try:
        yield value
    finally:
        native.configure(**{name: before})
