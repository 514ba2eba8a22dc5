"""What both wrappers emit for assignments into arguments (frontend/assign.py): the output
stored in an argument's own array, and the run-time int indices of assignments.

An argument written in place (``Function.inplace``) is the buffer of its output: the
caller's array itself where it is C-contiguous (aligned, native byte order), so the
kernels write only the assigned region; else a C-contiguous copy that the call copies
back. A read-only array raises NumPy's ``ValueError: assignment destination is
read-only``. Returning the argument returns the caller's object. Before (IR) and after
(C, the CPU wrapper's buffer for ``k_cache``)::

    return k_cache  # inplace (0, 0): output 0 is stored in argument 0

    if (!PyArray_ISWRITEABLE(o)) { ... "assignment destination is read-only" ... }
    if (PyArray_IS_C_CONTIGUOUS(o) && ...) { Py_INCREF(o); arr[0] = o; }
    else { arr[0] = <a C-contiguous copy>; user[0] = o; /* copied back after the kernels */ }

A run-time int index (``Function.indices``: ``k_cache[:, t]``) is a symbol the match
function computes once the shapes are bound: wrapped once when negative, NumPy's
IndexError where it is out of range.
"""

from __future__ import annotations

from cuvil_aot.compiler.codegen import host_scalars, ops_c
from cuvil_aot.compiler.codegen.compiled import Compiled
from cuvil_aot.compiler.codegen.launch import dim
from cuvil_aot.compiler.codegen.writer import Writer

READ_ONLY = '"assignment destination is read-only"'


def param_of(comp: Compiled, k: int) -> int | None:
    """The argument output ``k`` is stored in, if any."""
    return next((p for out, p in comp.fn.inplace if out == k), None)


def returned(comp: Compiled) -> int:
    """How many of the outputs the function returns (the rest are written arguments)."""
    return len(comp.fn.outputs) - comp.fn.hidden


def _out_refused(w: Writer, comp: Compiled, k: int, i: int) -> None:
    if k >= returned(comp):
        return
    with w.block(f"if (outs[{k}])"):
        msg = (f"{comp.name}(): out= cannot hold the returned argument "
               f"'{comp.fn.params[i].name}': the call writes into that array itself")
        w.line(f'PyErr_SetString(PyExc_TypeError, "{msg}");')
        w.line("goto done;")


def cpu_buffer(w: Writer, comp: Compiled, b: int, k: int) -> bool:
    """Buffer ``b`` (output ``k``) in the CPU wrapper where it is an argument's array;
    False where it is not."""
    i = param_of(comp, k)
    if i is None:
        return False
    typenum = ops_c.TYPENUM[comp.fn.outputs[k].dtype]
    _out_refused(w, comp, k, i)
    with w.block(""):
        w.line(f"PyArrayObject *o = (PyArrayObject *)argv[{i}];")
        with w.block("if (!PyArray_ISWRITEABLE(o))"):
            w.line(f"PyErr_SetString(PyExc_ValueError, {READ_ONLY});")
            w.line("goto done;")
        with w.block("if (PyArray_IS_C_CONTIGUOUS(o) && PyArray_ISALIGNED(o) && "
                     "PyArray_ISNOTSWAPPED(o))"):
            w.line(f"Py_INCREF(o); arr[{b}] = o;")
        with w.block("else"):
            w.line(f"arr[{b}] = (PyArrayObject *)PyArray_FromArray(o, "
                   f"PyArray_DescrFromType({typenum}), NPY_ARRAY_CARRAY | NPY_ARRAY_ENSURECOPY);")
            w.line(f"if (!arr[{b}]) goto done;")
            w.line(f"user[{b}] = o;  /* copied back after the kernels */")
        w.line(f"buf[{b}] = PyArray_BYTES(arr[{b}]);")
    return True


def gpu_buffer(w: Writer, comp: Compiled, b: int, k: int) -> bool:
    """The GPU wrapper's buffer ``b`` where it is an argument's array (as ``cpu_buffer``)."""
    i = param_of(comp, k)
    if i is None:
        return False
    _out_refused(w, comp, k, i)
    with w.block(f"if (ga[{i}].readonly)"):
        w.line(f"PyErr_SetString(PyExc_ValueError, {READ_ONLY});")
        w.line("goto done;")
    with w.block(f"if (copies[{i}])"):  # read through a reshape: already a copy
        w.line(f"obj[{b}] = copies[{i}]; Py_INCREF(obj[{b}]); gb[{b}] = ga[{i}]; "
               f"user[{b}] = argv[{i}];")
    with w.block(f"else if (cv_gpu_is_c_contiguous(&ga[{i}]))"):
        w.line(f"obj[{b}] = argv[{i}]; Py_INCREF(obj[{b}]); gb[{b}] = ga[{i}];")
    with w.block("else"):
        w.line("cv_gpu_array cp;")
        w.line(f"if (!(obj[{b}] = api->gpu->contiguous(argv[{i}], &ga[{i}], &cp))) goto done;")
        w.line(f"gb[{b}] = cp; held[{b}] = 1; user[{b}] = argv[{i}];")
    return True


def index_symbols(w: Writer, comp: Compiled) -> None:
    """The match function's run-time int indices: wrapped, checked, into ``S_*``."""
    for symbol, node, size, axis in comp.fn.indices:
        with w.block(""):
            names = host_scalars.locals_of(w, [node])
            value = ops_c.cast(names[id(node)], node.dtype, "int64")
            w.line(f"const int64_t v = (int64_t)({value}), n = {dim(size)};")
            with w.block("if (v < -n || v >= n)"):
                w.line('PyErr_Format(PyExc_IndexError, "index %lld is out of bounds for axis '
                       f'{axis} with size %lld", (long long)v, (long long)n);')
                w.line("return -1;")
            w.line(f"S_{symbol} = v < 0 ? v + n : v;")
