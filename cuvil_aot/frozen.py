"""Frozen weights: arrays nothing can write, which compiled GEMMs pack once (README,
"Weights packed once")."""

from __future__ import annotations

from typing import Any


def freeze(array: Any) -> Any:
    """A read-only copy of ``array`` that no one can make writable again: pass it where a
    compiled function takes a weight, and each matmul that reads it packs its panels at
    the first call only, where an ordinary array is packed at every call (a write into it
    between two calls must show in the next result).

    The copy is C-contiguous and owned by the runtime; its views (``w.T``, slices) are
    frozen too, and its packed forms are freed with it. Writing into it raises
    NumPy's ``ValueError: assignment destination is read-only``. An array that is already
    frozen is returned as it is.
    """
    import numpy as np

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
    import numpy as np

    from cuvil_aot.runtime import native

    base = array
    while isinstance(base, np.ndarray):
        base = base.base
    return isinstance(base, native.Frozen)
