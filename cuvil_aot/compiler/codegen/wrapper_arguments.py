"""What the CPU (pymodule.py) and GPU (gpu_wrapper.py) wrappers emit alike to check a
call's arguments against a signature: a failed match with its reason, scalar
arguments, the symbols bound by the shapes, empty reductions, ``out=``, and the error
when no signature matches.

A signature's match function fills ``why`` (and ``*shape_err`` when shapes were the
problem) and returns 0 where the arguments do not match it.
"""

from __future__ import annotations

from collections.abc import Callable

from cuvil_aot.compiler.codegen import host_scalars, inplace_args, run_time_loops, run_time_sizes
from cuvil_aot.compiler.codegen.binding import Bind, Check, plan
from cuvil_aot.compiler.codegen.compiled import Compiled
from cuvil_aot.compiler.codegen.launch import dim
from cuvil_aot.compiler.codegen.shape_checks import (
    TOO_BIG,
    assumption_checks,
    can_overflow,
    checked,
    printf_args,
    shape_text,
    size_checks,
    values,
)
from cuvil_aot.compiler.codegen.writer import Writer, c_string
from cuvil_aot.compiler.ir.construct import Raises
from cuvil_aot.compiler.ir.node import Param
from cuvil_aot.compiler.ir.ops import Op
from cuvil_aot.compiler.ir.signature import NONE_DTYPE, render_type
from cuvil_aot.compiler.ir.types import Dim

NO_IDENTITY = {Op.MAX: "maximum", Op.MIN: "minimum", Op.ARGMAX: "argmax", Op.ARGMIN: "argmin"}


def fail(w: Writer, shape: bool, fmt: str, *args: str) -> None:
    """No match: the reason (a printf format of ``args``) into ``why``; ``shape``: a shape
    was the problem."""
    extra = "".join(f", {a}" for a in args)
    w.line(f"snprintf(why, nwhy, {c_string(fmt)}{extra});")
    if shape:
        w.line("*shape_err = 1;")
    w.line("return 0;")


def shown(p: Param) -> str:
    """The parameter's name for a printf format: ``p['w%']`` of a dict's item escaped."""
    return p.shown.replace("%", "%%")


def match_scalar(w: Writer, i: int, p: Param, exact: bool = False) -> None:
    """Scalar argument ``argv[i]`` into ``c->arg_{p.name}``: a float, an int of 64 bits, a
    bool (True, False, ``numpy.True_``, an int); or None, in the version where it is None
    (no field: the code never reads it); with ``exact``, a bool the code compares by
    ``is``: True or False itself."""
    obj, name = f"argv[{i}]", p.name
    label = shown(p)
    if exact:
        with w.block(f"if (!PyBool_Check({obj}))"):
            w.line(f"cv_describe({obj}, got, sizeof got);")
            fail(w, False, f"argument '{label}': expected True or False (the code compares "
                 "it with `is`), got %s", "got")
    if p.type.dtype == NONE_DTYPE:
        with w.block(f"if ({obj} != Py_None)"):
            w.line(f"cv_describe({obj}, got, sizeof got);")
            fail(w, False, f"argument '{label}': expected None, got %s", "got")
    else:  # one helper call a parameter (pywrap.h): a signature's match stays short
        quoted = c_string(p.shown)
        take = {"float64": f"cv_float_arg({obj}, {quoted}, ",
                "bool": f"cv_bool_arg({obj}, {quoted}, "}.get(
            p.type.dtype, f"cv_int_arg({obj}, {quoted}, \"an int\", ")
        w.line(f"if (!{take}&c->arg_{name}, why, nwhy)) return 0;")


def match_dims(w: Writer, comp: Compiled, dim_of: Callable[[int, int], str]) -> None:
    """Binds the symbols from the argument shapes (``dim_of(param, axis)``), checks the
    rest, computes derived symbols and run-time requirements, checks the dimensions the
    body assumed equal (shape_checks.assumption_checks), checks that every array
    of the call fits (shape_checks.py: the arithmetic is overflow-checked) and fills
    ``c->sym`` and the numbers computed once per call (host_scalars.py)."""
    steps, origin = plan(comp.sig.params)
    for sym in comp.symbols:
        w.line(f"int64_t S_{sym} = 0;")
    w.line("int ovf = 0; (void)ovf;")
    for n, step in enumerate(steps):
        _match_dim(w, n, step, comp, origin, dim_of(step.param, step.axis))
    derived = run_time_sizes.emit(w, comp)  # ceil(length / step), run-time slices
    inplace_args.index_symbols(w, comp)  # an assignment's run-time int indices
    exprs = [expr for expr, _ in comp.fn.requirements]
    for expr, why in comp.fn.requirements:
        with w.block(f"if ({checked(expr)} < 0 && !ovf)"):
            if isinstance(why, Raises):  # NumPy's own error, not a failed match
                w.line("int bad = 0; (void)bad;")  # the message's arithmetic fits: ovf is 0
                w.line(f"PyErr_Format(PyExc_{why.error}, {printf_args(why.message)});")
                w.line("return -1;")
            else:
                fail(w, True, f"{why}, but it is %lld", f"(long long){dim(expr)}")
    if any(can_overflow(d) for d in derived + exprs):
        with w.block("if (ovf)"):
            text, args = values(derived + exprs)
            fail(w, True, f"the sizes{text}: {TOO_BIG}", *args)
    assumption_checks(w, comp)
    for e in size_checks(comp):
        dims = ", ".join(checked(d) for d in e.dims)
        with w.block(f"if (cv_too_big(&ovf, {e.nbytes}, {len(e.dims)}, "
                     f"(const int64_t[]){{{dims}}}))"):
            text, args = values(e.dims)
            fail(w, True, f"{shape_text(e)}{text}: {TOO_BIG}", *args)
    for s, sym in enumerate(comp.symbols):
        w.line(f"c->sym[{s}] = S_{sym};")
    host_scalars.compute(w, comp.fn, comp.hoisted)


def _match_dim(w: Writer, n: int, step: Bind | Check, comp: Compiled,
               origin: dict[str, tuple[int, int]], actual: str) -> None:
    """One step of the plan; ``n``: its index (for the names of its locals)."""
    p = comp.sig.params[step.param]
    dim_text = f"argument '{shown(p)}': dimension {step.axis} is"
    if isinstance(step, Bind) and step.coeff == 1 and step.rest == Dim.of(0):
        w.line(f"S_{step.symbol} = {actual};")  # a size of its own: any length is one
        return
    if isinstance(step, Bind):
        value = f"({actual} - {dim(step.rest)})"
        if can_overflow(step.rest):
            w.line(f"const int64_t V{n} = cv_sub({actual}, {checked(step.rest)}, &ovf);")
            value = f"V{n}"
            with w.block("if (ovf)"):
                text, args = values([step.rest])
                fail(w, True, f"{dim_text} {p.type.shape[step.axis]}{text}: {TOO_BIG}", *args)
        with w.block(f"if ({value} % {step.coeff} != 0 || {value} / {step.coeff} < 0)"):
            fail(w, True, f"{dim_text} %lld, which is not {p.type.shape[step.axis]} for any "
                 f"size {step.symbol}", f"(long long){actual}")
        w.line(f"S_{step.symbol} = {value} / {step.coeff};")
        return
    expected = dim(step.expected)
    if can_overflow(step.expected):
        w.line(f"const int64_t E{n} = {checked(step.expected)};")
        expected = f"E{n}"
        with w.block("if (ovf)"):
            text, args = values([step.expected])
            fail(w, True, f"{dim_text} {step.expected}{text}: {TOO_BIG}", *args)
    sources = ", ".join(f"{s} from '{comp.sig.params[origin[s][0]].shown}' dimension "
                        f"{origin[s][1]}" for s in sorted(step.expected.symbols))
    what = c_string(f"argument '{p.shown}': dimension {step.axis} is")
    told = (f"{c_string(f'{step.expected} ({render_type(p)})')}, NULL" if step.expected.is_static
            else f"{c_string(str(step.expected))}, {c_string(sources)}")
    w.line(f"if (!cv_dim_is({actual}, {expected}, {what}, {told}, why, nwhy, shape_err)) "
           "return 0;")


def empty_reduction_checks(w: Writer, comp: Compiled) -> None:
    """NumPy's ValueError for a reduction with no identity over no elements."""
    for g, k in enumerate(comp.kernels):
        space = k.group.space
        runs = run_time_loops.runs(comp.loops, g)  # in a run-time loop: where it iterates
        for stage in k.group.stages:
            if stage.op in NO_IDENTITY:
                reduced = " * ".join(dim(space.shape[a]) for a in space.reduce_axes) or "1"
                msg = (f"{comp.name}(): zero-size array to reduction operation "
                       f"{NO_IDENTITY[stage.op]} which has no identity")
                with w.block(f"if (({reduced}) == 0 && {runs})"):
                    w.line(f"PyErr_SetString(PyExc_ValueError, {c_string(msg)});")
                    w.line("return NULL;")


def out_argument(w: Writer, comp: Compiled) -> None:
    """``outs[k]``: the k-th array of ``out=`` (an array, or a tuple of one per output)."""
    n = inplace_args.returned(comp)  # (not the written arguments)
    w.line(f"PyObject *outs[{max(1, len(comp.fn.outputs))}] = {{0}};")
    with w.block("if (out && out != Py_None)"):
        if n == 0:
            msg = f"{comp.name}(): the function returns None: out= takes no arrays"
            w.line(f"PyErr_SetString(PyExc_TypeError, {c_string(msg)});")
            w.line("goto done;")
        elif n == 1:
            w.line("outs[0] = (PyTuple_Check(out) && PyTuple_GET_SIZE(out) == 1) ? "
                   "PyTuple_GET_ITEM(out, 0) : out;")
        else:
            with w.block(f"if (!PyTuple_Check(out) || PyTuple_GET_SIZE(out) != {n})"):
                msg = f"{comp.name}(): out must be a tuple of {n} arrays"
                w.line(f"PyErr_SetString(PyExc_TypeError, {c_string(msg)});")
                w.line("goto done;")
            w.line(f"for (int k = 0; k < {n}; k++) outs[k] = PyTuple_GET_ITEM(out, k);")


def no_match_error(w: Writer, name: str, comps: list[Compiled]) -> None:
    """Sets SignatureError (SignatureShapeError when shapes were the problem) from the
    reasons in ``why``/``shape_err``: of several signatures, each distinct reason once
    (pywrap.h's cv_no_match)."""
    if len(comps) == 1:
        w.line("PyErr_Format(shape_err[0] ? cv_SignatureShapeError : cv_SignatureError, "
               f"\"%s(): %s\", {c_string(name)}, why[0]);")
        return
    shape = " || ".join(f"shape_err[{s}]" for s in range(len(comps)))
    sigs = ", ".join(c_string(_short(c, comps)) for c in comps)
    w.line(f"static const char *const sigs[] = {{{sigs}}};")
    w.line(f"cv_no_match(({shape}) ? cv_SignatureShapeError : cv_SignatureError, "
           f"{c_string(name)}, {len(comps)}, why, sigs);")


def _short(comp: Compiled, comps: list[Compiled]) -> str:
    """``comp``'s signature as a message shows it: whole where it is short, else only
    what tells it from the others (the parameters whose types differ, its conditions)."""
    whole = str(comp.sig)
    if len(whole) <= 200:
        return whole
    parts = [f"{p.shown}: {render_type(p)}" for i, p in enumerate(comp.sig.params)
             if len({render_type(c.sig.params[i]) for c in comps
                     if len(c.sig.params) == len(comp.sig.params)}) > 1]
    where = whole.partition(" where ")[2]
    return ", ".join(["...", *parts]) + (f" where {where}" if where else "")
