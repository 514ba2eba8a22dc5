"""Frozen weights: arrays nothing can write, which compiled GEMMs pack once (README,
"Weights packed once")."""

from __future__ import annotations

from typing import Any

import numpy as np


def freeze(array: Any) -> Any:
    """A read-only copy of ``array`` that no one can make writable again: pass it where a
    compiled function takes a weight, and each matmul that reads it packs its panels at
    the first call only, where an ordinary array is packed at every call (a write into it
    between two calls must show in the next result).

    The copy is C-contiguous and owned by the runtime; its views (``w.T``, slices) are
    frozen too, and its packed forms are freed with it. Writing into it raises
    NumPy's ``ValueError: assignment destination is read-only``. An array that is already
    frozen is returned as it is.

    A model's parameters freeze in one call: a dict, or a list or tuple holding arrays
    (named tuples too, nested), comes back as the same structure with every NumPy array
    in it frozen and anything else (numbers, strings, None) as it was: ``params =
    cv.freeze(params)``. A list of numbers is an array, as for ``np.asarray``.
    """
    return _freeze_arrays(array) if _holds_arrays(array) else _freeze_one(array)


def _holds_arrays(item: Any) -> bool:
    """A dict, or a list or tuple with a NumPy array somewhere in it."""
    if isinstance(item, dict):
        return True
    return isinstance(item, (list, tuple)) and any(
        isinstance(v, np.ndarray) or _holds_arrays(v) for v in item)


def _freeze_arrays(item: Any) -> Any:
    """``item`` with the NumPy arrays in its dicts, lists and tuples frozen."""
    if isinstance(item, np.ndarray):
        return _freeze_one(item)
    if isinstance(item, dict):
        return {key: _freeze_arrays(value) for key, value in item.items()}
    if isinstance(item, tuple) and hasattr(item, "_fields"):  # a named tuple
        return type(item)(*(_freeze_arrays(value) for value in item))
    if isinstance(item, (list, tuple)):
        return type(item)(_freeze_arrays(value) for value in item)
    return item


def _freeze_one(array: Any) -> Any:
    from cuvil_aot.runtime import native

    a = np.asarray(array)
    if is_frozen(a):
        return a
    if a.dtype.hasobject:
        raise TypeError(f"freeze: array must hold numbers, not {a.dtype} objects")
    c = a if a.flags.c_contiguous else a.copy(order="C")  # ascontiguousarray makes 0-d 1-d
    return np.frombuffer(native.Frozen(c.reshape(-1).view(np.uint8)), dtype=c.dtype).reshape(
        a.shape)


def is_frozen(array: Any) -> bool:
    """Whether ``array`` is a view of a buffer made by ``freeze``."""
    from cuvil_aot.runtime import native

    base = array
    while isinstance(base, np.ndarray):
        base = base.base
    return isinstance(base, native.Frozen)
