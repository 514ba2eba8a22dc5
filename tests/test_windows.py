"""NumPy's window functions np.hanning, np.hamming, np.blackman and np.bartlett, whose
Python code inside NumPy the interpreter inlines: it reads back a number it put in a list
(``values = np.array([0.0, M]); M = values[1]``), which the frontend now folds
(values.literal_element). Against NumPy (float64, within an ulp of libm's cos) for lengths
0, 1, 2, 9 and 400, and in an
STFT's framing (reflect padding, sliding windows, a periodic Hann window); indexing a
constant list with numbers known now gives numbers known now (a shape from one), past its
end NumPy's IndexError at the user's line. np.kaiser runs np.i0's Python (test_piecewise.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from conftest import check, check_exact, compile_source
from hypothesis import given, settings
from hypothesis import strategies as st
from test_elementwise import view_of

import cuvil_aot as cv

SOURCE = '''
import numpy as np
import cuvil_aot as cv
from numpy.lib.stride_tricks import sliding_window_view

@cv.optimize
def windows(x: cv.f32[9]):
    return (np.hanning(9) * x, np.hamming(9), np.blackman(9), np.bartlett(9), np.hanning(1),
            np.hanning(0), np.hamming(2), np.blackman(400), np.bartlett(400), np.kaiser(9, 5.0))

@cv.optimize
def frames(audio: cv.f32["N"]):
    n_fft, hop = 16, 4
    padded = np.pad(audio, (n_fft // 2, n_fft // 2), mode="reflect")
    window = np.hanning(n_fft + 1)[:-1].astype(np.float32)  # periodic
    return sliding_window_view(padded, n_fft)[::hop] * window

@cv.optimize
def sized_by_a_list(x: cv.f32["N"]):
    table = np.array([2, 3, 5])
    return np.zeros(int(table[1]), np.float32) + x[0], table[::-1] * x[0]
'''

REFUSED = '''
import numpy as np
import cuvil_aot as cv

@cv.optimize
def past_the_end(x: cv.f32["N"]):
    table = np.array([2, 3, 5])
    return x * table[3]
'''


@pytest.fixture(scope="module")
def m(tmp_path_factory):
    return compile_source(tmp_path_factory.mktemp("windows"), SOURCE)


def test_windows_are_numpys(m) -> None:
    x = np.linspace(-1, 1, 9, dtype=np.float32)
    check(m.windows, x)  # cos in float64: within an ulp of libm's


@settings(max_examples=20, deadline=None)
@given(data=st.data(), n=st.integers(9, 80))
def test_stft_frames(m, data: st.DataObject, n: int) -> None:
    check(m.frames, data.draw(view_of((n,), "float32")))
    check_exact(m.sized_by_a_list, data.draw(view_of((n,), "float32")))


def test_refused_at_the_users_line(tmp_path: Path) -> None:
    mod = compile_source(tmp_path, REFUSED)
    with pytest.raises(cv.CompileError, match="IndexError") as e:
        mod.past_the_end(np.ones(3, np.float32))
    assert "^" in str(e.value)
