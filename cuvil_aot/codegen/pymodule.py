"""The CPython extension around the kernels: one METH_FASTCALL function per marked
function, dispatching on its signatures, checking arguments, allocating outputs.

Three C sources come out: ``kernels.h`` (argument structs, the kernel table
type), ``kernels.c`` (compiled once per CPU level, each defining its own table)
and ``module.c`` (the wrapper, which picks a table at import).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from cuvil_aot.codegen import ops_c
from cuvil_aot.codegen.binding import Bind, Check, plan
from cuvil_aot.codegen.c import Kernel, emit_kernel
from cuvil_aot.codegen.launch import Storage, dim, launch, matmul_operand
from cuvil_aot.codegen.writer import Writer
from cuvil_aot.frontend.signature import Signature, render_type
from cuvil_aot.ir.group import Kind
from cuvil_aot.ir.node import Function, Node
from cuvil_aot.ir.ops import Op

if TYPE_CHECKING:  # gpu_wrapper builds on this module: imported where used
    from cuvil_aot.codegen.gpu_wrapper import GpuPlan, GpuTargets

TYPENUM = {"bool": "NPY_BOOL", "int32": "NPY_INT32", "int64": "NPY_INT64",
           "float16": "NPY_FLOAT16", "float32": "NPY_FLOAT32", "float64": "NPY_FLOAT64"}
NO_IDENTITY = {Op.MAX: "maximum", Op.MIN: "minimum", Op.ARGMAX: "argmax", Op.ARGMIN: "argmin"}


@dataclass
class Compiled:
    """One signature of one function, lowered to kernels."""

    prefix: str
    name: str
    fn: Function
    sig: Signature
    kernels: list[Kernel] = field(default_factory=list)
    buffers: list[Node] = field(default_factory=list)
    symbols: list[str] = field(default_factory=list)
    contiguous: set[int] = field(default_factory=set)  # params read through a regrouping reshape

    @property
    def storage(self) -> Storage:
        return Storage({id(p): i for i, p in enumerate(self.fn.param_nodes)},
                       {id(b): i for i, b in enumerate(self.buffers)})


@dataclass
class Sources:
    kernels_h: str
    kernels_c: str
    module_c: str
    kernels_cu: str = ""  # the GPU kernels (codegen/cuda.py); empty in CPU-only builds


def lower_signature(prefix: str, name: str, fn: Function, sig: Signature) -> Compiled:
    comp = Compiled(prefix, name, fn, sig)
    for group in fn.groups:
        for dest in group.dests:
            if not any(dest.buffer is b for b in comp.buffers):
                comp.buffers.append(dest.buffer)
    buffer_ids = {id(b) for b in comp.buffers}
    for g, group in enumerate(fn.groups):
        comp.kernels.append(emit_kernel(f"{prefix}_k{g}", group, buffer_ids))
    params = {id(p): i for i, p in enumerate(fn.param_nodes)}
    for k in comp.kernels:
        for op in k.operands:
            if op.view is not None and id(op.base) in params:
                comp.contiguous.add(params[id(op.base)])
        for term in k.group.terms:
            for operand in term.srcs:
                base, view, _ = matmul_operand(operand, comp.storage)
                if view is not None and id(base) in params:
                    comp.contiguous.add(params[id(base)])
    comp.symbols = sorted({s for p in sig.params for d in p.type.shape for s in d.symbols})
    comp.symbols += [name for name, _, _ in fn.derived]
    return comp


def kernels_header(comps: list[Compiled]) -> str:
    w = Writer()
    w.line("#include \"cuvil_aot/kernel.h\"")
    for comp in comps:
        for k in comp.kernels:
            w.line(k.struct)
    with w.block("typedef struct", "} cv_kernel_table;"):
        for comp in comps:
            for k in comp.kernels:
                if k.group.kind is Kind.GEMM:
                    acc = ops_c.CTYPE[k.group.terms[0].dtype]
                    sfx = "f32" if acc == "float" else "f64"
                    w.line(f"cv_epilogue_{sfx} {k.name};")
                else:
                    w.line(f"cv_range_fn {k.name};")
        w.line("int unused;")
    return w.text()


def kernels_source(comps: list[Compiled]) -> str:
    w = Writer()
    w.line('#include "kernels.h"')
    for comp in comps:
        for k in comp.kernels:
            w.line(k.code)
    with w.block("const cv_kernel_table CV_TABLE =", "};"):
        for comp in comps:
            for k in comp.kernels:
                w.line(f".{k.name} = {k.name},")
    return w.text()


# The wrapper -----------------------------------------------------------------------

def _fail(w: Writer, shape: bool, fmt: str, *args: str) -> None:
    extra = "".join(f", {a}" for a in args)
    w.line(f"snprintf(why, nwhy, {_c_string(fmt)}{extra});")
    if shape:
        w.line("*shape_err = 1;")
    w.line("return 0;")


def _c_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def match_function(w: Writer, comp: Compiled) -> None:
    """Fills the call struct when the arguments match this signature."""
    params = comp.sig.params
    with w.block("typedef struct", f"}} {comp.prefix}_call;"):
        w.line(f"int64_t sym[{max(1, len(comp.symbols))}];")
        for p in params:
            if p.is_scalar:
                w.line(f"{'double' if p.type.dtype == 'float64' else 'int64_t'} arg_{p.name};")
    sig = f"static int {comp.prefix}_match(PyObject **argv, {comp.prefix}_call *c, char *why, " \
          "size_t nwhy, int *shape_err)"
    with w.block(sig):
        w.line("char got[160];")
        w.line("(void)got;")
        for i, p in enumerate(params):
            _match_param(w, i, p.name, p, comp)
        match_dims(w, comp, lambda i, axis: f"PyArray_DIM((PyArrayObject *)argv[{i}], {axis})")
        w.line("return 1;")


def match_dims(w: Writer, comp: Compiled, dim_of: Callable[[int, int], str]) -> None:
    """Binds the symbols from the argument shapes (``dim_of(param, axis)``), checks the
    rest, computes derived symbols and run-time requirements, and fills ``c->sym``."""
    steps, origin = plan(comp.sig.params)
    for sym in comp.symbols:
        w.line(f"int64_t S_{sym} = 0;")
    for step in steps:
        _match_dim(w, step, comp, origin, dim_of(step.param, step.axis))
    for name, length, step_size in comp.fn.derived:
        w.line(f"S_{name} = {dim(length)} > 0 ? ({dim(length)} + {step_size - 1}) / "
               f"{step_size} : 0;")
    for expr, why in comp.fn.requirements:
        with w.block(f"if ({dim(expr)} < 0)"):
            _fail(w, True, f"{why}, but it is %lld", f"(long long){dim(expr)}")
    for s, sym in enumerate(comp.symbols):
        w.line(f"c->sym[{s}] = S_{sym};")


def _match_param(w: Writer, i: int, name: str, p: object, comp: Compiled) -> None:
    from cuvil_aot.ir.node import Param

    assert isinstance(p, Param)
    obj = f"argv[{i}]"
    if p.is_scalar:
        if p.type.dtype == "float64":
            with w.block(f"if (PyArray_Check({obj}) || !PyNumber_Check({obj}) || "
                         f"PyComplex_Check({obj}))"):
                w.line(f"cv_describe({obj}, got, sizeof got);")
                _fail(w, False, f"argument '{name}': expected a float, got %s", "got")
            w.line(f"c->arg_{name} = PyFloat_AsDouble({obj});")
            with w.block(f"if (c->arg_{name} == -1.0 && PyErr_Occurred())"):
                w.line("PyErr_Clear();")
                _fail(w, False, f"argument '{name}': expected a float")
        else:
            with w.block(f"if (PyArray_Check({obj}) || !PyIndex_Check({obj}))"):
                w.line(f"cv_describe({obj}, got, sizeof got);")
                _fail(w, False, f"argument '{name}': expected an int, got %s", "got")
            w.line(f"c->arg_{name} = PyLong_AsLongLong({obj});")
            with w.block(f"if (c->arg_{name} == -1 && PyErr_Occurred())"):
                w.line("PyErr_Clear();")
                _fail(w, False, f"argument '{name}': expected an int that fits in 64 bits")
        return
    want = f"{render_type(p)}"
    with w.block(f"if (!PyArray_Check({obj}) || PyArray_TYPE((PyArrayObject *){obj}) != "
                 f"{TYPENUM[p.type.dtype]})"):
        w.line(f"cv_describe({obj}, got, sizeof got);")
        _fail(w, False, f"argument '{name}': expected a {p.type.dtype} array {want}, got %s",
              "got")
    with w.block(f"if (PyArray_NDIM((PyArrayObject *){obj}) != {p.type.ndim})"):
        w.line(f"cv_describe({obj}, got, sizeof got);")
        _fail(w, True, f"argument '{name}': expected {p.type.ndim} dimensions {want}, got %s",
              "got")


def _match_dim(w: Writer, step: Bind | Check, comp: Compiled,
               origin: dict[str, tuple[int, int]], actual: str) -> None:
    p = comp.sig.params[step.param]
    if isinstance(step, Bind):
        value = f"({actual} - {dim(step.rest)})"
        with w.block(f"if ({value} % {step.coeff} != 0 || {value} / {step.coeff} < 0)"):
            _fail(w, True, f"argument '{p.name}': dimension {step.axis} is %lld, which is not "
                  f"{p.type.shape[step.axis]} for any size {step.symbol}", f"(long long){actual}")
        w.line(f"S_{step.symbol} = {value} / {step.coeff};")
        return
    sources = ", ".join(f"{s} from '{comp.sig.params[origin[s][0]].name}' dimension "
                        f"{origin[s][1]}" for s in sorted(step.expected.symbols))
    with w.block(f"if ({actual} != {dim(step.expected)})"):
        if step.expected.is_static:
            _fail(w, True, f"argument '{p.name}': dimension {step.axis} is %lld, expected "
                  f"{step.expected} ({render_type(p)})", f"(long long){actual}")
        else:
            _fail(w, True, f"argument '{p.name}': dimension {step.axis} is %lld, expected "
                  f"{step.expected} = %lld ({sources})", f"(long long){actual}",
                  f"(long long){dim(step.expected)}")


def exec_function(w: Writer, comp: Compiled) -> None:
    """Runs every kernel; no Python API calls, so it runs without the GIL."""
    sig = f"static int {comp.prefix}_exec(PyArrayObject **in, char **buf, " \
          f"const {comp.prefix}_call *c)"
    with w.block(sig):
        w.line("(void)in; (void)buf; (void)c;")
        for s, sym in enumerate(comp.symbols):
            w.line(f"const int64_t S_{sym} = c->sym[{s}]; (void)S_{sym};")
        for k in comp.kernels:
            launch(w, k, comp.storage)
        w.line("return 0;")


def run_function(w: Writer, comp: Compiled) -> None:
    """Normalizes inputs, prepares outputs and buffers, runs exec, builds the result."""
    fn = comp.fn
    nparams, nbuf = len(fn.params), len(comp.buffers)
    out_index = {id(o): i for i, o in enumerate(fn.outputs)}
    sig = f"static PyObject *{comp.prefix}_run(PyObject **argv, PyObject *out, " \
          f"const {comp.prefix}_call *c)"
    with w.block(sig):
        w.line("PyObject *result = NULL;")
        w.line(f"PyArrayObject *in[{max(1, nparams)}] = {{0}};")
        w.line(f"PyArrayObject *arr[{max(1, nbuf)}] = {{0}};  /* buffers that are outputs */")
        w.line(f"PyArrayObject *user[{max(1, nbuf)}] = {{0}};  /* out= arrays to copy into */")
        w.line(f"char *buf[{max(1, nbuf)}] = {{0}};")
        w.line(f"int owned[{max(1, nbuf)}] = {{0}};")
        w.line("int rc = 0;")
        for s, sym in enumerate(comp.symbols):
            w.line(f"const int64_t S_{sym} = c->sym[{s}]; (void)S_{sym};")
        _empty_reduction_checks(w, comp)
        for i, p in enumerate(fn.params):
            if not p.is_scalar:
                contig = int(i in comp.contiguous)
                w.line(f"in[{i}] = cv_normalize((PyArrayObject *)argv[{i}], {contig});")
                w.line(f"if (!in[{i}]) goto done;")
        _out_argument(w, comp)
        for b, buffer in enumerate(comp.buffers):
            shape = buffer.shape
            if id(buffer) in out_index:
                k = out_index[id(buffer)]
                w.line(f"npy_intp shape{b}[{max(1, len(shape))}] = "
                       f"{{{', '.join(dim(d) for d in shape) or '0'}}};")
                _output_buffer(w, comp.name, b, k, len(shape), buffer.dtype)
            else:
                size = " * ".join(dim(d) for d in shape) or "1"
                storage = ops_c.STORAGE[buffer.dtype]
                w.line(f"buf[{b}] = cv_buffer(({size}) * (int64_t)sizeof({storage}));")
                w.line(f"owned[{b}] = 1;")
                w.line(f"if (!buf[{b}]) {{ PyErr_NoMemory(); goto done; }}")
        big = " || ".join(f"{_work(k)} > 16384" for k in comp.kernels) or "0"
        with w.block(f"if ({big})"):
            w.line("Py_BEGIN_ALLOW_THREADS")
            w.line(f"rc = {comp.prefix}_exec(in, buf, c);")
            w.line("Py_END_ALLOW_THREADS")
        with w.block("else"):
            w.line(f"rc = {comp.prefix}_exec(in, buf, c);")
        w.line("if (rc) { PyErr_NoMemory(); goto done; }")
        for b, buffer in enumerate(comp.buffers):
            if id(buffer) in out_index:
                w.line(f"if (user[{b}] && PyArray_CopyInto(user[{b}], arr[{b}]) < 0) goto done;")
        _result(w, comp)
        w.line("done:")
        with w.block(f"for (int b = 0; b < {max(1, nbuf)}; b++)"):
            w.line("if (owned[b]) free(buf[b]);")
            w.line("Py_XDECREF(arr[b]);")
        w.line(f"for (int i = 0; i < {max(1, nparams)}; i++) Py_XDECREF(in[i]);")
        w.line("return result;")


def _work(k: Kernel) -> str:
    dims = k.group.space.shape
    if k.group.kind is Kind.GEMM:
        dims = dims + (k.group.terms[0].srcs[0].shape[-1],)
    return "(" + (" * ".join(dim(d) for d in dims) or "1") + ")"


def _empty_reduction_checks(w: Writer, comp: Compiled) -> None:
    for k in comp.kernels:
        space = k.group.space
        for stage in k.group.stages:
            if stage.op in NO_IDENTITY:
                reduced = " * ".join(dim(space.shape[a]) for a in space.reduce_axes) or "1"
                msg = (f"{comp.name}(): zero-size array to reduction operation "
                       f"{NO_IDENTITY[stage.op]} which has no identity")
                with w.block(f"if (({reduced}) == 0)"):
                    w.line(f"PyErr_SetString(PyExc_ValueError, {_c_string(msg)});")
                    w.line("return NULL;")


def _out_argument(w: Writer, comp: Compiled) -> None:
    n = len(comp.fn.outputs)
    w.line(f"PyObject *outs[{n}] = {{0}};")
    with w.block("if (out && out != Py_None)"):
        if n == 1:
            w.line("outs[0] = (PyTuple_Check(out) && PyTuple_GET_SIZE(out) == 1) ? "
                   "PyTuple_GET_ITEM(out, 0) : out;")
        else:
            with w.block(f"if (!PyTuple_Check(out) || PyTuple_GET_SIZE(out) != {n})"):
                msg = f"{comp.name}(): out must be a tuple of {n} arrays"
                w.line(f"PyErr_SetString(PyExc_TypeError, {_c_string(msg)});")
                w.line("goto done;")
            w.line(f"for (int k = 0; k < {n}; k++) outs[k] = PyTuple_GET_ITEM(out, k);")


def _output_buffer(w: Writer, name: str, b: int, k: int, ndim: int, dtype: str) -> None:
    typenum = TYPENUM[dtype]
    with w.block(f"if (outs[{k}])"):
        w.line(f"if (cv_check_out({_c_string(name)}, {k}, outs[{k}], {typenum}, {ndim}, "
               f"shape{b}) < 0) goto done;")
        w.line(f"PyArrayObject *o = (PyArrayObject *)outs[{k}];")
        w.line("int direct = PyArray_IS_C_CONTIGUOUS(o) && PyArray_ISALIGNED(o);")
        w.line("for (int i = 0; direct && i < (int)(sizeof in / sizeof in[0]); i++)")
        w.line("    if (in[i] && cv_overlaps(in[i], o)) direct = 0;")
        w.line(f"if (direct) {{ Py_INCREF(o); arr[{b}] = o; }} else user[{b}] = o;")
    with w.block(f"if (!arr[{b}])"):
        w.line(f"arr[{b}] = cv_new_output({ndim}, shape{b}, {typenum}, "
               f"(npy_intp)sizeof({ops_c.STORAGE[dtype]}));")
        w.line(f"if (!arr[{b}]) goto done;")
    w.line(f"buf[{b}] = PyArray_BYTES(arr[{b}]);")


def _result(w: Writer, comp: Compiled) -> None:
    index = {id(b): i for i, b in enumerate(comp.buffers)}
    items = []
    for o in comp.fn.outputs:
        b = index[id(o)]
        items.append(f"(user[{b}] ? (PyObject *)user[{b}] : (PyObject *)arr[{b}])")
    if not comp.fn.returns_tuple:
        w.line(f"result = {items[0]};")
        w.line("Py_INCREF(result);")
        if not comp.fn.outputs[0].shape:
            w.line("result = PyArray_Return((PyArrayObject *)result);")
        return
    w.line(f"result = PyTuple_New({len(items)});")
    w.line("if (!result) goto done;")
    for i, item in enumerate(items):
        w.line(f"{{ PyObject *o = {item}; Py_INCREF(o); PyTuple_SET_ITEM(result, {i}, o); }}")


def wrapper_function(w: Writer, index: int, name: str, comps: list[Compiled]) -> None:
    from cuvil_aot.codegen import gpu_wrapper

    params = comps[0].sig.params
    names = ", ".join(_c_string(p.name) for p in params)
    w.line(f"static const char *const f{index}_names[] = {{{names or '0'}}};")
    sig = f"static PyObject *py_f{index}(PyObject *self, PyObject *const *args, " \
          "Py_ssize_t nargs, PyObject *kwnames)"
    with w.block(sig):
        w.line("(void)self;")
        w.line(f"PyObject *argv[{max(1, len(params))}]; PyObject *out, *stream;")
        w.line(f"if (cv_parse_args({_c_string(name)}, f{index}_names, {len(params)}, args, nargs, "
               "kwnames, argv, &out, &stream) < 0) return NULL;")
        gpu_wrapper.branch(w, index, name, len(params))
        w.line(f"char why[{len(comps)}][320]; int shape_err[{len(comps)}] = {{0}};")
        for s, comp in enumerate(comps):
            with w.block(""):
                w.line(f"{comp.prefix}_call c;")
                w.line(f"int r = {comp.prefix}_match(argv, &c, why[{s}], sizeof why[{s}], "
                       f"&shape_err[{s}]);")
                w.line("if (r < 0) return NULL;")
                w.line(f"if (r) return {comp.prefix}_run(argv, out, &c);")
        no_match_error(w, name, comps)
        w.line("return NULL;")


def no_match_error(w: Writer, name: str, comps: list[Compiled]) -> None:
    """Sets SignatureError (SignatureShapeError when shapes were the problem) from the
    reasons in ``why``/``shape_err``, one line per signature when there are several."""
    if len(comps) == 1:
        w.line("PyErr_Format(shape_err[0] ? cv_SignatureShapeError : cv_SignatureError, "
               f"\"%s(): %s\", {_c_string(name)}, why[0]);")
        return
    w.line("PyObject *msg = PyUnicode_FromFormat(\"%s(): no signature matches the "
           f"arguments:\", {_c_string(name)});")
    for s, comp in enumerate(comps):
        line = f"\n  ({comp.sig}): "
        w.line(f"if (msg) PyUnicode_AppendAndDel(&msg, PyUnicode_FromFormat("
               f"{_c_string(line)}\"%s\", why[{s}]));")
    shape = " || ".join(f"shape_err[{s}]" for s in range(len(comps)))
    w.line(f"PyObject *kind = ({shape}) ? cv_SignatureShapeError : cv_SignatureError;")
    w.line("if (msg) { PyErr_SetObject(kind, msg); Py_DECREF(msg); }")


def module_source(ext_name: str, functions: dict[str, list[Compiled]], levels: list[int],
                  gpu: GpuPlan | None = None, targets: GpuTargets | None = None) -> str:
    """The wrapper; ``targets``: what the embedded fatbin holds (None: CPU only)."""
    from cuvil_aot.codegen import gpu_wrapper

    w = Writer()
    w.line("#define PY_SSIZE_T_CLEAN")
    w.line("#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION")
    w.line("#include <Python.h>")
    w.line('#include "cuvil_aot/pywrap.h"')
    w.line('#include "kernels.h"')
    for level in levels:
        w.line(f"extern const cv_kernel_table cv_table_v{level};")
    w.line("static const cv_kernel_table *K;")
    w.line("static const cv_runtime_api *api;")
    gpu = gpu or gpu_wrapper.GpuPlan()
    gpu_wrapper.module_table(w, gpu, targets)
    for index, (name, comps) in enumerate(functions.items()):
        for comp in comps:
            match_function(w, comp)
            exec_function(w, comp)
            run_function(w, comp)
        gpu_wrapper.function(w, index, name, comps, gpu, targets is not None)
        wrapper_function(w, index, name, comps)
    with w.block("static PyMethodDef methods[] =", "};"):
        for index, (name, comps) in enumerate(functions.items()):
            doc = name + "(" + ", ".join(p.name for p in comps[0].sig.params) + ")\n" + \
                "\n".join(f"  ({c.sig})" for c in comps)
            w.line(f"{{{_c_string(name)}, (PyCFunction)(void (*)(void))py_f{index}, "
                   f"METH_FASTCALL | METH_KEYWORDS, {_c_string(doc)}}},")
        w.line("{NULL, NULL, 0, NULL}")
    w.line(f"static struct PyModuleDef def = {{PyModuleDef_HEAD_INIT, {_c_string(ext_name)}, "
           "NULL, -1, methods, NULL, NULL, NULL, NULL};")
    with w.block(f"PyMODINIT_FUNC PyInit_{ext_name}(void)"):
        w.line("import_array();")
        w.line("api = cv_import_runtime();")
        w.line("if (!api || cv_import_errors() < 0 || cv_init_out_handler(api) < 0) return NULL;")
        w.line("int level = api->cpu_level(), chosen = 0;")
        for level in sorted(levels):
            w.line(f"if (level >= {level}) {{ K = &cv_table_v{level}; chosen = {level}; }}")
        with w.block("if (!K)"):
            w.line("PyErr_Format(PyExc_ImportError, \"this module was built for x86-64 levels "
                   f"{levels} but the CPU supports only level %d\", level);")
            w.line("return NULL;")
        w.line("PyObject *m = PyModule_Create(&def);")
        w.line("if (m && PyModule_AddIntConstant(m, \"cpu_level\", chosen) < 0) { Py_DECREF(m); "
               "return NULL; }")
        w.line("return m;")
    return w.text()


def generate(ext_name: str, lowered: dict[str, list[tuple[Signature, Function]]],
             levels: list[int], cuda: GpuTargets | None = None) -> Sources:
    from cuvil_aot.codegen import gpu_wrapper

    functions: dict[str, list[Compiled]] = {}
    for f, (name, sigs) in enumerate(lowered.items()):
        functions[name] = [lower_signature(f"f{f}_s{s}", name, fn, sig)
                           for s, (sig, fn) in enumerate(sigs)]
    comps = [c for cs in functions.values() for c in cs]
    gpu = gpu_wrapper.lower(comps) if cuda is not None else None
    return Sources(kernels_header(comps), kernels_source(comps),
                   module_source(ext_name, functions, levels, gpu, cuda),
                   gpu.source if gpu is not None else "")
