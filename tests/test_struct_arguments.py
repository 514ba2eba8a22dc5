"""Dict and list arguments (a state dict, a list of layers: `ir/signature.Struct`) against
the Python function on NumPy in float64, on random shapes (hypothesis), outputs poisoned:
annotations (TypedDicts too) and signature strings, nested dicts and lists, keys that are
no identifiers, a number among the leaves, an item written in place (a KV cache in a dict,
caches in a list of dicts); what the call
checks (a missing key, no dict, a list's length, extra keys where the code looks at the
keys) and what the build refuses (an undeclared key), each at the user's line."""

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

LN = {"g": cv.f32["O"], "b": cv.f32["O"], "eps": float}
LAYER = {"w": cv.f32["I", "O"], "b": cv.f32["O"], "ln": LN}

def layer_norm(x, g, b, eps):
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) / np.sqrt(v + eps) * g + b

@cv.optimize
def layer(x: cv.f32["B", "I"], p: LAYER):
    return layer_norm(x @ p["w"] + p["b"], **p["ln"])

BLOCK = {"attn.c_proj.weight": cv.f32["D", "D"], "mlp": [cv.f32["D", "D"], cv.f32["D"]]}

@cv.optimize
def stack(x: cv.f32["B", "D"], blocks: [BLOCK] * 3, scale: float):
    for blk in blocks:
        w2, b2 = blk["mlp"]
        x = x + np.tanh(x @ blk["attn.c_proj.weight"]) @ w2 * scale + b2
    return x

@cv.optimize(signatures=["f32[B,D], {w: f32[D,D], b: f32[D]}",
                         "f64[B,D], {w: f64[D,D], b: f64[D]}"])
def linear(x, p):
    return x @ p["w"].T + p["b"]

@cv.optimize
def keys_seen(x: cv.f32["B", "D"], p: {"g": cv.f32["D"], "b": cv.f32["D"]}):
    y = layer_norm(x, p["g"], p["b"], 1e-5)
    if "bias" in p:
        y = y + p["bias"]
    total = sum(v.sum() for v in p.values())
    return y * len(p) + total + p.get("shift", 0.5)

@cv.optimize
def decode(x: cv.f32["D"], cache: {"k": cv.f32["S", "D"], "v": cv.f32["S", "D"]}, t: int):
    cache["k"][t] = x
    cache["v"][t] = 2 * x
    scores = cache["k"][: t + 1] @ x
    p = np.exp(scores - scores.max())
    return (p / p.sum()) @ cache["v"][: t + 1]

@cv.optimize
def decode_layers(x: cv.f32["D"], ws: [cv.f32["D", "D"]] * 2,
                  caches: [{"k": cv.f32["S", "D"]}] * 2, t: int):
    for w, c in zip(ws, caches):
        c["k"][t] = x
        x = np.tanh(x @ w + c["k"][: t + 1].sum(0))
    return x
'''


@pytest.fixture(scope="module")
def m(tmp_path_factory):
    return compile_source(tmp_path_factory.mktemp("struct_arguments"), SOURCE)


def to64(value: Any) -> Any:
    """Float arrays anywhere in dicts and lists upcast to float64."""
    if isinstance(value, dict):
        return {k: to64(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(to64(v) for v in value)
    if isinstance(value, np.ndarray) and value.dtype.kind == "f":
        return value.astype(np.float64)
    return value


def check(fn: Any, *args: Any, scale: float = 1.0) -> None:
    """The compiled ``fn`` with a poisoned out= against its Python on float64 copies."""
    want = fn.py_func(*args)
    ref = fn.py_func(*to64(list(args)))
    out = poisoned(want.shape, want.dtype)
    got = fn(*args, out=out)
    assert got is out and got.dtype == want.dtype
    assert_close(out, ref, want.dtype, scale)
    assert_close(fn(*args), ref, want.dtype, scale)


def weights(draw: st.DrawFn, shape: tuple[int, ...], dtype: str = "float32") -> np.ndarray:
    return draw(view_of(shape, dtype, special=False)) / max(1, shape[0]) ** 0.5


@settings(max_examples=20, deadline=None)
@given(data=st.data(), b=st.integers(0, 4), i=st.integers(1, 6), o=st.integers(2, 7))
def test_a_nested_state_dict(m, data: st.DataObject, b: int, i: int, o: int) -> None:
    p = {"w": weights(data.draw, (i, o)), "b": weights(data.draw, (o,)), "unused": "a string",
         "ln": {"g": weights(data.draw, (o,)), "b": weights(data.draw, (o,)), "eps": 1e-3}}
    check(m.layer, data.draw(view_of((b, i), "float32", special=False)), p)


@settings(max_examples=15, deadline=None)
@given(data=st.data(), b=st.integers(1, 3), d=st.integers(1, 6), as_tuple=st.booleans())
def test_a_list_of_layers(m, data: st.DataObject, b: int, d: int, as_tuple: bool) -> None:
    blocks = [{"attn.c_proj.weight": weights(data.draw, (d, d)),
               "mlp": [weights(data.draw, (d, d)), weights(data.draw, (d,))]}
              for _ in range(3)]
    x = data.draw(view_of((b, d), "float32", special=False))
    check(m.stack, x, tuple(blocks) if as_tuple else blocks, 0.5, scale=3.0)  # 3 layers deep


@settings(max_examples=15, deadline=None)
@given(data=st.data(), b=st.integers(0, 3), d=st.integers(1, 6),
       dtype=st.sampled_from(["float32", "float64"]))
def test_signature_strings(m, data: st.DataObject, b: int, d: int, dtype: str) -> None:
    p = {"w": weights(data.draw, (d, d), dtype), "b": weights(data.draw, (d,), dtype)}
    check(m.linear, data.draw(view_of((b, d), dtype, special=False)), p)
    assert m.linear(np.ones((1, d), dtype), p=p).dtype == dtype  # by keyword too


@settings(max_examples=15, deadline=None)
@given(data=st.data(), b=st.integers(1, 3), d=st.integers(2, 6))
def test_code_that_looks_at_the_keys(m, data: st.DataObject, b: int, d: int) -> None:
    p = {"g": weights(data.draw, (d,)), "b": weights(data.draw, (d,))}
    check(m.keys_seen, data.draw(view_of((b, d), "float32", special=False)), p)


def test_extra_keys_are_refused_where_the_code_looks_at_the_keys(m) -> None:
    x, g = np.ones((2, 3), np.float32), np.linspace(1, 2, 3, dtype=np.float32)
    p = {"g": g, "b": g, "bias": g}
    assert not np.allclose(m.keys_seen.py_func(x, p), m.keys_seen.py_func(x, {"g": g, "b": g}))
    with pytest.raises(cv.SignatureError, match=r"keys_seen\(\): argument 'p': expected "
                       r"exactly the keys 'g', 'b', got 3 keys: the function looks at"):
        m.keys_seen(x, p)
    layer = {"w": np.ones((3, 3), np.float32), "b": g, "extra": None,  # never looked at
             "ln": {"g": g, "b": g, "eps": 0.1}}
    assert_close(m.layer(x, layer), m.layer.py_func(x.astype(float), to64(layer)), np.float32)
    layer["ln"]["extra"] = 1.0  # **p["ln"]: Python's TypeError, a SignatureError here
    with pytest.raises(TypeError, match="unexpected keyword argument 'extra'"):
        m.layer.py_func(x, layer)
    with pytest.raises(cv.SignatureError, match=r"argument 'p\['ln'\]': expected exactly "
                       r"the keys 'g', 'b', 'eps', got 4 keys"):
        m.layer(x, layer)


def test_a_cache_in_a_dict_is_written_in_place(m) -> None:
    rng = np.random.default_rng(0)
    cache = {"k": rng.standard_normal((5, 4), np.float32), "v": np.zeros((5, 4), np.float32)}
    mine = {k: v.copy() for k, v in cache.items()}
    for t in range(3):
        x = rng.standard_normal(4, np.float32)
        want = m.decode.py_func(x, cache, t)
        assert_close(m.decode(x, mine, t), want, np.float32)
        np.testing.assert_array_equal(mine["k"], cache["k"])
        np.testing.assert_array_equal(mine["v"], cache["v"])


def test_caches_in_a_list_of_dicts_are_written_in_place(m) -> None:
    rng = np.random.default_rng(1)
    ws = [rng.standard_normal((4, 4), np.float32) / 2 for _ in range(2)]
    caches = [{"k": rng.standard_normal((6, 4), np.float32)} for _ in range(2)]
    mine = [{"k": c["k"].copy()} for c in caches]
    x = rng.standard_normal(4, np.float32)
    for t in range(4):
        want = m.decode_layers.py_func(x, ws, caches, t)
        assert_close(m.decode_layers(x, ws, mine, t), want, np.float32)
        for a, b in zip(mine, caches):  # the second layer's rows: x after float32 math
            assert_close(a["k"], b["k"], np.float32)


@pytest.mark.parametrize("p, message", [
    ({"w": np.ones((3, 3), np.float32)},
     r"layer\(\): argument 'p': expected a dict with the key 'b' \(the signature declares "
     r"it\), got a dict without it"),
    ([1, 2], r"argument 'p': expected a dict, got list"),
    ({"w": np.ones((3, 3), np.float32), "b": np.ones(3), "ln": {}},
     r"argument 'p\['ln'\]': expected a dict with the key 'g'"),
    ({"w": np.ones((3, 3), np.float32), "b": np.ones(3, np.float32),
      "ln": {"g": np.ones(3, np.float32), "b": np.ones(3, np.float32), "eps": "small"}},
     r"argument 'p\['ln'\]\['eps'\]': expected a float, got str"),
    ({"w": np.ones((3, 3), np.float32), "b": np.ones(2, np.float32),
      "ln": {"g": np.ones(3, np.float32), "b": np.ones(3, np.float32), "eps": 0.1}},
     r"argument 'p\['b'\]': dimension 0 is 2, expected O = 3"),
])
def test_what_the_call_checks(m, p: Any, message: str) -> None:
    with pytest.raises(cv.SignatureError, match=message):
        m.layer(np.ones((2, 3), np.float32), p)


def test_a_list_of_another_length(m) -> None:
    blocks = [{"attn.c_proj.weight": np.eye(2, dtype=np.float32),
               "mlp": [np.eye(2, dtype=np.float32), np.ones(2, np.float32)]}] * 2
    with pytest.raises(cv.SignatureError, match=r"argument 'blocks': expected a list or tuple "
                       r"of 3 items, got a list of 2"):
        m.stack(np.ones((1, 2), np.float32), blocks, 1.0)
    with pytest.raises(cv.SignatureError, match=r"argument 'blocks\[0\]\['mlp'\]': expected "
                       r"a list or tuple of 2 items, got numpy.float64 array of shape \(2,\)"):
        m.stack(np.ones((1, 2), np.float32), [dict(blocks[0], mlp=np.ones(2))] * 3, 1.0)


TYPED = '''
from __future__ import annotations
from typing import TypedDict
import numpy as np
import cuvil_aot as cv

class Linear(TypedDict):
    w: cv.f32["I", "O"]
    b: cv.f32["O"]

class Back(TypedDict):  # Linear again would name its sizes I and O too: the same sizes
    w: cv.f32["O", "I"]
    b: cv.f32["I"]

@cv.optimize
def mlp(x: cv.f32["B", "I"], up: Linear, down: Back):
    return np.maximum(x @ up["w"] + up["b"], 0) @ down["w"] + down["b"]
'''


@settings(max_examples=10, deadline=None)
@given(data=st.data(), b=st.integers(1, 3), i=st.integers(1, 5), h=st.integers(1, 6))
def test_typed_dicts(tmp_path_factory, data: st.DataObject, b: int, i: int, h: int) -> None:
    mod = typed_module(tmp_path_factory)
    up = {"w": weights(data.draw, (i, h)), "b": weights(data.draw, (h,))}
    down = {"w": weights(data.draw, (h, i)), "b": weights(data.draw, (i,))}
    check(mod.mlp, data.draw(view_of((b, i), "float32", special=False)), up, down)


_TYPED: list[Any] = []


def typed_module(tmp_path_factory) -> Any:
    if not _TYPED:  # once for all examples (hypothesis does not take function fixtures)
        _TYPED.append(compile_source(tmp_path_factory.mktemp("typed_dicts"), TYPED))
    return _TYPED[0]


LIKE = '''
import numpy as np
import cuvil_aot as cv

rng = np.random.default_rng(0)
PARAMS = {"blocks": [{"w": rng.standard_normal((4, 4)).astype(np.float32),
                      "b": np.zeros(4, np.float32)} for _ in range(2)],
          "scale": 0.5, "steps": 2}

@cv.optimize
def run(x: cv.f32["B", 4], params: cv.like(PARAMS)):
    for blk in params["blocks"]:
        x = np.tanh(x @ blk["w"] + blk["b"]) * params["scale"]
    return x * params["steps"]
'''


def test_like_declares_a_structure_as_it_loads(tmp_path: Path) -> None:
    mod = compile_source(tmp_path, LIKE)
    assert repr(cv.like(mod.PARAMS)) == ("{'blocks': [{'w': f32[4,4], 'b': f32[4]}, "
                                         "{'w': f32[4,4], 'b': f32[4]}], 'scale': <class "
                                         "'float'>, 'steps': <class 'int'>}")
    rng = np.random.default_rng(5)
    params = {"blocks": [{"w": rng.standard_normal((4, 4), np.float32),
                          "b": rng.standard_normal(4, np.float32)} for _ in range(2)],
              "scale": 1.5, "steps": 3}
    check(mod.run, rng.standard_normal((3, 4), np.float32), params)
    with pytest.raises(TypeError, match=r"cv.like: value\['name'\] is a str, not an array"):
        cv.like({"name": "gpt2"})


def test_the_docstring_names_the_leaves(m) -> None:
    doc = m.layer.compiled.__doc__
    assert doc.startswith("layer(x, p)\n")
    assert "p['ln']['eps']: float" in doc


@pytest.mark.parametrize("params, body, message", [
    ("x: cv.f32[3], p: {'w': cv.f32[3]}", "return x * p['nope']",
     r"indexing the dict argument p \(declared keys: 'w'\): 'nope'"),
    ("x: cv.f32[3], p: {'w': cv.f32[3]}", "p['w'] = x\n    return x",
     r"assignment into the dict argument p is not supported: the caller's dict would not "
     "change"),
    ("x: cv.f32[3], p: [cv.f32[3]]", "p.append(x)\n    return x",
     r"the list argument p is read only in compiled code"),
    ("x: cv.f32[3], p: {}", "return x", "a dict type needs string keys and at least one"),
    ("x: cv.f32[3], p: {1: cv.f32[3]}", "return x", "a dict type needs string keys"),
    ("x: cv.f32[3], p: []", "return x", "a list type needs at least one item"),
    ("x: cv.f32[3], p: {'w': 'nonsense'}", "return x",
     r"parameter 'p\['w'\]': unsupported annotation"),
])
def test_what_the_build_refuses(tmp_path: Path, params: str, body: str, message: str) -> None:
    source = (f"import numpy as np\nimport cuvil_aot as cv\n\n@cv.optimize\n"
              f"def f({params}):\n    {body}\n")
    mod = compile_source(tmp_path, source)
    with pytest.raises(cv.CompileError, match=message) as e:
        mod.f(np.ones(3, np.float32), {"w": np.ones(3, np.float32)})
    assert "^" in str(e.value)


def test_signatures_of_different_structures_are_refused(tmp_path: Path) -> None:
    source = ('import cuvil_aot as cv\n\n@cv.optimize(signatures=["f32[N], {w: f32[N]}", '
              '"f64[N], {v: f64[N]}"])\ndef f(x, p):\n    return x\n')
    mod = compile_source(tmp_path, source)
    with pytest.raises(cv.CompileError, match="declare different keys or lengths"):
        mod.f(np.ones(3, np.float32), {"w": np.ones(3, np.float32)})


@pytest.mark.gpu
@pytest.mark.parametrize("framework", ["torch", "cupy"])
def test_device_arrays_in_a_dict_and_a_list(tmp_path: Path, framework: str) -> None:
    from gpu_harness import Framework, device_arch

    fw = Framework(framework)
    mod = compile_source(tmp_path, SOURCE, cuda_archs=(device_arch(),))
    rng = np.random.default_rng(3)
    x = rng.standard_normal((5, 6), np.float32)
    p = {"w": rng.standard_normal((6, 7), np.float32) / 3, "b": rng.standard_normal(7, np.float32),
         "ln": {"g": rng.standard_normal(7, np.float32), "b": rng.standard_normal(7, np.float32),
                "eps": 1e-3}}
    on_device = {"w": fw.put(p["w"], "transposed"), "b": fw.put(p["b"]),
                 "ln": {"g": fw.put(p["ln"]["g"]), "b": fw.put(p["ln"]["b"]), "eps": 1e-3}}
    got = fw.get(mod.layer(fw.put(x), on_device))
    assert_close(got, mod.layer.py_func(x.astype(np.float64), to64(p)), np.float32)
    blocks = [{"attn.c_proj.weight": rng.standard_normal((6, 6), np.float32) / 3,
               "mlp": [rng.standard_normal((6, 6), np.float32) / 3,
                       rng.standard_normal(6, np.float32)]} for _ in range(3)]
    put = [{"attn.c_proj.weight": fw.put(b["attn.c_proj.weight"]),
            "mlp": [fw.put(b["mlp"][0]), fw.put(b["mlp"][1])]} for b in blocks]
    got = fw.get(mod.stack(fw.put(x), put, 0.5))
    assert_close(got, mod.stack.py_func(x.astype(np.float64), to64(blocks), 0.5), np.float32)
    with pytest.raises(TypeError, match=r"argument 'p\['w'\]' must be a device array like "
                       "'x'"):
        mod.layer(fw.put(x), dict(on_device, w=p["w"]))  # one array on the host
