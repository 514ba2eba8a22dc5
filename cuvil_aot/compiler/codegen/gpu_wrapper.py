"""The GPU half of the CPython wrapper: device-array calls of every signature.

The CPU wrapper (pymodule.py) hands a call here when its first argument that is
not a scalar is no NumPy array. Per function, ``py_f{i}_gpu`` views every
argument as a device array (the runtime reads PyTorch tensors through the
DLPack C exchange API, CuPy/Numba/PyCUDA arrays through
``__cuda_array_interface__``), checks they share a device, and tries each
signature; ``{prefix}_grun`` then picks the stream, allocates outputs and
intermediates through the caller's framework (so results are arrays of the
same kind) and launches the kernels of codegen/cuda.py on the embedded fatbin
through the runtime, filling their arguments as the CPU path does
(launch.fill_args, with device storage; gpu_launch.py picks each launch). No Python
runs between the call and the launches, except the framework allocator where the type
offers no C one.
"""

from __future__ import annotations

from cuvil_aot.compiler.codegen import (
    cuda_one,
    gather_access,
    gpu_attention,
    gpu_plan,
    gpu_wg_copies,
    inplace_args,
)
from cuvil_aot.compiler.codegen.compiled import Compiled
from cuvil_aot.compiler.codegen.gpu_launch import GpuStorage, launches
from cuvil_aot.compiler.codegen.gpu_plan import GpuPlan
from cuvil_aot.compiler.codegen.launch import dim
from cuvil_aot.compiler.codegen.results import write_result
from cuvil_aot.compiler.codegen.wrapper_arguments import (
    empty_reduction_checks,
    fail,
    match_dims,
    match_scalar,
    no_match_error,
    out_argument,
    shown,
)
from cuvil_aot.compiler.codegen.writer import Writer, c_string
from cuvil_aot.compiler.gpu_targets import GpuTargets
from cuvil_aot.compiler.ir.node import Node
from cuvil_aot.compiler.ir.signature import render_type
from cuvil_aot.compiler.ir.types import DTYPES

# native/.../cuda_driver.h
DT = {dtype: f"CV_DT_{dtype.upper()}" for dtype in DTYPES}


def prototype(index: int) -> str:
    """The device-array path of function ``index``, defined in its part of the wrapper."""
    return f"PyObject *py_f{index}_gpu(PyObject **argv, PyObject *out, PyObject *stream)"


def part_source(index: int, name: str, comps: list[Compiled], gp: GpuPlan,
                targets: GpuTargets) -> str:
    """Function ``index``'s device-array path, a translation unit of its own
    (``module_gpu_f{index}.c``: pymodule.wrapper_sources), with its unit's kernel table."""
    w = Writer()
    w.line("#define CV_WRAPPER_PART")
    w.line('#include "module.h"')
    _unit_table(w, gp, f"f{index}", targets)
    function(w, index, name, comps, gp, True)
    return w.text()


def _unit_table(w: Writer, gp: GpuPlan, unit: str, targets: GpuTargets) -> None:
    """The unit's kernel table; its image is the unit's fatbin linked in by toolchain/nvcc.py
    (``cv_fatbin_{unit}``), loaded on a device at its first launch there."""
    declared: set[str] = set()  # a kernel of several versions (gpu_plan._named): once
    for prefix, kernels in gp.kernels.items():
        if gpu_plan.unit_of(prefix) != unit:
            continue
        for k in kernels:
            if k.name not in declared:
                declared.add(k.name)
                w.line(k.struct)  # the layout the kernels read (the same text is in the unit)
        for ak in gp.attention.get(prefix, []):
            if ak.name not in declared:  # an attention of several versions: once
                declared.add(ak.name)
                w.line(ak.struct)
        w.line(cuda_one.one_struct(prefix, kernels))
    if unit not in gp.names:
        return
    w.line(gp.shared_structs(unit))
    sass = ", ".join(map(str, targets.sass)) or "0"
    w.line(f"static const int cv_gpu_sass[] = {{{sass}}};")
    table, names = f"cv_gpu_{unit}", gp.names[unit]
    w.line(f"extern const unsigned char cv_fatbin_{unit}[];")
    listed = ", ".join(c_string(n) for n in names) or "0"
    w.line(f"static const char *const {table}_names[] = {{{listed}}};")
    w.line(f"static cv_cuda_module {table} = {{cv_fatbin_{unit}, {table}_names, "
           f"{len(names)}, cv_gpu_sass, {len(targets.sass)}, {targets.ptx}, {{0}}}};")


def branch(w: Writer, index: int, name: str, nparams: int) -> None:
    """The CPU wrapper's branch to the GPU path (argv, out and stream are parsed)."""
    with w.block(f"if (cv_gpu_candidate(argv, {nparams}))"):
        w.line(f"PyObject *g = py_f{index}_gpu(argv, out, stream);")
        w.line("if (g != Py_NotImplemented) return g;")
        w.line("Py_DECREF(g);")
    with w.block("if (stream && stream != Py_None)"):
        msg = c_string(f"{name}(): stream= is for calls with device arrays")
        w.line(f"PyErr_SetString(PyExc_TypeError, {msg});")
        w.line("return NULL;")


def function(w: Writer, index: int, name: str, comps: list[Compiled], gp: GpuPlan,
             enabled: bool) -> None:
    """The function's device-array path: its signatures' matching and launches; where the
    module has no CUDA kernels (``enabled`` False) or the function none (gpu_plan.refusal),
    a CudaError saying why."""
    refused = gpu_plan.refusal(comps)
    enabled = enabled and refused is None
    if enabled:
        for comp in comps:
            _match(w, comp)
            _run(w, comp, gp)
    params = comps[0].sig.params
    n = max(1, len(params))
    w.line(f"static const char *const f{index}_gnames[] = "
           f"{{{', '.join(c_string(p.shown) for p in params) or '0'}}};")
    with w.block(prototype(index)):
        w.line(f"cv_gpu_array ga[{n}]; int dev[{n}] = {{0}}; int first = -1;")
        w.line("PyObject *result = NULL; char got[200];")
        w.line("(void)out; (void)stream; (void)got;")
        _view_arguments(w, name, index, len(params))
        if refused is not None:
            w.line(f"result = cv_gpu_refused({c_string(name)}, {c_string(refused)});")
        elif not enabled:
            w.line(f"result = cv_gpu_unavailable({c_string(name)});")
        else:
            _dispatch(w, name, comps)
        w.line("done:")
        w.line(f"for (int i = 0; i < {len(params)}; i++) if (dev[i]) api->gpu->release(&ga[i]);")
        w.line("return result;")


def _view_arguments(w: Writer, name: str, index: int, nparams: int) -> None:
    with w.block(f"for (int i = 0; i < {nparams}; i++)"):
        w.line("PyObject *o = argv[i];")
        w.line("if (o == Py_None || PyFloat_Check(o) || PyLong_Check(o) || "
               "PyArray_IsScalar(o, Generic)) continue;")
        w.line("int r = api->gpu->array(o, &ga[i]);")
        w.line("if (r < 0) goto done;")
        with w.block("if (!r)"):
            w.line("if (first < 0) { result = Py_NotImplemented; Py_INCREF(result); goto done; }")
            w.line("cv_gpu_describe(o, &ga[i], 0, got, sizeof got);")
            w.line(f"PyErr_Format(PyExc_TypeError, \"%s(): argument '%s' must be a device array "
                   f"like '%s', got %s\", {c_string(name)}, f{index}_gnames[i], "
                   f"f{index}_gnames[first], got);")
            w.line("goto done;")
        w.line("dev[i] = 1;")
        w.line("if (first < 0) first = i;")
        with w.block("else if (ga[i].device != ga[first].device)"):
            w.line(f"PyErr_Format(PyExc_ValueError, \"%s(): arguments on two devices: '%s' on "
                   f"cuda:%d, '%s' on cuda:%d\", {c_string(name)}, f{index}_gnames[first], "
                   f"ga[first].device, f{index}_gnames[i], ga[i].device);")
            w.line("goto done;")
    w.line("if (first < 0) { result = Py_NotImplemented; Py_INCREF(result); goto done; }")


def _dispatch(w: Writer, name: str, comps: list[Compiled]) -> None:
    w.line(f"char why[{len(comps)}][512]; int shape_err[{len(comps)}] = {{0}};")
    for s, comp in enumerate(comps):
        with w.block(""):
            w.line(f"{comp.prefix}_call c;")
            w.line(f"int r = {comp.prefix}_gmatch(argv, ga, dev, &c, why[{s}], sizeof why[{s}], "
                   f"&shape_err[{s}]);")
            w.line("if (r < 0) goto done;")
            w.line(f"if (r) {{ result = {comp.prefix}_grun(argv, ga, first, out, stream, &c); "
                   "goto done; }")
    no_match_error(w, name, comps)  # the CPU path's messages, word for word


# Matching ------------------------------------------------------------------------------

def _match(w: Writer, comp: Compiled) -> None:
    params = comp.sig.params
    with w.block(f"static int {comp.prefix}_gmatch(PyObject **argv, const cv_gpu_array *ga, "
                 f"const int *dev, {comp.prefix}_call *c, char *why, size_t nwhy, "
                 "int *shape_err)"):
        w.line("char got[200]; (void)got; (void)ga; (void)dev;")
        for i, p in enumerate(params):
            if p.is_scalar:
                match_scalar(w, i, p, i in comp.fn.exact_bools)
                continue
            want = render_type(p)
            with w.block(f"if (!dev[{i}] || ga[{i}].dtype != {DT[p.type.dtype]})"):
                w.line(f"cv_gpu_describe(argv[{i}], &ga[{i}], dev[{i}], got, sizeof got);")
                fail(w, False, f"argument '{shown(p)}': expected a {p.type.dtype} array {want}, "
                      "got %s", "got")
            with w.block(f"if (ga[{i}].ndim != {p.type.ndim})"):
                w.line(f"cv_gpu_describe(argv[{i}], &ga[{i}], 1, got, sizeof got);")
                fail(w, True, f"argument '{shown(p)}': expected {p.type.ndim} dimensions {want}, "
                      "got %s", "got")
        match_dims(w, comp, lambda i, axis: f"ga[{i}].shape[{axis}]")
        w.line("return 1;")


# Running -------------------------------------------------------------------------------

def _run(w: Writer, comp: Compiled, gp: GpuPlan) -> None:
    fn = comp.fn
    nparams, nbuf = max(1, len(fn.params)), max(1, len(comp.buffers))
    st = GpuStorage({id(p): i for i, p in enumerate(fn.param_nodes)},
                    {id(b): i for i, b in enumerate(comp.buffers)}, comp.named, comp.alias)
    with w.block(f"static PyObject *{comp.prefix}_grun(PyObject **argv, cv_gpu_array *ga, "
                 f"int first, PyObject *out, PyObject *stream_kw, const {comp.prefix}_call *c)"):
        w.line(f"PyObject *result = NULL, *obj[{nbuf}] = {{0}}, *user[{nbuf}] = {{0}}, "
               f"*copies[{nparams}] = {{0}};")
        w.line(f"cv_gpu_array gb[{nbuf}]; int scratch[{nbuf}] = {{0}}, held[{nbuf}] = {{0}};")
        w.line("uintptr_t stream = 0; const int dev = ga[first].device; int sm = 0;")
        w.line("void *caller_ctx = NULL; int saved = 0;  /* the caller's CUDA context */")
        nk = len(gp.kernels[comp.prefix])
        w.line(f"cv_gpu_array kpart[{nk}]; int kpart_on[{nk}] = {{0}};  /* split-K sums */")
        w.line(f"cv_gpu_array qw[{nk}]; int qw_on[{nk}] = {{0}}, qw_held[{nk}] = {{0}};  "
               "/* int8 weights dequantized (gpu_launch._dequantize) */")
        w.line("(void)kpart; (void)qw; (void)qw_on; (void)qw_held;")
        gpu_wg_copies.declare_scratch(w, gp, comp.prefix)
        w.line("(void)argv; (void)stream; (void)sm; (void)gb; (void)copies; (void)scratch;")
        gathers = any(k.gathers for k in gp.kernels[comp.prefix])
        if gathers:
            w.line(gather_access.GPU_DECLARE)
        for s, sym in enumerate(comp.symbols):
            w.line(f"const int64_t S_{sym} = c->sym[{s}]; (void)S_{sym};")
        empty_reduction_checks(w, comp)
        w.line("if (api->gpu->save_context(&caller_ctx) < 0) goto done;")
        w.line("saved = 1;")
        w.line("if (api->gpu->stream(&ga[first], stream_kw, &stream) < 0) goto done;")
        for i, p in enumerate(fn.params):
            if not p.is_scalar:
                w.line(f"if (api->gpu->order_after(&ga[{i}], stream) < 0) goto done;")
        for i in sorted(comp.contiguous):
            _contiguous_input(w, i)
        out_argument(w, comp)
        outputs = {id(o): k for k, o in enumerate(fn.outputs)}
        gpu_attention.conditions(w, gp, comp.prefix)
        for b, buffer in enumerate(comp.buffers):  # (an argument's own array: inplace_args)
            fused = gpu_attention.fused_buffer(gp, comp.prefix, id(buffer))
            if fused is not None:  # scores and probabilities: none where the kernel is fused
                w.line(f"memset(&gb[{b}], 0, sizeof gb[{b}]);")
                with w.block(f"if (!attn{fused})"):
                    _buffer(w, comp, b, buffer)
            elif id(buffer) not in outputs or not inplace_args.gpu_buffer(w, comp, b,
                                                                           outputs[id(buffer)]):
                _buffer(w, comp, b, buffer)
        w.line("if ((sm = api->gpu->sm_count(dev)) < 0) goto done;")
        if gathers:
            gather_access.gpu_int_checks(w, comp.fn, comp.hoisted, st.params)
            gather_access.gpu_flag(w)
        launches(w, comp.prefix, gp, st)
        index = {id(b): i for i, b in enumerate(comp.buffers)}
        for o in fn.outputs:  # new arrays get their Python objects while the kernels run
            b = index[id(o)]
            w.line(f"if (!obj[{b}] && !(obj[{b}] = api->gpu->wrap(&gb[{b}]))) goto done;")
        if gathers:
            gather_access.gpu_flag_check(w)
        for o in fn.outputs:
            b = index[id(o)]
            w.line(f"if (user[{b}] && PyObject_SetItem(user[{b}], Py_Ellipsis, obj[{b}]) < 0) "
                   "goto done;")
        _result(w, comp, index)
        w.line("done:")
        with w.block(f"for (int b = 0; b < {nbuf}; b++)"):
            w.line("if (held[b]) api->gpu->release(&gb[b]);")
            w.line("Py_XDECREF(obj[b]);")
            w.line("if (scratch[b]) api->gpu->scratch_free(&gb[b], stream);")
        w.line(f"for (int g = 0; g < {nk}; g++) if (kpart_on[g]) "
               "api->gpu->scratch_free(&kpart[g], stream);")
        with w.block(f"for (int g = 0; g < {nk}; g++)"):
            w.line("if (qw_on[g]) api->gpu->scratch_free(&qw[g], stream);")
            w.line("if (qw_held[g]) api->gpu->release(&qw[g]);")
        gpu_wg_copies.release_scratch(w, gp, comp.prefix)
        w.line(f"for (int i = 0; i < {nparams}; i++) Py_XDECREF(copies[i]);")
        if gathers:
            w.line(gather_access.GPU_RELEASE)
        w.line("if (saved) api->gpu->restore_context(caller_ctx);")
        w.line("return result;")


def _contiguous_input(w: Writer, i: int) -> None:
    """An input read through a regrouping reshape must be C-contiguous: else a copy."""
    with w.block(f"if (!cv_gpu_is_c_contiguous(&ga[{i}]))"):
        w.line("cv_gpu_array cp;")
        w.line(f"if (!(copies[{i}] = api->gpu->contiguous(argv[{i}], &ga[{i}], &cp))) goto done;")
        w.line(f"api->gpu->release(&ga[{i}]);")
        w.line(f"ga[{i}] = cp;")


def _buffer(w: Writer, comp: Compiled, b: int, buffer: Node) -> None:
    """An output: the caller's out= array when it can be written directly, else a new
    C-contiguous array of the inputs' kind. An intermediate: memory of the runtime's pool,
    ordered on the call's stream (a framework array where the device has no pools)."""
    shape, dt = buffer.shape, DT[buffer.dtype]
    outputs = {id(o): k for k, o in enumerate(comp.fn.outputs)}
    w.line(f"int64_t shape{b}[{max(1, len(shape))}] = "
           f"{{{', '.join(dim(d) for d in shape) or '0'}}};")
    if id(buffer) not in outputs:
        with w.block(""):
            w.line(f"const int r = api->gpu->scratch(dev, {dt}, {len(shape)}, shape{b}, stream, "
                   f"&gb[{b}]);")
            w.line("if (r < 0) goto done;")
            w.line(f"scratch[{b}] = r == 0;")
    else:
        k = outputs[id(buffer)]
        with w.block(f"if (outs[{k}])"):
            w.line("cv_gpu_array o;")
            w.line(f"if (cv_gpu_check_out(api, {c_string(comp.name)}, {k}, outs[{k}], {dt}, "
                   f"{len(shape)}, shape{b}, dev, &o) < 0) goto done;")
            w.line("int direct = cv_gpu_is_c_contiguous(&o);")
            for i, p in enumerate(comp.fn.params):
                if not p.is_scalar:
                    w.line(f"if (cv_gpu_overlaps(&ga[{i}], &o)) direct = 0;")
            w.line(f"if (direct) {{ obj[{b}] = outs[{k}]; Py_INCREF(obj[{b}]); gb[{b}] = o; "
                   f"held[{b}] = 1; }}")
            w.line(f"else {{ user[{b}] = outs[{k}]; api->gpu->release(&o); }}")
    with w.block(f"if (!obj[{b}] && !scratch[{b}])"):
        w.line(f"if (api->gpu->empty(&ga[first], {dt}, {len(shape)}, shape{b}, &gb[{b}]) < 0) "
               "goto done;")
        w.line(f"held[{b}] = 1;")


def _result(w: Writer, comp: Compiled, index: dict[int, int]) -> None:
    def output(k: int) -> str:
        b = index[id(comp.fn.outputs[k])]
        return f"Py_NewRef(user[{b}] ? user[{b}] : obj[{b}])"
    write_result(w, comp.fn.returns, output)
