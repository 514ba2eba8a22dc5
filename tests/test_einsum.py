"""np.einsum against NumPy in float64: every common form, each dtype path, ellipsis,
broadcasting, diagonals, three operands; GEMM lowering; refusals at the user's line."""

from __future__ import annotations

import math
import re
import tempfile
from pathlib import Path

import numpy as np
import pytest
from conftest import check, load_source
from gpu_harness import dim_size, parse_signature
from hypothesis import given, settings
from hypothesis import strategies as st
from test_elementwise import view_of

import cuvil_aot as cv
from cuvil_aot.compiler.frontend import lower_module
from cuvil_aot.compiler.ir.node import toposort
from cuvil_aot.compiler.ir.ops import Op

FLOATS = ("f32", "f64", "f16")
NUMBERS = (*FLOATS, "i32")

# name: (subscripts, operand dims, dtypes). Operand dims default to one symbol per letter
# (S and the letter), each drawn independently.
CASES: dict[str, tuple[str, list[str] | None, tuple[str, ...]]] = {
    "attention_scores": ("bhqd,bhkd->bhqk", None, FLOATS),
    "attention_values": ("bhqk,bhkd->bhqd", None, FLOATS),
    "matmul": ("ij,jk->ik", None, (*NUMBERS, "bool_")),
    "matmul_implicit": ("ij,jk", None, ("f32",)),
    "batched_matmul": ("bij,bjk->bik", None, NUMBERS),
    "row_dots": ("bi,bi->b", None, (*NUMBERS, "bool_")),
    "dot": ("i,i->", None, NUMBERS),
    "transpose": ("ij->ji", None, ("f32", "i64", "bool_")),
    "identity": ("ij->ij", None, ("f32",)),
    "transpose_implicit": ("ji", None, ("f32",)),
    "row_sums": ("ij->i", None, ("f32", "i32", "bool_")),
    "total": ("ij->", None, ("f64", "i32")),
    "outer": ("i,j->ij", None, ("f32", "i32")),
    "projection": ("btd,hd->bth", None, FLOATS),
    "gram": ("nd,md->nm", None, FLOATS),
    "transposed_left": ("ki,kj->ij", None, ("f32", "i64")),
    "elementwise": ("ij,ij->ij", None, ("f32", "i32")),
    "full_contraction": ("ij,ij->", None, ("f64",)),
    "free_sum_first": ("ij,jk->k", None, ("f32", "i32")),
    "permute3": ("ijk->kij", None, ("f32",)),
    "diagonal": ("ii->i", ["N,N"], ("f32", "i32")),
    "trace": ("ii", ["N,N"], ("f64", "i64")),
    "batched_diagonal": ("bii->bi", ["B,N,N"], ("f32",)),
    "diagonal3": ("iii->i", ["N,N,N"], ("f64",)),
    "diagonal_times": ("iij,jk->ik", ["N,N,J", "J,K"], ("f32", "i32")),
    "three_operands": ("ab,bc,cd->ad", None, ("f32", "i32")),
    "three_elementwise": ("ab,ab,b->a", None, ("f64",)),
    "three_shared": ("ij,ik,il->jkl", None, ("f32",)),
    "bilinear": ("bi,oij,bj->bo", None, ("f32",)),
    "ellipsis_matmul": ("...ij,...jk->...ik", ["Z,I,J", "J,K"], ("f32", "i32")),
    "ellipsis_broadcast": ("...i,...i", ["A,1,I", "B,I"], ("f64",)),
    "ellipsis_transpose": ("...ij->...ji", ["A,B,I,J"], ("f32",)),
    "ellipsis_middle": ("i...j->j...", ["I,A,B,J"], ("f32",)),
    "ellipsis_implicit": ("ij...", ["I,J,A"], ("f32",)),
    "size_one_broadcast": ("ij,jk->ik", ["I,1", "J,K"], ("f32", "i32")),
    "size_one_output": ("ij,ij->ij", ["1,J", "I,J"], ("f32",)),
    "uppercase": ("Ab,ab->Aa", None, ("f32",)),
    "spaces": (" ij , jk -> ik ", ["I,J", "J,K"], ("f64",)),
}
MIXED = {  # operand dtypes that differ: the result is np.result_type of them
    "mixed_matmul": ("ij,jk->ik", "f32[I,J], f64[J,K]", "i32[I,J], f32[J,K]"),
    "mixed_dots": ("bi,bi->b", "f16[B,I], f32[B,I]", "i64[B,I], i32[B,I]"),
    "python_scalar": ("i,->i", "f32[I], float", "i32[I], int"),
}
REFUSED = {  # name: (signature, call, message)
    "sublist": ("f32[I,J]", "np.einsum(x, [0, 1])", "sublist form"),
    "out": ("f32[I,J]", "np.einsum('ij->ji', x, out=x)", "out=) is not supported"),
    "dtype": ("f32[I,J]", "np.einsum('ij', x, dtype=np.float64)", "dtype=) is not supported"),
    "no_operands": ("f32[I,J]", "np.einsum('ij')", "at least one operand"),
    "bad_letter": ("f32[I,J]", "np.einsum('i1', x)", "invalid subscript '1'"),
    "too_many": ("f32[I,J]", "np.einsum('ijk', x)", "too many subscripts for operand 0"),
    "too_few": ("f32[I,J]", "np.einsum('i', x)", "no '...' ellipsis provided"),
    "operands": ("f32[I,J]", "np.einsum('ij,jk', x)", "fewer operands provided"),
    "unknown_output": ("f32[I,J]", "np.einsum('ij->k', x)", "'k' which never appeared"),
    "output_twice": ("f32[I,J]", "np.einsum('ij->ii', x)", "'i' multiple times"),
    "stray_dot": ("f32[I,J]", "np.einsum('i.j', x)", "'.' that is not part of an ellipsis"),
    "two_arrows": ("f32[I]", "np.einsum('i->->i', x)", "proper '->'"),
    "ellipsis_dropped": ("f32[I,J]", "np.einsum('...i->i', x)", "no '...' ellipsis"),
    "diagonal_sizes": ("f32[2,3]", "np.einsum('ii->i', x)", "collapsing index 'i'"),
    "sizes_differ": ("f32[I,3], f32[4,K]", "np.einsum('ij,jk->ik', x, y)",
                     "cannot be broadcast together"),
}


def operand_dims(subscripts: str, dims: list[str] | None) -> list[str]:
    if dims is not None:
        return dims
    inputs = subscripts.split("->")[0].split(",")
    return [",".join(f"S{c}" for c in term) for term in inputs]


def _source() -> str:
    lines = ["import numpy as np", "import cuvil_aot as cv", ""]
    for name, (subscripts, dims, dtypes) in CASES.items():
        shapes = operand_dims(subscripts, dims)
        sigs = [", ".join(f"{d}[{s}]" for s in shapes) for d in dtypes]
        args = ", ".join(f"x{i}" for i in range(len(shapes)))
        lines += [f"@cv.optimize(signatures={sigs!r})", f"def {name}({args}):",
                  f"    return np.einsum({subscripts!r}, {args})"]
    for name, (subscripts, *sigs) in MIXED.items():
        lines += [f"@cv.optimize(signatures={list(sigs)!r})", f"def {name}(x0, x1):",
                  f"    return np.einsum({subscripts!r}, x0, x1)"]
    lines += ["@cv.optimize(signatures=['f32[I,J], f32[K,L]'])", "def fresh_symbols(x, y):",
              "    return np.einsum('ij,jk->ik', x, y)"]
    for name, (sig, call, _) in REFUSED.items():
        params = "x, y" if sig.count("[") == 2 else "x"
        lines += [f"@cv.optimize(signatures=[{sig!r}])", f"def refused_{name}({params}):",
                  f"    return {call}"]
    return "\n".join(lines) + "\n"


SOURCE = _source()


def arguments(data: st.DataObject, sig: str, sizes: dict[str, int],
              special: bool = True) -> list[object]:
    """Fresh arguments for ``sig``: every symbol's size from ``sizes``."""
    args: list[object] = []
    for param in parse_signature(sig):
        if isinstance(param, str):
            args.append(data.draw(st.floats(-4, 4, width=16)) if param == "float"
                        else data.draw(st.integers(-4, 4)))
            continue
        dtype, dims = param
        x = data.draw(view_of(tuple(dim_size(d, sizes) for d in dims), dtype, special))
        args.append(x * np.float16(0.1) if dtype == "float16" else x)  # f16 products stay exact-ish
    return args


def summed_terms(subscripts: str, sizes: dict[str, int]) -> int:
    """How many products each output element sums (for the rounding tolerance)."""
    text = subscripts.replace(" ", "").replace("...", "")
    inputs, _, output = text.partition("->")
    letters = inputs.replace(",", "")
    out = output if "->" in text else {c for c in letters if letters.count(c) == 1}
    return math.prod(sizes.get(f"S{c}", 4) for c in set(letters) - set(out))


SYMBOLS = sorted(({d for subscripts, dims, _ in CASES.values()
                   for shape in operand_dims(subscripts, dims) for d in shape.split(",")}
                  | {d for _, *sigs in MIXED.values() for sig in sigs
                     for param in parse_signature(sig) if not isinstance(param, str)
                     for d in param[1]})
                 - {"", "1"})
# Where a letter is summed before its product with another operand (or three operands are
# contracted pairwise) the products differ from those of NumPy's loops, so NaN and Inf may
# land differently (NumPy's own einsum differs with optimize=True): finite values there.
REASSOCIATED = {"free_sum_first", "three_operands", "three_elementwise", "three_shared",
                "bilinear", "size_one_broadcast"}


@pytest.mark.parametrize("name", [*CASES, *MIXED])
@settings(max_examples=12, deadline=None)
@given(data=st.data())
def test_einsum_matches_numpy(compiled, name, data):
    sizes = {s: data.draw(st.integers(0, 4), label=s) for s in SYMBOLS}  # each independent
    fn = getattr(compiled, name)
    subscripts = CASES[name][0] if name in CASES else MIXED[name][0]
    scale = 10 * (1 + summed_terms(subscripts, sizes))
    for sig in fn.signatures:
        check(fn, *arguments(data, sig, sizes, name not in REASSOCIATED), scale=scale)


GEMM_CASES = ["attention_scores", "attention_values", "matmul", "batched_matmul",
              "projection", "gram", "transposed_left", "bilinear", "ellipsis_matmul"]


def random_arguments(rng: np.random.Generator, sig: str, sizes: dict[str, int]) -> list[object]:
    """Larger operands than hypothesis draws element by element: normal values, and now
    and then a transposed view."""
    args: list[object] = []
    for dtype, dims in parse_signature(sig):  # type: ignore[misc]
        shape = tuple(dim_size(d, sizes) for d in dims)
        if dtype.startswith("int"):
            x = rng.integers(-9, 9, shape).astype(dtype)
        else:
            x = rng.standard_normal(shape).astype(dtype)
        args.append(x.T.copy().T if rng.random() < 0.5 else x)
    return args


@pytest.mark.parametrize("name", GEMM_CASES)
@settings(max_examples=4, deadline=None)
@given(data=st.data())
def test_contractions_at_gemm_sizes(compiled, name, data):
    sizes = {s: data.draw(st.integers(1, 24), label=s) for s in SYMBOLS}
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1), label="seed"))
    fn = getattr(compiled, name)
    scale = 10 * (1 + summed_terms(CASES[name][0], sizes) ** 0.5)
    for sig in fn.signatures:
        check(fn, *random_arguments(rng, sig, sizes), scale=scale)


def test_sizes_that_differ_raise_like_numpy(compiled):
    x, y = np.ones((2, 3), np.float32), np.ones((4, 5), np.float32)
    with pytest.raises(ValueError):
        np.einsum("ij,jk->ik", x, y)
    with pytest.raises(ValueError):
        compiled.fresh_symbols(x, y)
    one = np.ones((2, 1), np.float32)  # NumPy broadcasts a 1 here: so does a specialization
    np.testing.assert_allclose(compiled.fresh_symbols(one, y), np.einsum("ij,jk->ik", one, y))
    np.testing.assert_allclose(compiled.fresh_symbols(x, y[:3]), np.full((2, 5), 3.0))


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_refused_forms_point_at_the_call(compiled, name):
    sig, call, message = REFUSED[name]
    with pytest.raises(cv.CompileError) as info:
        getattr(compiled, f"refused_{name}")(*[np.ones((2, 3), np.float32)] * sig.count("["))
    first, source_line, caret = str(info.value).strip("\n").splitlines()[:3]
    lines = SOURCE.splitlines()
    line = 2 + next(i for i, text in enumerate(lines) if text.startswith(f"def refused_{name}("))
    assert lines[line - 1] == f"    return {call}"
    assert re.search(rf"\.py:{line}:12: error: .*{re.escape(message)}", first), first
    assert source_line.strip() == f"return {call}"
    assert caret.index("^") == source_line.index("np.einsum")


@pytest.fixture(scope="module")
def lowered():
    module = load_source(Path(tempfile.mkdtemp()), SOURCE, name="einsum_lowered")
    return lower_module(module).functions


@pytest.mark.parametrize("name", GEMM_CASES)
def test_float_contractions_are_one_matmul(lowered, name):
    """Contracted float letters with free ones run on the GEMM path; integers cannot."""
    for sig, fn in lowered[name]:
        ops = [n.op for n in toposort(fn.outputs)]
        dtype = fn.outputs[0].dtype
        expected = 1 if dtype.startswith("float") else 0
        matmuls = ops.count(Op.MATMUL)
        assert matmuls == (2 if name == "bilinear" and expected else expected), (sig, ops)
        if expected:
            assert Op.SUM not in ops, (sig, ops)  # no letter summed outside the GEMM


TENSORDOT_SOURCE = '''
import numpy as np
import cuvil_aot as cv

SIGS = ["f32[A,B,C], f32[B,C,D]", "f64[A,B,C], f32[B,C,D]", "i32[A,B,C], i32[B,C,D]"]

@cv.optimize(signatures=SIGS)
def last_two(a, b):
    return np.tensordot(a, b)

@cv.optimize(signatures=SIGS)
def pairs(a, b):
    return np.tensordot(a, b, axes=([1, 2], [0, 1])), np.tensordot(a, b, axes=([-1], [1]))

@cv.optimize(signatures=SIGS)
def outer_and_one(a, b):
    return np.tensordot(a, b, axes=0), np.tensordot(a, b, axes=1)

@cv.optimize(signatures=["f32[A,B,C], f32[D,B]"])
def swapped(a, w):
    return np.tensordot(a, w, axes=(1, 1)), np.tensordot(w, a, axes=([1], [-2]))
'''


@pytest.fixture(scope="module")
def tensordots(tmp_path_factory):
    from conftest import compile_source

    return compile_source(tmp_path_factory.mktemp("tensordot"), TENSORDOT_SOURCE)


@pytest.mark.parametrize("name", ["last_two", "pairs", "outer_and_one", "swapped"])
@settings(max_examples=10, deadline=None)
@given(data=st.data())
def test_tensordot_matches_numpy(tensordots, name, data):
    """np.tensordot as an einsum: an int N, paired sequences and single ints, negative
    axes; NumPy's dtypes and shapes (axes=1 of b's first axis against a's last needs
    C == B: drawn so only there)."""
    sizes = {s: data.draw(st.integers(0, 4), label=s) for s in "ABCD"}
    if name == "outer_and_one":
        sizes["C"] = sizes["B"]
    fn = getattr(tensordots, name)
    for sig in fn.signatures:
        args = [data.draw(view_of(tuple(sizes[d] for d in dims), dtype, special=False))
                for dtype, dims in parse_signature(sig)]  # type: ignore[misc]
        check(fn, *args, scale=10 * (1 + sizes["B"] * sizes["C"]))


def test_tensordot_refuses_what_numpy_rejects(tmp_path):
    source = TENSORDOT_SOURCE.replace("axes=([1, 2], [0, 1])", "axes=([1, 2], [0])")
    from conftest import compile_source

    module = compile_source(tmp_path, source)
    with pytest.raises(cv.CompileError, match="shape-mismatch for sum"):
        module.pairs(np.ones((2, 3, 4), np.float32), np.ones((3, 4, 5), np.float32))
