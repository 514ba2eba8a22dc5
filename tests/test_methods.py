"""Marked methods: ``self`` is passed by the attributes its class body declares (arrays,
numbers, dicts, lists and instances of other such classes, item by item), its methods,
properties, static and class methods inlined, its class constants compiled in; checked
against the Python method on NumPy in float64 on random shapes (hypothesis), outputs
poisoned. Also what the call checks (the instance's exact class, a missing attribute, an
own attribute hiding what the code read from the class) and what the build refuses
(an undeclared attribute, one declared as a type compiled code cannot take, an attribute
assigned), each at the user's line."""

from __future__ import annotations

import copy
import warnings
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
import dataclasses
import numpy as np
import cuvil_aot as cv

class Linear:
    w: cv.f32["I", "O"]
    b: cv.f32["O"]

    def __init__(self, w, b):
        self.w, self.b = w, b

    def __call__(self, x):
        return x @ self.w + self.b

class LayerNorm:
    g: cv.f32["D"]
    b: cv.f32["D"]
    eps = 1e-3  # a class constant: compiled in

    def __init__(self, g, b):
        self.g, self.b = g, b

    def __call__(self, x):
        m = x.mean(-1, keepdims=True)
        v = ((x - m) ** 2).mean(-1, keepdims=True)
        return (x - m) / np.sqrt(v + self.eps) * self.g + self.b

class Block:
    ln: LayerNorm
    up: Linear  # D -> H
    down: Linear  # H -> D: Linear's sizes are each instance's own
    scale: float
    name: str  # not an argument: never read
    spare: cv.f32["Q"]  # never set, never read: not passed

    def __init__(self, ln, up, down, scale):
        self.ln, self.up, self.down, self.scale = ln, up, down, scale
        self.name = "block"

    @staticmethod
    def act(h):
        return np.tanh(h)

    @classmethod
    def gain(cls):
        return cls.GAIN

    GAIN = 2.0

    @property
    def width(self):
        return self.up.w.shape[1]

    def mlp(self, x):
        return self.down(self.act(self.up(x)))

    @cv.optimize(fallback="python")  # Model's float64 reference runs it in Python
    def __call__(self, x: cv.f32["B", "D"]):
        return x + self.mlp(self.ln(x)) * self.scale * self.gain() / self.width

class Model:
    blocks: [Block] * 2
    head: {"w": cv.f32["D", "V"]}

    def __init__(self, blocks, head):
        self.blocks, self.head = blocks, head

    @cv.optimize
    def forward(self, x: cv.f32["B", "D"]):
        for blk in self.blocks:
            x = blk(x)
        return x @ self.head["w"]

class Cache:
    k: cv.f32["S", "D"]

    def __init__(self, k):
        self.k = k

    @cv.optimize
    def append(self, x: cv.f32["D"], t: int):
        self.k[t] = x
        return self.k[: t + 1].sum(0)

class Scaled:
    s: float

    def __init__(self, s):
        self.s = s

    @cv.optimize(signatures=["f32[N]", "f64[N]"])
    def apply(self, x):
        return x * self.s

class Slotted:
    __slots__ = ("w",)
    w: cv.f32["N"]

    def __init__(self, w):
        self.w = w

    @cv.optimize
    def times(self, x: cv.f32["N"]):
        return x * self.w

@cv.optimize
def twice(layer: Linear, x: cv.f32["B", "D"]):  # an instance as a function's argument
    return layer(layer(x))

@dataclasses.dataclass
class Affine:
    w: cv.f32["N"]
    bias: float = 0.5

    @cv.optimize
    def apply(self, x: cv.f32["N"]):
        return x * self.w + self.bias
'''


@pytest.fixture(scope="module")
def m(tmp_path_factory):
    return compile_source(tmp_path_factory.mktemp("methods"), SOURCE)


def to64(value: Any) -> Any:
    """Float arrays anywhere (in dicts, lists and instances' attributes) made float64."""
    if isinstance(value, dict):
        return {k: to64(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(to64(v) for v in value)
    if isinstance(value, np.ndarray):
        return value.astype(np.float64) if value.dtype.kind == "f" else value
    if type(value).__module__.startswith("cvtest_mod"):  # an instance: a float64 copy
        clone = copy.copy(value)
        for name in getattr(type(value), "__annotations__", {}):
            if hasattr(value, name):
                setattr(clone, name, to64(getattr(value, name)))
        return clone
    return value


def check(method: Any, obj: Any, *args: Any, computed_in: Any = None,
          scale: float = 1.0) -> None:
    """The compiled ``method`` of ``obj`` (a poisoned out=, and as ``obj.method(...)``)
    against its Python on float64 copies, within ``scale`` times the rounding of
    ``computed_in`` (default: the result's dtype)."""
    want = method.py_func(obj, *args)
    ref = method.py_func(to64(obj), *to64(list(args)))
    out = poisoned(want.shape, want.dtype)
    got = method(obj, *args, out=out)
    assert got is out and got.dtype == want.dtype
    assert_close(out, ref, computed_in or want.dtype, scale)
    assert_close(getattr(obj, method.__name__)(*args), ref, computed_in or want.dtype, scale)


def weights(draw: st.DrawFn, shape: tuple[int, ...]) -> np.ndarray:
    return draw(view_of(shape, "float32", special=False)) / max(1, shape[0]) ** 0.5


def block(m: Any, draw: st.DrawFn, d: int, h: int) -> Any:
    return m.Block(m.LayerNorm(weights(draw, (d,)), weights(draw, (d,))),
                   m.Linear(weights(draw, (d, h)), weights(draw, (h,))),
                   m.Linear(weights(draw, (h, d)), weights(draw, (d,))), 0.75)


@settings(max_examples=20, deadline=None)
@given(data=st.data(), b=st.integers(0, 4), d=st.integers(2, 6), h=st.integers(1, 7))
def test_a_block_of_instances(m, data: st.DataObject, b: int, d: int, h: int) -> None:
    blk = block(m, data.draw, d, h)
    check(m.Block.__call__, blk, data.draw(view_of((b, d), "float32", special=False)))


@settings(max_examples=10, deadline=None)
@given(data=st.data(), b=st.integers(1, 3), d=st.integers(2, 5), v=st.integers(1, 6))
def test_a_model_of_a_list_of_blocks(m, data: st.DataObject, b: int, d: int, v: int) -> None:
    model = m.Model([block(m, data.draw, d, h) for h in (3, 5)],  # two hidden widths
                    {"w": weights(data.draw, (d, v))})
    x = data.draw(view_of((b, d), "float32", special=False))
    with warnings.catch_warnings():  # the float64 reference runs Block.__call__ in Python
        warnings.filterwarnings("ignore", "Block.__call__", RuntimeWarning)
        check(m.Model.forward, model, x, scale=4.0)  # two blocks of LayerNorm: deeper rounding


def test_an_attribute_array_is_written_in_place(m) -> None:
    rng = np.random.default_rng(0)
    cache = m.Cache(rng.standard_normal((5, 4)).astype(np.float32))
    mine = m.Cache(cache.k.copy())
    for t in range(3):
        x = rng.standard_normal(4).astype(np.float32)
        want = m.Cache.append.py_func(cache, x, t)
        assert_close(mine.append(x, t), want, np.float32)
        np.testing.assert_array_equal(mine.k, cache.k)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_signature_strings_after_self(m, dtype: str) -> None:
    x = np.linspace(-1, 1, 7).astype(dtype)
    got = m.Scaled(1.5).apply(x)
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, x * 1.5)


@settings(max_examples=10, deadline=None)
@given(data=st.data(), b=st.integers(0, 3), d=st.integers(1, 5))
def test_an_instance_as_a_functions_argument(m, data: st.DataObject, b: int, d: int) -> None:
    layer = m.Linear(weights(data.draw, (d, d)), weights(data.draw, (d,)))
    x = data.draw(view_of((b, d), "float32", special=False))
    want = m.twice.py_func(to64(layer), x.astype(np.float64))
    out = poisoned(want.shape, np.float32)
    assert m.twice(layer, x, out=out) is out
    assert_close(out, want, np.float32)
    assert "layer.w: f32[D, D]" in m.twice.compiled.__doc__  # sizes named as x's


def test_slots_and_dataclasses(m) -> None:
    rng = np.random.default_rng(1)
    w, x = rng.standard_normal((2, 6)).astype(np.float32)
    np.testing.assert_array_equal(m.Slotted(w).times(x), x * w)
    x64, w64 = x.astype(np.float64), w.astype(np.float64)
    assert_close(m.Affine(w).apply(x), x64 * w64 + 0.5, np.float32)
    assert_close(m.Affine(w, 2.0).apply(x), x64 * w64 + 2.0, np.float32)


def test_what_the_call_checks(m) -> None:
    rng = np.random.default_rng(2)
    blk = m.Block(
        m.LayerNorm(np.ones(3, np.float32), np.zeros(3, np.float32)),
        m.Linear(rng.standard_normal((3, 4)).astype(np.float32), np.zeros(4, np.float32)),
        m.Linear(rng.standard_normal((4, 3)).astype(np.float32), np.zeros(3, np.float32)), 1.0)
    x = np.ones((2, 3), np.float32)
    call = m.Block.__call__.compiled  # the extension's entry: no fallback to hide its errors
    call(blk, x)  # as it is: fine
    blk.ln.eps = 0.001  # the class's value, set on the instance (as __init__ may): fine
    assert_close(call(blk, x), m.Block.__call__.py_func(to64(blk), x.astype(float)), np.float32)
    blk.ln.eps = 0.5  # the instance hides the class constant the code compiled in
    with pytest.raises(cv.SignatureError, match=r"Block.__call__\(\): argument 'self.ln': "
                       r"the instance's own attribute 'eps' \(0.5\) hides its class's "
                       r"\(0.001\)"):
        call(blk, x)
    blk.ln.eps = np.float64(0.001)  # equal, but another type: what the code computes may differ
    with pytest.raises(cv.SignatureError, match=r"attribute 'eps' \(np.float64\(0.001\)\)"):
        call(blk, x)
    with warnings.catch_warnings():  # the fallback runs the Python method (warned once)
        warnings.simplefilter("ignore", RuntimeWarning)
        assert_close(blk(x), m.Block.__call__.py_func(to64(blk), x.astype(float)), np.float32)
    del blk.ln.eps

    class Sub(m.Block):  # Block.gain is a class method, answered for Block: refused
        pass
    with pytest.raises(cv.SignatureError, match=r"argument 'self': expected a Block \(that "
                       r"class itself: the compiled code answered isinstance or a class "
                       r"method for it\), got Sub"):
        call(Sub(blk.ln, blk.up, blk.down, 1.0), x)

    class Same(m.Linear):  # changes nothing the code inlined: runs compiled
        def describe(self) -> str:
            return "a linear layer"

    class Other(m.Linear):  # changes what the code inlined
        def __call__(self, x: Any) -> Any:
            return x @ self.w

    up = blk.up
    blk.up = Same(up.w, up.b)
    assert_close(call(blk, x), m.Block.__call__.py_func(to64(blk), x.astype(float)),
                 np.float32)
    blk.up = Other(up.w, up.b)
    with pytest.raises(cv.SignatureError, match=r"argument 'self.up': expected a Linear or a "
                       r"subclass that keeps what the compiled code inlined, got Other, "
                       r"whose '__call__' is its own"):
        call(blk, x)
    blk.up = up
    saved = blk.up.b
    del blk.up.b
    with pytest.raises(cv.SignatureError, match=r"argument 'self.up': expected the attribute "
                       r"'b' \(its class declares it\), got a Linear without it"):
        call(blk, x)
    blk.up.b = saved.astype(np.float64)
    with pytest.raises(cv.SignatureError, match=r"argument 'self.up.b': expected a float32"):
        call(blk, x)
    blk.up.b = np.zeros(5, np.float32)
    with pytest.raises(cv.SignatureError, match=r"argument 'self.up.b': dimension 0 is 5, "
                       r"expected self__\w+ = 4"):
        call(blk, x)
    blk.up.b = saved
    blk.ln.g = np.ones(1, np.float32)  # NumPy broadcasts it; a model's sizes agree: refused
    with pytest.raises(cv.SignatureError, match=r"argument 'self.ln.b': dimension 0 is 3, "
                       r"expected D = 1 \(D from 'self.ln.g' dimension 0\)"):
        call(blk, x)


@pytest.mark.parametrize("body, message", [
    ("return x * self.v", r"self.v: class C does not declare 'v'; compiled code reads an "
     r"instance by the attributes its class body declares(.|\n)*where it is the same for every "
     r"instance \(a string, a function, a flag\), a constant of the class: `v = \.\.\.` in "
     r"its body"),
    ("return x * len(self.name)", r"self.name is declared as str, which compiled code cannot "
     r"take as an argument(.|\n)*a constant of the class: `name = \.\.\.`"),
    ("self.w = x\n        return x", r"assignment to the attribute self.w is not supported"),
    ("return x * self.many[0]", r"self.many is declared as list\[float\], which compiled "
     r"code cannot take(.|\n)*a list of known length: `many: \[Block\] \* 12`"),
])
def test_what_the_build_refuses(tmp_path: Path, body: str, message: str) -> None:
    source = ("import numpy as np\nimport cuvil_aot as cv\n\nclass C:\n    w: cv.f32[3]\n"
              f"    name: str\n    many: list[float]\n    @cv.optimize\n"
              f"    def f(self, x: cv.f32[3]):\n        {body}\n")
    mod = compile_source(tmp_path, source)
    obj = mod.C()
    obj.w, obj.name = np.ones(3, np.float32), "c"
    with pytest.raises(cv.CompileError, match=message) as e:
        obj.f(np.ones(3, np.float32))
    assert ":10:" in str(e.value) and "^" in str(e.value)


def test_the_method_binds_like_a_function(m) -> None:
    compiled = m.Block.__dict__["__call__"]
    assert type(compiled).__name__ == "CompiledFunction"
    assert m.Block.__call__ is compiled  # from the class: itself
    assert m.Cache.append.__get__(None, m.Cache) is m.Cache.append
    bound = m.Cache(np.zeros((2, 2), np.float32)).append
    assert bound.__func__ is m.Cache.__dict__["append"]


def test_only_what_the_code_reads_is_passed(m) -> None:
    doc = m.Block.__call__.compiled.__doc__
    assert "self.up.w: f32[self__D, self__up__O]" in doc or "self.up.w" in doc
    assert "spare" not in doc and "name" not in doc.replace("__name__", "")


@pytest.mark.gpu
@pytest.mark.parametrize("framework", ["torch", "cupy"])
def test_device_arrays_in_an_instance(tmp_path: Path, framework: str) -> None:
    from gpu_harness import Framework, device_arch

    fw = Framework(framework)
    mod = compile_source(tmp_path, SOURCE, cuda_archs=(device_arch(),))
    rng = np.random.default_rng(3)

    def arrays(*shape: int) -> np.ndarray:
        return (rng.standard_normal(shape) / max(1, shape[0]) ** 0.5).astype(np.float32)

    host = mod.Block(mod.LayerNorm(arrays(6), arrays(6)), mod.Linear(arrays(6, 8), arrays(8)),
                     mod.Linear(arrays(8, 6), arrays(6)), 0.5)
    device = mod.Block(mod.LayerNorm(fw.put(host.ln.g), fw.put(host.ln.b)),
                       mod.Linear(fw.put(host.up.w, "transposed"), fw.put(host.up.b)),
                       mod.Linear(fw.put(host.down.w), fw.put(host.down.b)), 0.5)
    x = arrays(5, 6)
    got = fw.get(device(fw.put(x)))
    assert_close(got, mod.Block.__call__.py_func(to64(host), x.astype(np.float64)),
                 np.float32)
