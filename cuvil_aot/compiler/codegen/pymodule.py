"""The CPython extension around the kernels: one METH_FASTCALL function per marked
function, dispatching on its signatures, checking arguments, allocating outputs.

C sources come out: ``kernels.h`` (argument structs, the kernel table type),
``kernels.c`` (compiled once per CPU level, each defining its own table) and the
wrapper (``wrapper_sources``): ``module.c``, which picks a table at import, and in a
build with GPU code each function's device-array path in a translation unit of its
own. The checks both wrappers make are in wrapper_arguments.py; the device-array path
in gpu_wrapper.py.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from cuvil_aot.compiler.codegen import (
    execs,
    gpu_wrapper,
    inplace_args,
    ops_c,
    struct_arguments,
    text_names,
    wrapper_parts,
)
from cuvil_aot.compiler.codegen.compiled import Compiled, lower_signature
from cuvil_aot.compiler.codegen.gather_access import index_error
from cuvil_aot.compiler.codegen.gpu_plan import GpuPlan, lower
from cuvil_aot.compiler.codegen.kernel_emitter import Kernel
from cuvil_aot.compiler.codegen.launch import dim
from cuvil_aot.compiler.codegen.results import write_result
from cuvil_aot.compiler.codegen.wrapper_arguments import (
    empty_reduction_checks,
    match_dims,
    match_scalar,
    no_match_error,
    out_argument,
)
from cuvil_aot.compiler.codegen.writer import Writer, c_string
from cuvil_aot.compiler.gpu_targets import GpuTargets
from cuvil_aot.compiler.ir.group import Kind
from cuvil_aot.compiler.ir.node import Function, Param
from cuvil_aot.compiler.ir.signature import Signature, render_type


@dataclass
class Sources:
    kernels_h: str
    kernels_c: str
    wrapper: dict[str, str]
    """module.h, module.c and the GPU parts, by file name (wrapper_sources)."""
    cuda_units: dict[str, str] = field(default_factory=dict)
    """Each function's GPU kernels (codegen/cuda.py) by unit; empty in CPU-only builds."""


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


def kernel_aliases(comps: list[Compiled]) -> dict[str, str]:
    """Each kernel's name -> the first kernel's of its text (text_names.nameless)."""
    first: dict[str, str] = {}
    return {k.name: first.setdefault(text_names.nameless(k), k.name)
            for comp in comps for k in comp.kernels}


def kernels_source(comps: list[Compiled], same: dict[str, str]) -> str:
    """The kernels, each text once: a kernel the same as an earlier one but for its name
    (``same``: kernel_aliases) is that one in the table."""
    w = Writer()
    w.line('#include "kernels.h"')
    for comp in comps:
        for k in comp.kernels:
            if same[k.name] == k.name:
                w.line(k.code)
    with w.block("const cv_kernel_table CV_TABLE =", "};"):
        for name, kernel in same.items():
            w.line(f".{name} = {kernel},")
    return w.text()


# The wrapper -----------------------------------------------------------------------

def match_function(comp: Compiled) -> str:
    """The C function that fills the call struct when the arguments match this signature."""
    w = Writer()
    params = comp.sig.params
    sig = f"static int {comp.prefix}_match(PyObject **argv, {comp.prefix}_call *c, char *why, " \
          "size_t nwhy, int *shape_err)"
    with w.block(sig):
        w.line("char got[160];")
        w.line("(void)got;")
        for i, p in enumerate(params):
            _match_param(w, i, p, i in comp.fn.exact_bools)
        match_dims(w, comp, lambda i, axis: f"PyArray_DIM((PyArrayObject *)argv[{i}], {axis})")
        w.line("return 1;")
    return w.text()


def _match_param(w: Writer, i: int, p: Param, exact: bool) -> None:
    """Argument ``argv[i]``: a scalar, or a NumPy array of the dtype and rank of ``p``."""
    if p.is_scalar:
        match_scalar(w, i, p, exact)
        return
    w.line(f"if (!cv_array_is(argv[{i}], {ops_c.TYPENUM[p.type.dtype]}, {p.type.ndim}, "
           f"{c_string(p.shown)}, {c_string(p.type.dtype)}, {c_string(render_type(p))}, why, "
           "nwhy, shape_err)) return 0;")


def run_function(w: Writer, comp: Compiled, runs: str) -> None:
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
        w.line("int64_t gerr[4] = {0, 0, 0, 0};  /* a gather's index out of range */")
        for s, sym in enumerate(comp.symbols):
            w.line(f"const int64_t S_{sym} = c->sym[{s}]; (void)S_{sym};")
        empty_reduction_checks(w, comp)
        for i, p in enumerate(fn.params):
            if not p.is_scalar:
                contig = int(i in comp.contiguous)
                w.line(f"in[{i}] = cv_normalize((PyArrayObject *)argv[{i}], {contig});")
                w.line(f"if (!in[{i}]) goto done;")
        out_argument(w, comp)
        for b, buffer in enumerate(comp.buffers):
            shape = buffer.shape
            if id(buffer) in out_index:
                k = out_index[id(buffer)]
                w.line(f"npy_intp shape{b}[{max(1, len(shape))}] = "
                       f"{{{', '.join(dim(d) for d in shape) or '0'}}};")
                if not inplace_args.cpu_buffer(w, comp, b, k):  # an argument's own array
                    _output_buffer(w, comp.name, b, k, len(shape), buffer.dtype)
            else:
                size = " * ".join(dim(d) for d in shape) or "1"
                storage = ops_c.STORAGE[buffer.dtype]
                w.line(f"buf[{b}] = cv_buffer(({size}) * (int64_t)sizeof({storage}), "
                       f"&owned[{b}]);")
                w.line(f"if (!buf[{b}]) {{ PyErr_NoMemory(); goto done; }}")
        big = " || ".join(f"{_work(k)} > 16384" for k in comp.kernels) or "0"
        if runs != comp.prefix:  # another version's exec (exec_functions): its call struct,
            # laid out as this one's by the same text, as an object of that type (no cast)
            w.line(f"{runs}_call shared; memcpy(&shared, c, sizeof shared);")
        run = f"rc = {runs}_exec(in, buf, {'c' if runs == comp.prefix else '&shared'}, gerr);"
        with w.block(f"if ({big})"):
            w.line("Py_BEGIN_ALLOW_THREADS")
            w.line(run)
            w.line("Py_END_ALLOW_THREADS")
        with w.block("else"):
            w.line(run)
        w.line("if (rc) { PyErr_NoMemory(); goto done; }")
        index_error(w, "gerr")
        for b, buffer in enumerate(comp.buffers):
            if id(buffer) in out_index:
                w.line(f"if (user[{b}] && PyArray_CopyInto(user[{b}], arr[{b}]) < 0) goto done;")
        _result(w, comp)
        w.line("done:")
        with w.block(f"for (int b = 0; b < {max(1, nbuf)}; b++)"):
            w.line("cv_buffer_free(buf[b], owned[b]);")
            w.line("Py_XDECREF(arr[b]);")
        w.line(f"for (int i = 0; i < {max(1, nparams)}; i++) Py_XDECREF(in[i]);")
        w.line("return result;")


def _work(k: Kernel) -> str:
    """Elements (multiply-adds for a GEMM) of a kernel: an estimate, saturated at
    INT64_MAX (a GEMM's m * n * k may exceed it where every array fits)."""
    dims = k.group.space.shape
    if k.group.kind is Kind.GEMM:
        dims = dims + (k.group.terms[0].srcs[0].shape[-1],)
    expr = "1"
    for d in dims:
        expr = dim(d) if expr == "1" else f"cv_mul_sat({expr}, {dim(d)})"
    return expr


def _output_buffer(w: Writer, name: str, b: int, k: int, ndim: int, dtype: str) -> None:
    typenum = ops_c.TYPENUM[dtype]
    if dtype == "bfloat16":  # a new bfloat16 array needs ml_dtypes' type: imported here
        w.line("if (cv_bf16_typenum(1) < 0) goto done;")
    with w.block(f"if (outs[{k}])"):
        w.line(f"if (cv_check_out({c_string(name)}, {k}, outs[{k}], {typenum}, {ndim}, "
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

    def output(k: int) -> str:
        b = index[id(comp.fn.outputs[k])]
        obj = f"Py_NewRef(user[{b}] ? (PyObject *)user[{b}] : (PyObject *)arr[{b}])"
        if comp.fn.outputs[k].shape or inplace_args.param_of(comp, k) is not None:
            return obj
        return f"(outs[{k}] ? {obj} : PyArray_Return((PyArrayObject *){obj}))"  # a scalar
    write_result(w, comp.fn.returns, output)


def zero_d_params(comps: list[Compiled]) -> list[int]:
    """The parameters some signature takes as a 0-d array that no signature writes: a NumPy
    scalar passed there is made a 0-d array, as NumPy's functions take it (a written one
    stays refused: NumPy raises TypeError writing into a scalar)."""
    written = {p for comp in comps for _, p in comp.fn.inplace}
    return [i for i in range(len(comps[0].sig.params)) if i not in written and any(
        not c.sig.params[i].is_scalar and c.sig.params[i].type.ndim == 0 for c in comps)]


def wrapper_function(w: Writer, index: int, name: str, comps: list[Compiled],
                     classes: dict[str, int]) -> None:
    params = comps[0].sig.params
    n = max(1, len(params))
    names = ", ".join(c_string(p.shown) for p in params)
    w.line(f"static const char *const f{index}_names[] = {{{names or '0'}}};")
    with w.block(f"static PyObject *py_f{index}_cpu(PyObject **argv, PyObject *out)"):
        if any(not p.is_scalar for p in params):  # np.matrix, masked arrays: refused
            w.line(f"if (cv_refuse_odd_arrays({c_string(name)}, f{index}_names, "
                   f"{len(params)}, argv) < 0) return NULL;")
        w.line(f"char why[{len(comps)}][512]; int shape_err[{len(comps)}] = {{0}};")
        for s, comp in enumerate(comps):
            with w.block(""):
                w.line(f"{comp.prefix}_call c;")
                w.line(f"int r = {comp.prefix}_match(argv, &c, why[{s}], sizeof why[{s}], "
                       f"&shape_err[{s}]);")
                w.line("if (r < 0) return NULL;")
                w.line(f"if (r) return {comp.prefix}_run(argv, out, &c);")
        no_match_error(w, name, comps)
        w.line("return NULL;")
    with w.block(f"static PyObject *py_f{index}_leaves(PyObject **argv, PyObject *out, "
                 "PyObject *stream)"):
        w.line("(void)stream;")
        gpu_wrapper.branch(w, index, name, len(params))
        zero_d = zero_d_params(comps)
        if not zero_d:
            w.line(f"return py_f{index}_cpu(argv, out);")
        else:
            w.line(f"PyObject *held[{len(zero_d)}] = {{0}}, *res = NULL;")
            made = " && ".join(f"cv_scalar_as_array(&argv[{i}], &held[{j}]) == 0"
                               for j, i in enumerate(zero_d))
            w.line(f"if ({made}) res = py_f{index}_cpu(argv, out);")
            for j in range(len(zero_d)):
                w.line(f"Py_XDECREF(held[{j}]);")
            w.line("return res;")
    sig = f"static PyObject *py_f{index}(PyObject *self, PyObject *const *args, " \
          "Py_ssize_t nargs, PyObject *kwnames)"
    structure = comps[0].sig.structure
    with w.block(sig):
        w.line("(void)self;")
        w.line(f"PyObject *argv[{n}]; PyObject *out, *stream;")
        if structure is None:
            w.line(f"if (cv_parse_args({c_string(name)}, f{index}_names, {len(params)}, args, "
                   "nargs, kwnames, argv, &out, &stream) < 0) return NULL;")
            w.line(f"return py_f{index}_leaves(argv, out, stream);")
        else:
            from_class: dict[str, tuple[tuple[str, bool], ...]] = {}
            for label, attr, hideable in sorted({p for c in comps for p in c.fn.from_class}):
                from_class[label] = (*from_class.get(label, ()), (attr, hideable))
            checks = struct_arguments.Checks(
                frozenset(label for comp in comps for label in comp.fn.closed), from_class,
                classes)
            struct_arguments.unpack(w, index, name, structure, checks)


def _class_slots(w: Writer, classes: dict[str, int]) -> None:
    """The classes of instance arguments (`struct_arguments.classes`): slots the binding
    fills through ``_cv_set_classes`` with the class objects, which the wrapper checks an
    instance's type against (by identity: a module reloaded binds its new classes)."""
    if not classes:
        return
    w.line(f"static PyObject *cv_classes[{len(classes)}];")
    with w.block("static PyObject *cv_set_classes(PyObject *self, PyObject *given)"):
        w.line("(void)self;")
        w.line(f"if (cv_fill_classes(cv_classes, {len(classes)}, given) < 0) return NULL;")
        w.line("Py_RETURN_NONE;")


def wrapper_sources(ext_name: str, functions: dict[str, list[Compiled]], levels: list[int],
                    aliases: dict[str, str], gpu: GpuPlan | None = None,
                    targets: GpuTargets | None = None) -> dict[str, str]:
    """The wrapper by file: ``module.h``, what its translation units share; ``module.c``;
    where ``targets`` (what the embedded fatbin holds; None: CPU only) are, each function's
    device-array path in ``module_gpu_f{i}.c``, compiled apart and with less optimization
    (toolchain/cc.py): launch code, half the C of a function of many versions."""
    gpu = gpu or GpuPlan()
    parts = {} if targets is None else {
        f"module_gpu_f{index}.c": gpu_wrapper.part_source(index, name, comps, gpu, targets)
        for index, (name, comps) in enumerate(functions.items())}
    by_function = {name: execs.exec_functions(comps, aliases)
                   for name, comps in functions.items()}
    matches = {c.prefix: match_function(c) for comps in functions.values() for c in comps}
    cpu_parts = wrapper_parts.split([t for texts, _ in by_function.values()
                                     for t in texts.values()] + list(matches.values()))
    apart = [p for part in cpu_parts for p in part]
    return {"module.h": _shared_header(functions, apart),
            "module.c": _module_c(ext_name, functions, levels, by_function, matches,
                                  set(apart), gpu, not parts),
            **{f"module_cpu_{n}.c": wrapper_parts.source(part)
               for n, part in enumerate(cpu_parts)},
            **parts}


def _shared_header(functions: dict[str, list[Compiled]], apart: list[str]) -> str:
    w = Writer()
    w.line("#ifndef CV_MODULE_H")
    w.line("#define CV_MODULE_H")
    w.line("#define PY_SSIZE_T_CLEAN")
    w.line("#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION")
    w.line("#include <Python.h>")
    w.line('#include "cuvil_aot/pywrap.h"')
    w.line('#include "kernels.h"')
    w.line('#include "cuvil_aot/gpu_wrap.h"')
    w.line("extern const cv_runtime_api *api;")
    w.line("extern const cv_kernel_table *K;")
    for index, comps in enumerate(functions.values()):
        for comp in comps:
            execs.call_struct(w, comp)
        w.line(f"{gpu_wrapper.prototype(index)};")
    for piece in apart:  # functions in parts of their own (wrapper_parts.py)
        w.line(wrapper_parts.prototype(piece))
    w.line("#endif")
    return w.text()


def _module_c(ext_name: str, functions: dict[str, list[Compiled]], levels: list[int],
              by_function: dict[str, tuple[dict[str, str], dict[str, str]]],
              matches: dict[str, str], apart: set[str], gpu: GpuPlan,
              no_gpu_code: bool) -> str:
    """The module, the CPU path (but the execs and matches in parts of their own,
    ``apart``), and where the build has no GPU code the device-array paths that say so."""
    w = Writer()
    w.line('#include "module.h"')
    for level in levels:
        w.line(f"extern const cv_kernel_table cv_table_v{level};")
    w.line("const cv_kernel_table *K;")
    w.line("const cv_runtime_api *api;")
    classes = struct_arguments.classes([c[0].sig.structure for c in functions.values()
                                        if c[0].sig.structure is not None])
    _class_slots(w, classes)
    for index, (name, comps) in enumerate(functions.items()):
        texts, runs = by_function[name]
        for text in texts.values():
            if text not in apart:
                w.line(text)
        for comp in comps:
            if matches[comp.prefix] not in apart:
                w.line(matches[comp.prefix])
            run_function(w, comp, runs[comp.prefix])
        if no_gpu_code:
            gpu_wrapper.function(w, index, name, comps, gpu, False)
        wrapper_function(w, index, name, comps, classes)
    with w.block("static PyMethodDef methods[] =", "};"):
        for index, (name, comps) in enumerate(functions.items()):
            doc = name + "(" + ", ".join(a for a, _ in comps[0].sig.arguments) + ")\n" + \
                "\n".join(f"  ({c.sig})" for c in comps)
            w.line(f"{{{c_string(name)}, (PyCFunction)(void (*)(void))py_f{index}, "
                   f"METH_FASTCALL | METH_KEYWORDS, {c_string(doc)}}},")
        if classes:
            w.line('{"_cv_set_classes", (PyCFunction)cv_set_classes, METH_O, NULL},')
        w.line("{NULL, NULL, 0, NULL}")
    w.line(f"static struct PyModuleDef def = {{PyModuleDef_HEAD_INIT, {c_string(ext_name)}, "
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
        if classes:
            names = ", ".join(c_string(c) for c in classes)
            w.line(f"if (m && cv_add_object(m, \"_cv_classes\", Py_BuildValue("
                   f"\"({'s' * len(classes)})\", {names})) < 0) {{ Py_DECREF(m); return NULL; }}")
        w.line("return m;")
    return w.text()


def generate(ext_name: str, lowered: dict[str, list[tuple[Signature, Function]]],
             levels: list[int], cuda: GpuTargets | None = None) -> Sources:
    functions: dict[str, list[Compiled]] = {}
    for f, (name, sigs) in enumerate(lowered.items()):
        functions[name] = [lower_signature(f"f{f}_s{s}", name, fn, sig)
                           for s, (sig, fn) in enumerate(sigs)]
    comps = [c for cs in functions.values() for c in cs]
    gpu = lower(comps, cuda) if cuda is not None else None
    aliases = kernel_aliases(comps)
    return Sources(kernels_header(comps), kernels_source(comps, aliases),
                   wrapper_sources(ext_name, functions, levels, aliases, gpu, cuda),
                   gpu.sources() if gpu is not None else {})
