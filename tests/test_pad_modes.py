"""np.pad's 'edge', 'wrap', 'reflect' and 'symmetric' modes (frontend/pad_modes.py) against
np.pad exactly, on random shapes and views (hypothesis) of float32, int64 and bool, one to
three axes, pads wider than the axis (NumPy's repeated reflections), one-element axes
(reflect repeats the element), none on some axes; outputs poisoned before the call. An
empty axis with a pad raises NumPy's ValueError at the call; reflect_type='odd' and other
modes are refused at the user's line."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from conftest import check_exact, compile_source
from hypothesis import given, settings
from hypothesis import strategies as st
from test_elementwise import view_of

import cuvil_aot as cv

SOURCE = '''
import numpy as np
import cuvil_aot as cv

TYPES = ["f32[A,B]", "i64[A,B]", "bool_[A,B]"]

@cv.optimize(signatures=TYPES)
def pads(x):
    return (np.pad(x, 2, mode="edge"), np.pad(x, ((1, 3), (0, 5)), mode="wrap"),
            np.pad(x, ((4, 1), (2, 2)), mode="reflect"), np.pad(x, (3, 7), mode="symmetric"),
            np.pad(x[0], (8, 9), mode="reflect"), np.pad(x, ((0, 0), (1, 0)), "edge"))

@cv.optimize
def volume(x: cv.f32["A", "B", "C"]):
    return np.pad(x, ((1, 1), (0, 2), (3, 0)), mode="reflect"), np.pad(x, 1, mode="symmetric")

@cv.optimize
def audio(x: cv.f32["N"]):
    return np.pad(x, (200, 200), mode="reflect")  # an STFT's centred frames
'''

REFUSED = '''
import numpy as np
import cuvil_aot as cv

@cv.optimize
def odd(x: cv.f32["N"]):
    return np.pad(x, 2, mode="reflect", reflect_type="odd")

@cv.optimize
def mean_mode(x: cv.f32["N"]):
    return np.pad(x, 2, mode="mean")
'''


@pytest.fixture(scope="module")
def m(tmp_path_factory):
    return compile_source(tmp_path_factory.mktemp("pad_modes"), SOURCE)


@settings(max_examples=30, deadline=None)
@given(data=st.data(), a=st.integers(1, 6), b=st.integers(1, 6), c=st.integers(1, 4))
def test_against_numpy(m, data: st.DataObject, a: int, b: int, c: int) -> None:
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    check_exact(m.pads, data.draw(view_of((a, b), "float32")))
    check_exact(m.pads, rng.integers(-9, 9, (a, b)))
    check_exact(m.pads, rng.random((a, b)) < 0.5)
    check_exact(m.volume, data.draw(view_of((a, b, c), "float32")))
    check_exact(m.audio, data.draw(view_of((a * 40 + b,), "float32")))


def test_an_empty_axis_raises_numpys_error(m) -> None:
    with pytest.raises(ValueError, match="can't extend empty axis"):
        m.pads(np.ones((0, 3), np.float32))


def test_refused_at_the_users_line(tmp_path: Path) -> None:
    mod = compile_source(tmp_path, REFUSED)
    for fn, message in ((mod.odd, "reflect_type='odd'"), (mod.mean_mode, "mode 'mean'")):
        with pytest.raises(cv.CompileError, match=message) as e:
            fn(np.ones(4, np.float32))
        assert "^" in str(e.value)
