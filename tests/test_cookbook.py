"""The cookbook: inference snippets written as ML engineers write NumPy (tests/cookbook/),
each compiled once per module and checked against its own Python function run in float64,
at three shapes whose symbolic dimensions are drawn independently (the first case takes
the smallest allowed size of each, usually 1).

REFUSED lists the snippets the compiler refuses today, with what is missing; they are
strict xfails raising CompileError, so a feature that lands turns its entries into
failures asking to delete them. WRONG lists snippets that compile but disagree with
NumPy: bugs, never silently skipped. ``pass_rate()`` says how many compile and match.
"""

from __future__ import annotations

import importlib
import inspect
import re
import warnings
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

import numpy as np
import pytest
from conftest import assert_close, to64, tolerance

import cuvil_aot as cv
from cuvil_aot.compiler import pipeline
from cuvil_aot.marks import ArrayType, DType, as_marked, marked
from cuvil_aot.runtime import binding, extension

MODULES = ("attention", "embeddings", "normalization", "activations", "recurrent",
           "quantization", "decoding", "pooling", "misc")

# What each refused snippet needs, missing features first (several where it needs several).
REFUSED = {
    # attention
    # embeddings
    # normalization
    # recurrent
    # quantization
    # decoding
    # misc
}

# Snippets that compile but disagree with NumPy: "WRONG ANSWER: <what, smallest reproducer>".
WRONG: dict[str, str] = {}


@dataclass
class Spec:
    """How to draw a snippet's arguments beyond what its annotations say.

    ``dims``: a symbol's allowed sizes, or a function of the sizes drawn so far.
    ``args``: a parameter's kind ("normal", "positive", "unit", "mask", "left_mask",
    ("ints", lo, hi) with hi an int or a symbol), or a function (rng, dims) -> value."""

    dims: dict[str, Any] = field(default_factory=dict)
    args: dict[str, Any] = field(default_factory=dict)


def below(symbol: str) -> Callable[[np.random.Generator, dict[str, int]], int]:
    return lambda rng, dims: int(rng.integers(0, dims[symbol]))


def one_to(symbol: str) -> Callable[[np.random.Generator, dict[str, int]], int]:
    return lambda rng, dims: int(rng.integers(1, dims[symbol] + 1))


EVEN = (2, 4, 6)
HEADS4 = (4, 8, 12)
AT_LEAST_2 = (2, 3, 7)

SPECS: dict[str, Spec] = {
    "padded_attention": Spec(args={"attention_mask": "mask"}),
    "multi_head_attention": Spec(dims={"D": HEADS4}),
    "mha_heads_folded": Spec(dims={"D": HEADS4}),
    "alibi_attention": Spec(args={"slopes": "positive"}),
    "kv_cache_write": Spec(args={"t": below("S")}),
    "decode_attend_prefix": Spec(args={"t": below("S")}),
    "kv_cache_append_loop": Spec(dims={"S": lambda d: d["T"] + 3},
                                 args={"start": lambda rng, d: int(rng.integers(0, 4))}),
    "bert_embeddings": Spec(dims={"P": lambda d: d["T"] + 2},
                            args={"input_ids": ("ints", 0, "V"),
                                  "token_type_ids": ("ints", 0, 2)}),
    "scaled_embedding_take": Spec(args={"ids": ("ints", 0, "V")}),
    "position_embedding_add": Spec(dims={"P": lambda d: d["T"] + 1}),
    "positions_from_padding_mask": Spec(dims={"P": lambda d: d["T"]},
                                        args={"attention_mask": "left_mask"}),
    "sinusoidal_position_encoding": Spec(dims={"D": EVEN}),
    "rotary_embedding": Spec(dims={"D": EVEN}),
    "rotary_tables": Spec(args={"positions": ("ints", 0, 64), "inv_freq": "positive"}),
    "group_norm": Spec(dims={"C": HEADS4}),
    "batch_norm_inference": Spec(args={"running_var": "positive"}),
    "quantize_int8": Spec(args={"scale": 0.02}),
    "dequantize_int8": Spec(args={"q": ("ints", -128, 128), "scale": 0.05}),
    "fake_quant": Spec(args={"scale": 0.05, "zero_point": 128}),
    "int8_matmul_dequant": Spec(args={"xq": ("ints", -128, 128), "wq": ("ints", -128, 128),
                                      "x_scale": "positive", "w_scale": "positive"}),
    "weight_only_int8_linear": Spec(args={"wq": ("ints", -128, 128), "w_scale": "positive"}),
    "temperature_softmax": Spec(args={"temperature": 0.7}),
    "top_k_filter_argpartition": Spec(args={"k": one_to("V")}),
    "top_k_filter_sort": Spec(args={"k": one_to("V")}),
    "top_k_probs": Spec(dims={"V": AT_LEAST_2}),
    "gumbel_max_sample": Spec(args={"u": "unit", "temperature": 0.8}),
    "repetition_penalty": Spec(args={"prev_ids": ("ints", 0, "V"), "penalty": 1.3}),
    "beam_candidates": Spec(dims={"V": AT_LEAST_2}),
    "masked_mean_pool": Spec(args={"attention_mask": "mask"}),
    "masked_max_pool": Spec(args={"mask": "mask"}),
    "masked_mean_pool_bool": Spec(args={"mask": "mask"}),
    "label_smoothing_loss": Spec(args={"labels": ("ints", 0, "C"), "smoothing": 0.1}),
    "cross_entropy_take_along": Spec(args={"labels": ("ints", 0, "C")}),
    "bce_with_logits": Spec(args={"y": "unit"}),
    "accuracy": Spec(args={"labels": ("ints", 0, "C")}),
    "one_hot_eye": Spec(args={"labels": ("ints", 0, 10)}),
    "one_hot_compare": Spec(args={"labels": ("ints", 0, 10)}),
    "segment_offsets": Spec(args={"lengths": ("ints", 0, 10)}),
    "image_preprocess": Spec(args={"img": ("ints", 0, 256), "std": "positive"}),
    "pcm_preemphasis": Spec(args={"pcm": ("ints", -32768, 32768)}),
}

DEFAULT_SIZES = (1, 2, 5, 17)
CASES = 3
SHORT_DTYPES = {"f16": "float16", "f32": "float32", "f64": "float64", "i8": "int8",
                "u8": "uint8", "i16": "int16", "i32": "int32", "i64": "int64",
                "bool_": "bool", "bool": "bool"}


# Parameters: (name, dtype or Python scalar type, dims) from annotations or signatures=

@dataclass
class Param:
    name: str
    kind: Any  # a NumPy dtype name, or float / int for a Python scalar
    dims: tuple[Any, ...] = ()


def params_of(fn: Any) -> list[Param]:
    """The parameters of a compiled function or of its mark."""
    mark = as_marked(fn)
    sig = inspect.signature(mark.py_func)
    names = [p.name for p in sig.parameters.values() if p.default is inspect.Parameter.empty]
    if mark.signatures is not None:  # "i8[N,D], float": parsed here, the dtype may be new
        parts = re.findall(r"(\w+)(?:\[([^\]]*)\])?", mark.signatures[0])
        return [Param(n, SHORT_DTYPES[t] if t in SHORT_DTYPES else {"float": float,
                                                                     "int": int}[t],
                      tuple(d.strip() for d in dims.split(",")) if dims else ())
                for n, (t, dims) in zip(names, parts)]
    out = []
    for n in names:
        hint = mark.py_func.__annotations__[n]
        if isinstance(hint, ArrayType):
            out.append(Param(n, hint.dtype.np_dtype, hint.dims))
        elif isinstance(hint, DType):
            out.append(Param(n, hint.np_dtype))
        else:
            out.append(Param(n, hint))
    return out


def dim_value(expr: Any, dims: dict[str, int]) -> int:
    if isinstance(expr, int):
        return expr
    return int(eval(re.sub(r"(\d)\s*([A-Za-z_])", r"\1*\2", expr),  # noqa: S307 - ours
                    {"__builtins__": {}}, dict(dims)))


def draw_dims(params: list[Param], spec: Spec, rng: np.random.Generator,
              case: int) -> dict[str, int]:
    """Every symbol drawn independently; case 0 takes the smallest allowed sizes."""
    symbols = sorted({s for p in params for d in p.dims if isinstance(d, str)
                      for s in re.findall(r"[A-Za-z_]\w*", d)} | set(spec.dims))
    dims: dict[str, int] = {}
    for s in symbols:
        choice = spec.dims.get(s, DEFAULT_SIZES)
        if not callable(choice):
            dims[s] = min(choice) if case == 0 else int(rng.choice(choice))
    for s in symbols:
        if callable(spec.dims.get(s)):
            dims[s] = spec.dims[s](dims)
    return dims


def draw_array(kind: Any, dtype: np.dtype, shape: tuple[int, ...], dims: dict[str, int],
               rng: np.random.Generator) -> np.ndarray:
    if isinstance(kind, tuple):  # ("ints", lo, hi)
        _, lo, hi = kind
        return rng.integers(lo, dims[hi] if isinstance(hi, str) else hi, shape).astype(dtype)
    if kind in ("mask", "left_mask"):
        if kind == "mask":  # random padding, the first token always real
            m = rng.random(shape) < 0.7
            m[..., :1] = True
        else:  # left padding: some zeros, then ones to the end
            start = rng.integers(0, shape[-1], shape[:-1])[..., None]
            m = np.arange(shape[-1]) >= start
        return m.astype(dtype)
    if dtype.kind == "b":
        return rng.random(shape) < 0.5
    if dtype.kind in "iu":
        return rng.integers(0, 4, shape).astype(dtype)
    values = {"normal": lambda: rng.standard_normal(shape),
              "positive": lambda: np.abs(rng.standard_normal(shape)) + 0.1,
              "unit": lambda: rng.uniform(0.01, 0.99, shape)}[kind]()
    return values.astype(dtype)


def draw_args(fn: Any, name: str, rng: np.random.Generator, case: int) -> list[Any]:
    params, spec = params_of(fn), SPECS.get(name, Spec())
    dims = draw_dims(params, spec, rng, case)
    args = []
    for p in params:
        kind = spec.args.get(p.name, "normal")
        if callable(kind):
            args.append(kind(rng, dims))
        elif p.kind in (float, int):
            if not isinstance(kind, int | float):
                raise TypeError(f"{name}: give the scalar '{p.name}' a value in SPECS")
            args.append(p.kind(kind))
        else:
            shape = tuple(dim_value(d, dims) for d in p.dims)
            args.append(draw_array(kind, np.dtype(p.kind), shape, dims, rng))
    return args


# Building: each cookbook module once, refused functions bound to their CompileError

@pytest.fixture(scope="module")
def cookbook(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], ModuleType]:
    built: dict[str, ModuleType] = {}

    def get(module_name: str) -> ModuleType:
        if module_name not in built:
            module = importlib.import_module(f"cookbook.{module_name}")
            out = tmp_path_factory.mktemp(f"cookbook_{module_name}")
            artifact = pipeline.build(module, pipeline.Options(cuda_archs=()), out_dir=out)
            ext = extension.load(artifact.ext_name, artifact.path)
            binding.bind(module, ext, refused=artifact.manifest["refused"])
            built[module_name] = module
        return built[module_name]

    return get


def snippets() -> list[tuple[str, str]]:
    return [(m, name) for m in MODULES
            for name in marked(importlib.import_module(f"cookbook.{m}"))]


def params() -> list[Any]:
    out = []
    for module_name, name in snippets():
        marks: list[Any] = []
        if name in REFUSED:
            marks.append(pytest.mark.xfail(strict=True, raises=cv.CompileError,
                                           reason=f"refused: {REFUSED[name]}"))
        elif name in WRONG:
            marks.append(pytest.mark.xfail(strict=True, reason=WRONG[name]))
        out.append(pytest.param(module_name, name, marks=marks, id=f"{module_name}.{name}"))
    return out


def copies(args: list[Any]) -> list[Any]:
    return [a.copy() if isinstance(a, np.ndarray) else a for a in args]


def as_tuple(result: Any) -> tuple[Any, ...]:
    return result if isinstance(result, tuple) else (result,)


def working_dtype(result: np.dtype, args: list[Any]) -> np.dtype:
    """The precision a float result is judged at: its own, or the narrowest float argument's
    where that is narrower (a float32 matmul divided by np.sqrt(d), a NumPy float64, is a
    float64 array of float32 accuracy)."""
    floats = [a.dtype for a in args if isinstance(a, np.ndarray) and a.dtype.kind == "f"]
    return min([result, *floats], key=lambda d: d.itemsize)


def relative_error(value: np.ndarray, ref: np.ndarray) -> float:
    """The largest error of ``value`` against the float64 ``ref``, relative to max(|ref|, 1)."""
    v, r = value.astype(np.float64), ref.astype(np.float64)
    finite = np.isfinite(v) & np.isfinite(r)
    if not finite.any():
        return 0.0
    v, r = v[finite], r[finite]
    return float((np.abs(v - r) / np.maximum(np.abs(r), 1.0)).max())


def compare(got: Any, ref: Any, expect: Any, what: str, args: list[Any]) -> None:
    """``got`` against the float64 run (floats) or NumPy's run on the real dtypes (the
    rest); dtype and shape always against the real dtypes."""
    g, e = np.asarray(got), np.asarray(expect)
    assert g.dtype == e.dtype, f"{what}: dtype {g.dtype}, NumPy gives {e.dtype}"
    assert g.shape == e.shape, f"{what}: shape {g.shape}, NumPy gives {e.shape}"
    if e.dtype.kind == "f":
        dtype = working_dtype(e.dtype, args)
        # as accurate as NumPy itself where NumPy's own rounding is the larger error
        # (cancellation in chained float32 matmuls)
        scale = max(1.0, 2 * relative_error(e, np.asarray(ref)) / tolerance(dtype))
        assert_close(g, np.asarray(ref), dtype, scale, e)
    else:
        np.testing.assert_array_equal(g, e, err_msg=what)


def check_snippet(fn: Any, args: list[Any], put: Callable[[np.ndarray], Any] = np.ndarray.copy,
                  get: Callable[[Any], Any] = np.asarray) -> None:
    """``fn`` on ``put``'s copies of the array arguments (NumPy copies here, device arrays in
    test_cookbook_gpu.py), its results and those arguments brought back by ``get``."""
    py = fn.py_func
    real, wide = copies(args), to64(copies(args))
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # NumPy's own warnings are not under test
        expect = as_tuple(py(*real))
        ref = as_tuple(py(*wide))
    mine = [put(a) if isinstance(a, np.ndarray) else a for a in args]
    got = tuple(get(g) for g in as_tuple(fn(*mine)))
    assert len(got) == len(expect), f"{len(got)} results, NumPy gives {len(expect)}"
    for i, (g, r, e) in enumerate(zip(got, ref, expect)):
        compare(g, r, e, f"result {i}", args)
    for p, a, m, r, e in zip(inspect.signature(py).parameters, args, mine, wide, real):
        if isinstance(a, np.ndarray):  # in-place updates must match, and nothing else
            compare(get(m), r, e, f"argument '{p}' after the call", args)


def check_cases(fn: Any, name: str, put: Callable[[np.ndarray], Any] = np.ndarray.copy,
                get: Callable[[Any], Any] = np.asarray) -> None:
    """check_snippet at CASES draws of the arguments, the same draws on every run."""
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    for case in range(CASES):
        args = draw_args(fn, name, rng, case)
        shapes = [np.shape(a) for a in args]
        try:
            check_snippet(fn, args, put, get)
        except AssertionError as exc:
            raise AssertionError(f"case {case}, argument shapes {shapes}: {exc}") from exc


@pytest.mark.parametrize(("module_name", "name"), params())
def test_snippet(cookbook: Callable[[str], ModuleType], module_name: str, name: str) -> None:
    check_cases(getattr(cookbook(module_name), name), name)


# The lists stay honest and the pass rate is reported

def pass_rate() -> tuple[int, int]:
    """(compiled and matching, total): every snippet not refused and not wrong. The strict
    xfails keep REFUSED and WRONG equal to what the compiler does."""
    names = [name for _, name in snippets()]
    return sum(n not in REFUSED and n not in WRONG for n in names), len(names)


def test_lists_name_real_snippets() -> None:
    names = [name for _, name in snippets()]
    assert len(names) == len(set(names)), "snippet names must be unique across modules"
    assert not set(REFUSED) - set(names), set(REFUSED) - set(names)
    assert not set(WRONG) - set(names), set(WRONG) - set(names)
    assert not set(REFUSED) & set(WRONG)
    assert not set(SPECS) - set(names), set(SPECS) - set(names)


def test_pass_rate(capsys: pytest.CaptureFixture[str]) -> None:
    ok, total = pass_rate()
    with capsys.disabled():
        print(f"\ncookbook: {ok}/{total} snippets compile and match NumPy "
              f"({100 * ok / total:.0f}%), {len(REFUSED)} refused, {len(WRONG)} wrong")
    assert total >= 40


if __name__ == "__main__":  # python tests/test_cookbook.py: the rate the lists say
    ok, total = pass_rate()
    print(f"{ok}/{total} compile and match ({100 * ok / total:.0f}%)")
