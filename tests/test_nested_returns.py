"""Return values as Hugging Face's attention returns them: a tuple holding a tuple or None
(``(attn_output, present)``, ``present = (k, v) if use_cache is True else None``), grown
by ``outputs += (weights,)``, with numbers and None beside arrays. The compiled call
returns the same nesting; ``out=`` takes one array per returned array, in order. A bool
the code compares by ``is`` takes True or False only (``numpy.True_ is True`` is False).
Checked against the Python function on float64 copies of random inputs (hypothesis),
``out=`` poisoned."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import assert_close, compile_source, poisoned
from hypothesis import given, settings
from hypothesis import strategies as st
from test_elementwise import view_of

import cuvil_aot as cv

SOURCE = '''
import numpy as np
import cuvil_aot as cv

KV = tuple[cv.f32["B", "P", "D"], cv.f32["B", "P", "D"]]


@cv.optimize
def attention(x: cv.f32["B", "T", "D"], layer_past: KV | None = None, use_cache: bool = False,
              output_attentions: bool = False):
    key, value = x * 0.5, x - 1.0
    if layer_past is not None:
        past_key, past_value = layer_past
        key = np.concatenate((past_key, key), axis=-2)
        value = np.concatenate((past_value, value), axis=-2)
    present = (key, value) if use_cache is True else None
    weights = x @ key.swapaxes(-1, -2)
    outputs = (weights @ value, present)
    if output_attentions:
        outputs += (weights,)
    return outputs


@cv.optimize
def numbers_and_none(x: cv.f32["N"]):
    return x.sum(), None, (x.max(), (x * 2,)), ()
'''


@pytest.fixture(scope="module")
def m(tmp_path_factory: pytest.TempPathFactory) -> Any:
    return compile_source(tmp_path_factory.mktemp("nested_returns"), SOURCE)


def f64(value: Any) -> Any:
    if isinstance(value, tuple):
        return tuple(map(f64, value))
    return value.astype(np.float64) if isinstance(value, np.ndarray) else value


def arrays(value: Any) -> list[Any]:
    """The arrays and numbers of a nested return value, in order."""
    if isinstance(value, tuple):
        return [a for v in value for a in arrays(v)]
    return [] if value is None else [value]


def assert_same_nesting(got: Any, ref: Any, dtype: Any) -> None:
    if isinstance(ref, tuple):
        assert type(got) is tuple and len(got) == len(ref), (got, ref)
        for g, r in zip(got, ref):
            assert_same_nesting(g, r, dtype)
    elif ref is None:
        assert got is None
    else:
        assert isinstance(got, np.ndarray) == isinstance(ref, np.ndarray), (got, ref)
        assert_close(got, ref, dtype)


@settings(max_examples=25, deadline=None)
@given(data=st.data(), b=st.integers(1, 2), t=st.integers(1, 4), p=st.integers(0, 4),
       d=st.integers(1, 4), past=st.booleans(), use_cache=st.booleans(),
       output_attentions=st.booleans())
def test_attention_outputs_as_hugging_face_returns_them(
        m: Any, data: st.DataObject, b: int, t: int, p: int, d: int, past: bool,
        use_cache: bool, output_attentions: bool) -> None:
    x = data.draw(view_of((b, t, d), "float32", special=False))
    layer_past = tuple(data.draw(view_of((b, p, d), "float32", special=False))
                       for _ in range(2)) if past else None
    flags = (use_cache, output_attentions)
    ref = m.attention.py_func(f64(x), f64(layer_past), *flags)
    assert_same_nesting(m.attention(x, layer_past, *flags), ref, np.float32)
    outs = tuple(poisoned(a.shape, np.float32) for a in arrays(ref))
    got = m.attention(x, layer_past, *flags, out=outs)
    assert all(a is o for a, o in zip(arrays(got), outs))
    assert_same_nesting(got, ref, np.float32)


@settings(max_examples=15, deadline=None)
@given(data=st.data(), n=st.integers(1, 6))
def test_numbers_none_and_empty_tuples(m: Any, data: st.DataObject, n: int) -> None:
    x = data.draw(view_of((n,), "float32", special=False))
    got = m.numbers_and_none(x)
    assert_same_nesting(got, m.numbers_and_none.py_func(f64(x)), np.float32)
    assert isinstance(got[0], np.float32) and isinstance(got[2][0], np.float32)


def test_a_flag_compared_by_is_takes_true_or_false(m: Any) -> None:
    x = np.ones((1, 2, 3), np.float32)
    for flag in (np.True_, 1):
        with pytest.raises(cv.SignatureError, match=r"argument 'use_cache': expected True or "
                           r"False \(the code compares it with `is`\), got (numpy.bool|int)"):
            m.attention(x, None, flag)
    assert m.attention(x, None, False, np.True_)[1] is None  # compared by its truth: taken


def test_a_list_returned_is_refused(tmp_path: Path) -> None:
    mod = compile_source(tmp_path, "import numpy as np\nimport cuvil_aot as cv\n\n"
                         "@cv.optimize\ndef f(x: cv.f32['N']):\n    return x, [x, x]\n")
    with pytest.raises(cv.CompileError, match=r"must return arrays or numbers \(or tuples of "
                       r"them, or None\), got a list"):
        mod.f(np.ones(2, np.float32))


@pytest.mark.gpu
@pytest.mark.parametrize("framework", ["torch", "cupy"])
def test_nested_returns_of_device_arrays(tmp_path: Path, framework: str) -> None:
    from gpu_harness import Framework, device_arch

    fw = Framework(framework)
    mod = compile_source(tmp_path, SOURCE, cuda_archs=(device_arch(),))
    rng = np.random.default_rng(3)
    x, pk, pv = (rng.standard_normal(s).astype(np.float32) for s in ((2, 3, 4), (2, 5, 4),
                                                                      (2, 5, 4)))
    ref = mod.attention.py_func(f64(x), (f64(pk), f64(pv)), True, True)
    got = mod.attention(fw.put(x), (fw.put(pk), fw.put(pv)), True, True)
    assert got[1] is not None and len(got) == 3
    for g, r in zip(arrays(got), arrays(ref)):
        assert_close(fw.get(g), r, np.float32)
    assert mod.attention(fw.put(x))[1] is None
