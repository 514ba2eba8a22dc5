"""Shapes as NumPy sees them: dimensions of different arguments that an op needs equal
(each argument declared with its own symbol) compile, are checked at the call, and
raise NumPy's ValueError with NumPy's message where they differ; a symbolic dimension
that is 1 at the call broadcasts as NumPy's does, through a specialization of the
signature (frontend/size_one.py), up to the number of them compiled; beyond, the call is
refused with the reason.
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import check, compile_source, load_source
from hypothesis import given, settings
from hypothesis import strategies as st
from test_elementwise import view_of

from cuvil_aot.compiler.frontend import lower_module
from cuvil_aot.compiler.ir.printer import format_function
from cuvil_aot.compiler.passes import run_pipeline
from cuvil_aot.errors import SignatureShapeError

SOURCE = '''
import numpy as np
import cuvil_aot as cv

@cv.optimize(signatures=["f32[A], f32[B]", "f64[A], f64[B]"])
def add(a, b):
    s = a + b
    return s * b - a, np.maximum(s, a)

@cv.optimize(signatures=["f32[A], f32[B]", "f32[A], f32[1]", "f32[1], f32[B]"])
def add_or_broadcast(a, b):
    return a + b

@cv.optimize
def add_and_sum(a: cv.f32["A"], b: cv.f32["B"]):
    return (a + b) * a.sum() + a.shape[0]

@cv.optimize
def clamped(x: cv.f32["B", "T"]):
    n = x.shape[1]
    return x[:, :4] * 2, x[1:-1], x[:, 1:] - x[:, :-1], x[:, 2:n - 1:2]

@cv.optimize
def int_indices(x: cv.f32["B", "T"]):
    return x[:, 0] * 2, x[-1], x[:, -2] + x[0, 3]

@cv.optimize
def cube(a: cv.f32["A", "B", "C"], b: cv.f32["D", "E", "F"]):
    return a + b

@cv.optimize
def rows(a: cv.f32["A", "B"], b: cv.f32["C", "D"]):
    return a * 2 - b

@cv.optimize
def select(c: cv.bool_["A"], x: cv.f32["B"], y: cv.f32["C"]):
    return np.where(c, x, y)

@cv.optimize(signatures=["f32[N,K], f32[J,M]", "f64[N,K], f64[J,M]"])
def mm(x, w):
    return x @ w

@cv.optimize
def vectors(v: cv.f32["K"], w: cv.f32["J", "M"], u: cv.f32["L"]):
    return v @ w, v @ u

@cv.optimize
def concat(x: cv.f32["A", "B"], y: cv.f32["C", "D"]):
    return np.concatenate([x, y * 2], axis=1)

@cv.optimize
def stack(x: cv.f32["A", "B"], y: cv.f32["C", "D"]):
    return np.stack([x, y + 1], axis=-1)

@cv.optimize(signatures=["f32[N]", "f64[N]"])
def to_constants(x):
    return x.reshape(4, 8) * 2, np.reshape(x, (2, -1, 4)) + 1

@cv.optimize
def product_to_constants(x: cv.f64["N", "M"], y: cv.f64[8]):
    return (x * 2).reshape(4, 8) + y, x.reshape(32)

@cv.optimize
def to_shape_of(x: cv.f32["N"], y: cv.f32["A", "B"]):
    return x.reshape(y.shape) + y

@cv.optimize
def flat_plus(x: cv.f32["A", "B"], y: cv.f32["C"]):
    return x.reshape(-1) * y
'''

sizes = st.integers(0, 5)
REFUSAL = "must have equal sizes"
HOW = "write one symbol for both, or a literal 1 where the size is 1"


def numpy_error(fn, *args) -> Exception | None:
    """NumPy's exception for the Python function on ``args``, or None."""
    try:
        with np.errstate(all="ignore"):
            fn.py_func(*args)
    except Exception as exc:
        return exc
    return None


def raises_like_numpy(fn, *args) -> None:
    """The compiled function raises NumPy's exception: its type and its message."""
    want = numpy_error(fn, *args)
    assert want is not None
    with pytest.raises(type(want)) as got:
        fn(*args)
    assert str(got.value).strip() == str(want).strip()


def refused(fn, *args) -> None:
    """NumPy broadcasts size-1 dimensions here, more than the specializations cover; the
    compiled function says why not."""
    assert numpy_error(fn, *args) is None
    with pytest.raises(SignatureShapeError) as got:
        fn(*args)
    assert isinstance(got.value, ValueError)
    assert REFUSAL in str(got.value) and HOW in str(got.value), str(got.value)


def other_size(data: st.DataObject, n: int) -> int:
    """Often ``n`` itself (the arrays fit), else any size, 0 and 1 included."""
    return data.draw(st.one_of(st.just(n), sizes))


def by_numpy(fn, *args, scale: float = 1.0) -> None:
    """The right answer where the shapes fit or broadcast, NumPy's error where not."""
    error = numpy_error(fn, *args)
    if error is not None:
        raises_like_numpy(fn, *args)
    else:
        check(fn, *args, scale=scale)


@settings(max_examples=40, deadline=None)
@given(data=st.data(), a=sizes, dtype=st.sampled_from(["float32", "float64"]))
def test_elementwise_of_independent_symbols(compiled, data, a, dtype):
    b = other_size(data, a)
    by_numpy(compiled.add, data.draw(view_of((a,), dtype)), data.draw(view_of((b,), dtype)))


@settings(max_examples=30, deadline=None)
@given(data=st.data(), a=sizes)
def test_size_one_signatures_take_what_the_refusal_leaves(compiled, data, a):
    """The refusal is a failed match: a later signature with a literal 1 broadcasts."""
    b = other_size(data, a)
    x, y = data.draw(view_of((a,), "float32")), data.draw(view_of((b,), "float32"))
    if numpy_error(compiled.add_or_broadcast, x, y) is not None:
        raises_like_numpy(compiled.add_or_broadcast, x, y)
    else:
        check(compiled.add_or_broadcast, x, y)


@settings(max_examples=40, deadline=None)
@given(data=st.data(), a=sizes, b=sizes)
def test_elementwise_of_two_dimensional_and_three_operands(compiled, data, a, b):
    c, d = other_size(data, a), other_size(data, b)
    by_numpy(compiled.rows, data.draw(view_of((a, b), "float32")),
             data.draw(view_of((c, d), "float32")))
    e = other_size(data, a)
    cond = data.draw(view_of((a,), "bool"))
    by_numpy(compiled.select, cond, data.draw(view_of((c,), "float32")),
             data.draw(view_of((e,), "float32")))


def test_messages_name_the_shapes(compiled):
    x3, x4, x1 = (np.ones(n, np.float32) for n in (3, 4, 1))
    raises_like_numpy(compiled.add, x3, x4)
    with pytest.raises(ValueError, match=r"shapes \(3,\) \(4,\)"):
        compiled.add(x3, x4)
    with pytest.raises(ValueError, match=r"shapes \(3,5\) \(4,5\)"):
        compiled.rows(np.ones((3, 5), np.float32), np.ones((4, 5), np.float32))
    cube = np.ones((1, 1, 1), np.float32), np.ones((2, 3, 4), np.float32)
    with pytest.raises(SignatureShapeError, match=r"shapes \(1,1,1\) \(2,3,4\)"):
        compiled.cube(*cube)
    refused(compiled.cube, *cube)


def test_specializations_follow_their_signature_once(tmp_path):
    """Each after the signature it specializes; one the user declared is not made again."""
    module = load_source(tmp_path, """
import cuvil_aot as cv

@cv.optimize(signatures=["f32[A], f32[B]", "f32[A], f32[1]", "f64[A], f64[B]"])
def add(a, b):
    return a + b
""")
    got = [str(sig) for sig, _ in lower_module(module).functions["add"]]
    assert got == ["a: f32[A], b: f32[B]", "a: f32[1], b: f32[B]", "a: f32[A], b: f32[1]",
                   "a: f64[A], b: f64[B]", "a: f64[1], b: f64[B]", "a: f64[A], b: f64[1]"]


@settings(max_examples=40, deadline=None)
@given(data=st.data(), a=sizes, b=sizes)
def test_size_one_of_a_symbol_broadcasts(compiled, data, a, b):
    """``a`` of size 1 against ``b``: a broadcast there, and one element everywhere else
    (its sum, its length), as in NumPy."""
    x, y = data.draw(view_of((a,), "float32")), data.draw(view_of((b,), "float32"))
    by_numpy(compiled.add_and_sum, x, y)
    by_numpy(compiled.add_and_sum, y, x)


@settings(max_examples=40, deadline=None)
@given(data=st.data(), b=st.integers(0, 7), t=st.integers(0, 7))
def test_slice_bounds_past_a_symbolic_axis_clamp(compiled, data, b, t):
    """``x[:, :4]`` of 3 columns is 3 columns, ``x[1:-1]`` of one row is empty: Python's
    clamping, decided at the call."""
    by_numpy(compiled.clamped, data.draw(view_of((b, t), "float32")))


@settings(max_examples=40, deadline=None)
@given(data=st.data(), b=st.integers(0, 5), t=st.integers(0, 5))
def test_int_index_out_of_a_symbolic_axis_raises_index_error(compiled, data, b, t):
    """NumPy's IndexError with NumPy's message, not a failed signature match."""
    x = data.draw(view_of((b, t), "float32"))
    if numpy_error(compiled.int_indices, x) is not None:
        raises_like_numpy(compiled.int_indices, x)
    else:
        check(compiled.int_indices, x)


@settings(max_examples=40, deadline=None)
@given(data=st.data(), shape=st.tuples(sizes, sizes, sizes),
       ones=st.sampled_from([(), (0,), (1,), (2,), (3,), (4,), (5,), (2, 1), (2, 4)]))
def test_size_one_on_one_or_two_axes_of_three(compiled, data, shape, ones):
    """Each one of six symbols as 1, or two on the last two axes: the first eight
    specializations, fewest ones first, the last axis's first (broadcast_all's order)."""
    left, right = list(shape), list(shape)
    for i in ones:
        (left if i < 3 else right)[i % 3] = 1
    by_numpy(compiled.cube, data.draw(view_of(tuple(left), "float32")),
             data.draw(view_of(tuple(right), "float32")))


def test_one_symbol_after_unification(tmp_path):
    """After ``A == B`` the body compiles as if written with one symbol (fusion, codegen)."""
    module = load_source(tmp_path, """
import numpy as np
import cuvil_aot as cv

@cv.optimize(signatures=["f32[A], f32[B]", "f32[A], f32[A]"])
def add(a, b):
    s = a + b
    return s * b - a, np.maximum(s, a)
""")
    lowered = lower_module(module).functions["add"]
    (_, two), (_, one) = lowered[0], lowered[-1]  # between them: A or B as 1 (size_one.py)
    assert [f"{a.left} == {a.right}" for a in two.assumptions] == ["A == B"]
    assert {str(p.type) for p in two.param_nodes} == {"float32[A]"}
    body = [format_function(run_pipeline(fn)).splitlines()[1:] for fn in (two, one)]
    assert body[0] == ["  # assumes A == B"] + body[1]


@settings(max_examples=40, deadline=None)
@given(data=st.data(), n=sizes, k=sizes, m=sizes, dtype=st.sampled_from(["float32", "float64"]))
def test_matmul_of_independent_inner_symbols(compiled, data, n, k, m, dtype):
    j = other_size(data, k)
    x, w = data.draw(view_of((n, k), dtype, special=False)), \
        data.draw(view_of((j, m), dtype, special=False))
    if numpy_error(compiled.mm, x, w) is not None:
        raises_like_numpy(compiled.mm, x, w)
    else:
        check(compiled.mm, x, w, scale=k + 1)


@settings(max_examples=30, deadline=None)
@given(data=st.data(), k=sizes, m=sizes)
def test_matmul_of_vectors(compiled, data, k, m):
    j, ell = other_size(data, k), other_size(data, k)
    args = (data.draw(view_of((k,), "float32", special=False)),
            data.draw(view_of((j, m), "float32", special=False)),
            data.draw(view_of((ell,), "float32", special=False)))
    error = numpy_error(compiled.vectors, *args)
    if error is not None:
        raises_like_numpy(compiled.vectors, *args)
    else:
        check(compiled.vectors, *args, scale=k + 1)


@settings(max_examples=40, deadline=None)
@given(data=st.data(), a=sizes, b=sizes, d=sizes)
def test_concatenate(compiled, data, a, b, d):
    c = other_size(data, a)
    x, y = data.draw(view_of((a, b), "float32")), data.draw(view_of((c, d), "float32"))
    if numpy_error(compiled.concat, x, y) is not None:
        raises_like_numpy(compiled.concat, x, y)
    else:
        check(compiled.concat, x, y)


@settings(max_examples=40, deadline=None)
@given(data=st.data(), a=sizes, b=sizes)
def test_stack(compiled, data, a, b):
    c, d = other_size(data, a), other_size(data, b)
    x, y = data.draw(view_of((a, b), "float32")), data.draw(view_of((c, d), "float32"))
    if numpy_error(compiled.stack, x, y) is not None:
        raises_like_numpy(compiled.stack, x, y)
    else:
        check(compiled.stack, x, y)


@settings(max_examples=30, deadline=None)
@given(data=st.data(), n=st.sampled_from([0, 1, 8, 30, 31, 32, 33, 64]),
       dtype=st.sampled_from(["float32", "float64"]))
def test_reshape_of_a_symbolic_length_into_constants(compiled, data, n, dtype):
    check(compiled.to_constants, data.draw(view_of((n,), dtype)))
    if n != 32:
        raises_like_numpy(compiled.to_constants, np.zeros(n, dtype))
        with pytest.raises(ValueError, match=rf"cannot reshape array of size {n} into shape "
                                             r"\(4,8\)"):
            compiled.to_constants(np.zeros(n, dtype))


@settings(max_examples=40, deadline=None)
@given(data=st.data(), a=sizes, b=sizes)
def test_reshape_product_check(compiled, data, a, b):
    n = data.draw(st.one_of(st.just(a * b), sizes))
    x, y = data.draw(view_of((n,), "float32")), data.draw(view_of((a, b), "float32"))
    if numpy_error(compiled.to_shape_of, x, y) is not None:
        raises_like_numpy(compiled.to_shape_of, x, y)
    else:
        check(compiled.to_shape_of, x, y)
    c = data.draw(st.one_of(st.just(a * b), sizes))
    x2, y2 = data.draw(view_of((a, b), "float32")), data.draw(view_of((c,), "float32"))
    by_numpy(compiled.flat_plus, x2, y2)  # A*B as 1 is A and B as 1


@settings(max_examples=30, deadline=None)
@given(data=st.data(), shape=st.sampled_from([(4, 8), (8, 4), (32, 1), (1, 32), (2, 16),
                                               (3, 10), (0, 5), (5, 7), (1, 1)]))
def test_reshape_of_a_product_into_constants(compiled, data, shape):
    """N*M == 32 solves for no one symbol: checked at the call, the reshape as it is."""
    x, y = data.draw(view_of(shape, "float64")), data.draw(view_of((8,), "float64"))
    if numpy_error(compiled.product_to_constants, x, y) is not None:
        raises_like_numpy(compiled.product_to_constants, x, y)
    else:
        check(compiled.product_to_constants, x, y)


# GPU ---------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def gpu_compiled(tmp_path_factory):
    from gpu_harness import device_arch

    return compile_source(tmp_path_factory.mktemp("gpu_call_time_shapes"), SOURCE,
                          cuda_archs=(device_arch(),))


@pytest.mark.gpu
@pytest.mark.parametrize("framework", ["cupy", "torch"])
def test_gpu_size_one_specializations_and_clamped_slices(gpu_compiled, framework):
    """Device arrays take the same specializations and run-time slices as NumPy arrays."""
    from gpu_harness import Framework, run_check

    fw = Framework(framework)
    rng = np.random.default_rng(7)
    cases = [("add_and_sum", [(a,), (b,)]) for a in (0, 1, 5) for b in (1, 5)]
    cases += [("cube", [(1, 3, 4), (2, 3, 4)]), ("cube", [(2, 1, 4), (2, 3, 4)]),
              ("rows", [(1, 4), (3, 4)]), ("rows", [(1, 1), (3, 4)])]
    cases += [("clamped", [(b, t)]) for b in (0, 1, 3) for t in (0, 1, 2, 5, 9)]
    for name, shapes in cases:
        args = [rng.standard_normal(s).astype(np.float32) for s in shapes]
        for view in ("contiguous", "strided"):
            run_check(getattr(gpu_compiled, name), fw, args, view, 8.0)
