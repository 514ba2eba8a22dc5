"""Bad input at the boundary of every bundled example (issue 4, item 16).

test_bad_input.py holds the hand-written matrix for one sample module; this file
generates it for every marked function of examples/models.py: for each argument a wrong
dtype, a wrong rank, a list, None, an object array, a 0-d array, a wrong static size,
plus missing and extra arguments and bad ``out=``; and for each argument Fortran
order, negative and zero strides, a misaligned view, and ``out=`` equal to or partly
overlapping an input. Each call must either give NumPy's answer or raise
TypeError/ValueError naming the function, the argument and what was expected.

All calls run in one child interpreter: a crash fails the test, not the runner.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import compile_source
from helpers.proc import REPO

MODELS = Path(__file__).resolve().parents[1] / "examples" / "models.py"

# Valid arguments per function (symbolic dims small, static dims as declared).
VALID = {
    "matmul_relu": {"x": (3, 128), "w": (128, 64), "b": (64,)},
    "lstm_step": {"x": (2, 5), "h": (2, 4), "c": (2, 4), "wx": (5, 16), "wh": (4, 16),
                  "b": (16,)},
    "softmax": {"x": (3, 7)},
    "layer_norm": {"x": (3, 8), "g": (8,), "b": (8,)},
    "resnet_head": {"fmap": (2, 512, 7, 7), "w": (512, 1000), "b": (1000,)},
    "ffn_block": {"x": (2, 768), "g": (768,), "beta": (768,), "w1": (768, 3072),
                  "b1": (3072,), "w2": (3072, 768), "b2": (768,)},
    "elementwise_chain": {"x": (9,), "y": (9,)},
}
STATIC = {("matmul_relu", "x"), ("matmul_relu", "w"), ("matmul_relu", "b"),
          ("resnet_head", "fmap"), ("resnet_head", "w"), ("resnet_head", "b"),
          ("ffn_block", "x"), ("ffn_block", "g"), ("ffn_block", "w1"), ("ffn_block", "w2")}
"""(function, argument) pairs whose last dimension is static: slicing it must fail."""

# Replacements of one argument `a` that must raise (or, if NumPy agrees, compute).
BAD_ARG = {
    "wrong dtype": "a.astype(np.float64)",
    "wrong ndim": "a[None]",
    "a list": "a.tolist()",
    "None": "None",
    "object array": "a.astype(object)",
    "0-d array": "np.ones((), np.float32)",
    "numpy scalar": "np.float32(1.0)",
}
# Unusual layouts of one argument: NumPy's answer (on the same values) is required.
SAME_VALUES = {
    "Fortran order": "np.asfortranarray(a)",
    "negative strides": "np.flip(np.flip(a).copy())",
    # The first slice repeated along axis 0 (a constant row would make layer norms
    # ill-conditioned: float32 and float64 rightly disagree there).
    "zero strides": "np.broadcast_to(a[:1], a.shape)",
    "misaligned": "misaligned(a)",
    "byte-swapped": "a.astype(a.dtype.newbyteorder())",
}

CHILD = '''
import json, sys, warnings
import numpy as np
sys.path.insert(0, {moddir!r})
import {modname} as m
from cuvil_aot.runtime import binding, extension
binding.bind(m, extension.load({ext!r}, {path!r}))
VALID, STATIC, BAD_ARG, SAME = {valid!r}, {static!r}, {bad!r}, {same!r}
rng = np.random.default_rng(0)

def misaligned(a):
    buf = np.zeros(a.nbytes + 1, np.uint8)
    v = np.frombuffer(buf.data, a.dtype, count=a.size, offset=1).reshape(a.shape)
    v[...] = a
    return v

def flat(result):
    return result if isinstance(result, tuple) else (result,)

def reference(fn, args):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return flat(fn.py_func(*[np.array(a, np.float64) if isinstance(a, np.ndarray)
                                 else a for a in args]))

def same(got, ref):
    got = flat(got)
    return len(got) == len(ref) and all(
        np.shape(g) == np.shape(r) and np.allclose(np.asarray(g, np.float64), r, rtol=1e-3,
                                                   atol=1e-3) for g, r in zip(got, ref))

def outcome(fn, args, kwargs=None, ref=None):
    try:
        got = fn(*args, **(kwargs or {{}}))
    except Exception as exc:
        return [type(exc).__name__, [c.__name__ for c in type(exc).__mro__], str(exc)]
    if ref is None:
        ref = reference(fn, args)
    return ["value", [], "equal" if same(got, ref) else f"differs from NumPy"]

report = {{}}
for name, shapes in VALID.items():
    fn = getattr(m, name)
    params = list(shapes)
    valid = [rng.standard_normal(s).astype(np.float32) for s in shapes.values()]
    def case(label, args, kwargs=None, ref=None):
        report[f"{{name}}|{{label}}"] = outcome(fn, args, kwargs, ref)
    case("valid", valid)
    for i, p in enumerate(params):
        for label, code in BAD_ARG.items():
            bad = eval(code, dict(np=np, a=valid[i]))
            case(f"{{label}}|{{p}}", valid[:i] + [bad] + valid[i + 1:])
        for label, code in SAME.items():
            env = dict(np=np, a=valid[i], misaligned=misaligned)
            case(f"{{label}}|{{p}}", valid[:i] + [eval(code, env)] + valid[i + 1:])
        if (name, p) in STATIC:
            case(f"wrong static size|{{p}}", valid[:i] + [valid[i][..., :-1]] + valid[i + 1:])
    case("missing argument|" + params[-1], valid[:-1])
    case("extra argument|", valid + [valid[-1]])
    case("unknown keyword|bogus", valid, {{"bogus": valid[0]}})
    outs = flat(fn.py_func(*valid))
    ro = [np.empty_like(o, np.float32) for o in outs]
    for o in ro:
        o.flags.writeable = False
    pack = lambda xs: tuple(xs) if len(xs) > 1 else xs[0]
    case("read-only out|out", valid, {{"out": pack(ro)}})
    case("wrong-shape out|out", valid, {{"out": pack([np.empty(o.shape[:-1] + (o.shape[-1] + 1,),
                                                          np.float32) for o in outs])}})
    case("wrong-dtype out|out", valid, {{"out": pack([np.empty(o.shape) for o in outs])}})
    case("strided out|out", valid, {{"out": pack([np.empty(o.shape + (2,), np.float32)[..., 0]
                                                for o in outs])}}, ref=reference(fn, valid))
    for i, p in enumerate(params):  # out= aliasing an input of the same shape
        if len(outs) == 1 and valid[i].shape == outs[0].shape:
            args = [a.copy() for a in valid]
            case(f"out is an input|{{p}}", args, {{"out": args[i]}}, ref=reference(fn, valid))
    if name == "elementwise_chain":  # out partly overlapping both inputs
        big = rng.standard_normal(12).astype(np.float32)
        ref = reference(fn, [big[1:10].copy(), big[0:9].copy()])
        case("out overlaps inputs|out", [big[1:10], big[0:9]], {{"out": big[2:11]}}, ref=ref)
print(json.dumps(report))
'''


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list]:
    directory = tmp_path_factory.mktemp("bad_models")
    module = compile_source(directory, MODELS.read_text())
    art = module.__artifact__
    script = CHILD.format(moddir=str(directory), modname=module.__name__, ext=art.ext_name,
                          path=str(art.path), valid=VALID, static=STATIC, bad=BAD_ARG,
                          same=SAME_VALUES)
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(script)], capture_output=True,
                          text=True, cwd=directory, timeout=300,
                          env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, f"child crashed ({proc.returncode}):\n{proc.stderr[-4000:]}"
    report: dict[str, list] = json.loads(proc.stdout.strip().splitlines()[-1])
    return report


def _by_function(report: dict[str, list], fn: str) -> dict[str, list]:
    return {k.split("|", 1)[1]: v for k, v in report.items() if k.split("|")[0] == fn}


@pytest.mark.parametrize("fn", sorted(VALID))
def test_every_bad_call_gives_numpys_answer_or_a_clear_error(
        outcomes: dict[str, list], fn: str) -> None:
    cases = _by_function(outcomes, fn)
    assert cases.pop("valid") == ["value", [], "equal"]
    problems = []
    for label, (kind, mro, message) in cases.items():
        what, _, arg = label.partition("|")
        must_compute = what.split()[0] in {"Fortran", "negative", "zero", "misaligned",
                                           "byte-swapped", "strided"} or what.startswith("out ")
        if kind == "value":
            if message != "equal":
                problems.append(f"{label}: {message}")
            continue
        if must_compute:
            problems.append(f"{label}: raised {kind}: {message}")
        elif not {"TypeError", "ValueError"} & set(mro):
            problems.append(f"{label}: {kind} is not a TypeError or ValueError: {message}")
        elif not message.startswith(f"{fn}()") or (arg and arg not in message):
            problems.append(f"{label}: the message does not name {fn}() and {arg!r}: {message}")
        elif what in BAD_ARG and not ("expected" in message and "got" in message):
            problems.append(f"{label}: the message lacks expected versus got: {message}")
    assert problems == [], "\n".join(problems)


def test_the_matrix_covers_every_marked_function() -> None:
    text = MODELS.read_text()
    marked = [line.split("def ")[1].split("(")[0] for line, prev in
              zip(text.splitlines()[1:], text.splitlines()) if prev.startswith("@cv.optimize")]
    assert sorted(marked) == sorted(VALID)
