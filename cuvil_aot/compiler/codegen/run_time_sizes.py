"""Sizes the match function computes per call, once the argument shapes bind the symbols:
ceil(length / step) (``Function.derived``: a strided slice, a floor division of a
size, an inferred -1) and the start, length and step of a slice with run-time bounds
(``Function.run_time``, ir/run_time.py), as Python's ``slice.indices`` computes them.

One may read another's symbol (``x[:, :t][:, ::2]``, ``x[::2][t:]``), so they are
computed in the order their symbols allow. Before (IR) and after (C)::

    # run1a2b_start, run1a2b_len = slice(:add:int64(%t,1:int64):1) of S

    {
        const int64_t h0 = c->arg_t; ... const int64_t h2 = (h0 + h1);
        Py_ssize_t step = 1;
        Py_ssize_t start = 0, stop = (Py_ssize_t)h2;
        const Py_ssize_t len = PySlice_AdjustIndices((Py_ssize_t)S_S, &start, &stop, step);
        S_run1a2b_start = len > 0 ? start : 0;
        S_run1a2b_len = len;
    }
"""

from __future__ import annotations

from typing import Any

from cuvil_aot.compiler.codegen import host_scalars, ops_c
from cuvil_aot.compiler.codegen.compiled import Compiled
from cuvil_aot.compiler.codegen.shape_checks import checked
from cuvil_aot.compiler.codegen.writer import Writer, c_string
from cuvil_aot.compiler.ir.loop import RunTimeRange
from cuvil_aot.compiler.ir.node import Node
from cuvil_aot.compiler.ir.run_time import CallCheck, RunTimeSlice
from cuvil_aot.compiler.ir.types import Dim


def emit(w: Writer, comp: Compiled) -> list[Dim]:
    """Computes every derived and run-time symbol of ``comp`` into its ``S_*`` local;
    returns the dimensions computed overflow-checked (into ``ovf``)."""
    fn = comp.fn
    entries: list[Any] = list(fn.derived) + list(fn.run_time)
    made = {name for name, _, _ in fn.derived} | {s for r in fn.run_time for s in r.defines}
    bound = set(comp.symbols) - made
    computed: list[Dim] = []
    done: set[str] = set()
    while entries:
        ready = next((e for e in entries if _uses(e) <= bound), entries[0])
        entries.remove(ready)
        if isinstance(ready, RunTimeRange):  # a run-time loop's (ir/loop.py)
            if ready.key not in done:
                _range(w, ready)
            done.add(ready.key)
            bound |= set(ready.defines)
            continue
        if isinstance(ready, CallCheck):  # if cond: raise ... (frontend/branches.py)
            _call_check(w, ready)
            continue
        if isinstance(ready, RunTimeSlice):
            if ready.key not in done:
                _slice(w, ready)
                computed.append(ready.dim)
            done.add(ready.key)
            bound |= set(ready.defines)
            continue
        name, length, step = ready  # step: a constant, or a size the call knows
        with w.block(""):
            w.line(f"const int64_t len = {checked(length)};")
            w.line(f"const int64_t step = {checked(step) if isinstance(step, Dim) else step};")
            w.line(f"S_{name} = len > 0 && step > 0 ? len / step + (len % step != 0) : 0;")
        computed += [length, step] if isinstance(step, Dim) else [length]
        bound.add(name)
    return computed


def _uses(entry: Any) -> frozenset[str]:
    if isinstance(entry, RunTimeSlice | RunTimeRange | CallCheck):
        return entry.uses
    length, step = entry[1], entry[2]
    return frozenset(length.symbols | (step.symbols if isinstance(step, Dim) else set()))


def _slice(w: Writer, r: RunTimeSlice) -> None:
    """``slice(start, stop, step).indices(n)`` and its length, as CPython computes them
    (PySlice_Unpack's defaults and step clamp, then PySlice_AdjustIndices)."""
    with w.block(""):
        w.line(f"/* {str(r).replace('*/', '* /')} */")
        nodes = [b for b in (r.start, r.stop, r.step) if isinstance(b, Node)]
        names = host_scalars.locals_of(w, nodes)

        def value(n: Node) -> str:
            return f"(Py_ssize_t){ops_c.cast(names[id(n)], n.dtype, 'int64')}"

        if isinstance(r.step, Node):
            w.line(f"Py_ssize_t step = {value(r.step)};")
            with w.block("if (step == 0)"):
                w.line('PyErr_SetString(PyExc_ValueError, "slice step cannot be zero");')
                w.line("return -1;")
            w.line("if (step < -PY_SSIZE_T_MAX) step = -PY_SSIZE_T_MAX;")
            first, last = "(step < 0 ? PY_SSIZE_T_MAX : 0)", "(step < 0 ? PY_SSIZE_T_MIN : " \
                "PY_SSIZE_T_MAX)"
        else:
            w.line(f"Py_ssize_t step = {r.step};")
            first, last = ("0", "PY_SSIZE_T_MAX") if r.step > 0 else \
                ("PY_SSIZE_T_MAX", "PY_SSIZE_T_MIN")
        start = first if r.start is None else value(r.start)
        stop = last if r.stop is None else value(r.stop)
        w.line(f"Py_ssize_t start = {start}, stop = {stop};")
        w.line(f"const Py_ssize_t len = PySlice_AdjustIndices((Py_ssize_t){checked(r.dim)}, "
               "&start, &stop, step);")
        w.line(f"S_{r.start_symbol} = len > 0 ? start : 0;")
        w.line(f"S_{r.size_symbol} = len;")
        if r.step_symbol is not None:
            w.line(f"S_{r.step_symbol} = step;")


def _range(w: Writer, r: RunTimeRange) -> None:
    """``range(start, stop, step)``'s start, step and length, as CPython's range computes
    them (a zero step raises ValueError)."""
    if r.host_while is not None:
        _while_trips(w, r)
        return
    with w.block(""):
        w.line(f"/* {str(r).replace('*/', '* /')} */")
        names = host_scalars.locals_of(w, [r.start, r.stop, r.step])
        start, stop, step = (ops_c.cast(names[id(n)], n.dtype, "int64")
                             for n in (r.start, r.stop, r.step))
        w.line(f"const int64_t start = {start}, stop = {stop}, step = {step};")
        with w.block("if (step == 0)"):
            w.line('PyErr_SetString(PyExc_ValueError, "range() arg 3 must not be zero");')
            w.line("return -1;")
        w.line("const uint64_t span = step > 0 ? (start < stop ? (uint64_t)stop - "
               "(uint64_t)start : 0) : (start > stop ? (uint64_t)start - (uint64_t)stop : 0);")
        w.line("const uint64_t by = step > 0 ? (uint64_t)step : 0 - (uint64_t)step;")
        w.line(f"S_{r.start_symbol} = start;")
        w.line(f"S_{r.step_symbol} = step;")
        w.line(f"S_{r.size_symbol} = span > 0 ? (int64_t)((span - 1) / by + 1) : 0;")


def _while_trips(w: Writer, r: RunTimeRange) -> None:
    """A while loop's trip count: the loop run on the numbers its condition reads, as
    Python runs it (a loop that never ends does not end here either)."""
    hw = r.host_while
    assert hw is not None
    with w.block(""):
        w.line(f"/* {str(r).replace('*/', '* /')} */")
        names = host_scalars.locals_of(w, list(hw.inits))
        state = {}
        for k, (param, init) in enumerate(zip(hw.state, hw.inits)):
            ctype = ops_c.CTYPE[param.dtype]
            w.line(f"{ctype} w{k} = {ops_c.cast(names[id(init)], init.dtype, param.dtype)};")
            state[id(param)] = f"w{k}"
        w.line("int64_t trips = 0;")
        with w.block("for (;;)"):
            names = host_scalars.locals_of(w, [hw.cond, *hw.updates], state)
            w.line(f"if (!({names[id(hw.cond)]})) break;")
            for k, (param, update) in enumerate(zip(hw.state, hw.updates)):
                w.line(f"const {ops_c.CTYPE[param.dtype]} u{k} = "
                       f"{ops_c.cast(names[id(update)], update.dtype, param.dtype)};")
            for k in range(len(hw.state)):
                w.line(f"w{k} = u{k};")
            w.line("trips++;")
        w.line(f"S_{r.start_symbol} = 0;")
        w.line(f"S_{r.step_symbol} = 1;")
        w.line(f"S_{r.size_symbol} = trips;")


def _call_check(w: Writer, check: CallCheck) -> None:
    """The exception ``check`` raises, where its condition holds at this call (the
    message's numbers printed as Python prints ints)."""
    numbers = [p for p in check.message if isinstance(p, Node)]
    with w.block(""):
        w.line(f"/* {str(check).replace('*/', '* /')} */")
        names = host_scalars.locals_of(w, [check.cond, *numbers])
        with w.block(f"if ({names[id(check.cond)]})"):
            if not check.error:  # a version for other calls (frontend/versions.py): no match
                text = "".join(p for p in check.message if isinstance(p, str))
                w.line(f"snprintf(why, nwhy, \"%s\", {c_string(text)});")
                w.line("return 0;")
            elif numbers:
                fmt = "".join(p.replace("%", "%%") if isinstance(p, str) else "%lld"
                              for p in check.message)
                args = "".join(f", (long long){names[id(n)]}" for n in numbers)
                w.line(f"PyErr_Format(PyExc_{check.error}, {c_string(fmt)}{args});")
            else:
                text = "".join(p for p in check.message if isinstance(p, str))
                w.line(f"PyErr_SetString(PyExc_{check.error}, {c_string(text)});")
            w.line("return -1;")
