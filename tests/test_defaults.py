"""Parameters with defaults: a call that leaves them out gets them, as in Python."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import assert_close, compile_source

SOURCE = '''
import numpy as np
import cuvil_aot as cv

@cv.optimize
def layer_norm(x: cv.f32["B", "D"], eps: float = 1e-5, scale: float = 1.0):
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    return scale * (x - mu) / np.sqrt(var + eps)
'''


@pytest.fixture(scope="module")
def m(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    return compile_source(tmp_path_factory.mktemp("defaults"), SOURCE)


CALLS = [((), {}), ((0.5,), {}), ((0.5, 2.0), {}), ((), {"scale": 3.0}),
         ((), {"eps": 0.25}), ((0.5,), {"scale": 3.0}), ((), {"scale": 3.0, "eps": 0.5})]


@pytest.mark.parametrize("call", CALLS, ids=str)
def test_left_out_parameters_take_their_defaults(m, call) -> None:  # type: ignore[no-untyped-def]
    args, keywords = call
    x = np.random.default_rng(len(args)).standard_normal((3, 7)).astype(np.float32)
    got = m.layer_norm(x, *args, **keywords)
    assert_close(got, m.layer_norm.py_func(x.astype(np.float64), *args, **keywords))


def test_a_value_given_twice_or_a_missing_array_is_pythons_type_error(m) -> None:  # type: ignore[no-untyped-def]
    x = np.ones((2, 3), np.float32)
    with pytest.raises(TypeError, match="multiple values for argument 'eps'"):
        m.layer_norm(x, 0.1, eps=0.2)
    with pytest.raises(TypeError, match="missing required argument 'x'"):
        m.layer_norm(eps=0.2)
