"""Int8 weights for inference: symmetric quantization with float32 scales, a plain NumPy
helper whose layout the compiler reads without a float32 copy (README, "Precision")."""

from __future__ import annotations

from typing import Any


def quantize_weights(w: Any, group: int | None = None, axis: int = 0) -> tuple[Any, Any]:
    """Quantize a 2-D weight to int8, symmetric, with float32 scales: ``(q, scale)``.

    ``axis`` is the output-channel axis of ``w`` (0 for a PyTorch ``(out, in)`` state-dict
    weight, used as ``x @ w.T``; 1 for an ``(in, out)`` weight used as ``x @ w``); the
    other axis is k, the one a matmul sums over. ``q`` has ``w``'s shape and layout.

    Per output channel (``group=None``): one scale per channel,
    ``scale[o] = max_k |w[o, k]| / 127`` (float32), ``q = clip(rint(w / scale), -127,
    127)`` with the float32 scale, so for an ``(out, in)`` weight ::

        w ≈ q.astype(np.float32) * scale[:, None]                 # scale: (out,)

    Per group (``group`` in 32, 64, 128 or any positive int): k is cut into runs of
    ``group`` elements (the last one shorter where k is not a multiple) with a scale each,
    ``scale[o, j] = max |w[o, j*group:(j+1)*group]| / 127``, shape ``(out, ceil(k /
    group))`` (``(ceil(k / group), out)`` for ``axis=1``)::

        w ≈ (q.reshape(out, k // group, group) * scale[:, :, None]).reshape(out, k)
        w ≈ q * scale[:, np.arange(k) // group]                   # any k

    A channel or group of zeros has scale 0 and q 0. Each element is within half a step
    of the weight: ``|w - q * scale| <= scale / 2 = max|w| / 254`` over its channel or
    group (plus float32's rounding of the product, 2^-24 relative). Non-finite weights
    raise ValueError.
    """
    import numpy as np

    if group is not None and (not isinstance(group, int) or group < 1):
        raise ValueError(f"group must be None or a positive int, not {group!r}")
    w = np.asarray(w)
    if w.ndim != 2 or not np.issubdtype(w.dtype, np.floating):
        raise ValueError(f"quantize_weights takes a 2-D float array, not {w.dtype} of "
                         f"{w.ndim} dimensions")
    if axis not in (0, 1, -1, -2):
        raise ValueError(f"axis must be 0 or 1 for a 2-D weight, not {axis}")
    if not np.isfinite(w).all():
        raise ValueError("quantize_weights: the weight holds inf or NaN")
    rows = np.asarray(w, np.float64) if axis in (0, -2) else np.asarray(w, np.float64).T
    out, k = rows.shape
    size = group if group is not None else max(k, 1)
    ngroups = -(-k // size)
    padded = np.zeros((out, ngroups * size))
    padded[:, :k] = rows
    amax = np.abs(padded.reshape(out, ngroups, size)).max(axis=2, initial=0.0)
    scale = (amax / 127).astype(np.float32)
    step = np.where(scale > 0, scale, 1).astype(np.float64)
    per_element = np.repeat(step, size, axis=1)[:, :k]
    q = np.clip(np.rint(rows / per_element), -127, 127).astype(np.int8)
    if group is None:
        scale = scale[:, 0]
    if axis in (1, -1):
        return np.ascontiguousarray(q.T), np.ascontiguousarray(scale.T)
    return q, scale
