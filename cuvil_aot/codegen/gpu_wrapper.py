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
(launch.fill_args, with device storage). No Python runs between the call and
the launches, except the framework allocator where the type offers no C one.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from cuvil_aot.codegen import cuda, cuda_one, ops_c
from cuvil_aot.codegen.c import Operand
from cuvil_aot.codegen.cuda import CudaKernel
from cuvil_aot.codegen.launch import Storage, dim, fill_args, matmul_operand, operand_setup
from cuvil_aot.codegen.pymodule import (
    Compiled,
    _c_string,
    _empty_reduction_checks,
    _fail,
    _match_param,
    _out_argument,
    match_dims,
    no_match_error,
)
from cuvil_aot.codegen.writer import Writer
from cuvil_aot.frontend.signature import render_type
from cuvil_aot.ir.group import Kind
from cuvil_aot.ir.node import Node
from cuvil_aot.ir.types import Dim, Shape

DT = {"bool": "CV_DT_BOOL", "int32": "CV_DT_INT32", "int64": "CV_DT_INT64",
      "float16": "CV_DT_FLOAT16", "float32": "CV_DT_FLOAT32", "float64": "CV_DT_FLOAT64"}


@dataclass(frozen=True)
class GpuTargets:
    """What the embedded fatbin holds: SASS for these compute capabilities (x10) and PTX
    for ``ptx`` (0: none). The runtime compares them with the device's."""

    sass: tuple[int, ...]
    ptx: int = 0


@dataclass
class GpuPlan:
    """Every GPU kernel of a module, and its entry points numbered as the module's table."""

    kernels: dict[str, list[CudaKernel]] = field(default_factory=dict)  # by comp.prefix
    names: list[str] = field(default_factory=list)
    first: dict[str, int] = field(default_factory=dict)  # kernel name -> its first entry
    one: dict[str, int] = field(default_factory=dict)  # comp.prefix -> its one-kernel entry

    @property
    def source(self) -> str:
        ones = [cuda_one.one_struct(p, ks) + cuda_one.one_kernel(p, ks)
                for p, ks in self.kernels.items() if p in self.one]
        return cuda.source([k for ks in self.kernels.values() for k in ks], ones)


def lower(comps: list[Compiled]) -> GpuPlan:
    gp = GpuPlan()
    for comp in comps:
        buffers = {id(b) for b in comp.buffers}
        kernels = [cuda.emit_kernel(f"{comp.prefix}_g{g}", group, buffers)
                   for g, group in enumerate(comp.fn.groups)]
        gp.kernels[comp.prefix] = kernels
        for k in kernels:
            gp.first[k.name] = len(gp.names)
            gp.names.extend(k.entries)
        if len(kernels) > 1:
            gp.one[comp.prefix] = len(gp.names)
            gp.names.append(f"{comp.prefix}_one")
    return gp


class GpuStorage(Storage):
    """Device arrays: parameters in ga[], buffers (outputs, intermediates) in gb[]."""

    def data(self, base: Node) -> str:
        if id(base) in self.params:
            return f"ga[{self.params[id(base)]}].data"
        return f"gb[{self.buffers[id(base)]}].data"

    def strides(self, base: Node, view: Shape | None) -> list[str]:
        if view is None and id(base) in self.params:
            i = self.params[id(base)]
            return [f"ga[{i}].strides[{a}]" for a in range(len(base.shape))]
        return super().strides(base, view)


def module_table(w: Writer, gp: GpuPlan, targets: GpuTargets | None) -> None:
    """The module's kernel table; its image is the fatbin linked in by toolchain/nvcc.py."""
    w.line('#include "cuvil_aot/gpu_wrap.h"')
    if targets is None:
        w.line("static cv_cuda_module cv_gpu_module;  /* built without CUDA kernels */")
        return
    for prefix, kernels in gp.kernels.items():
        for k in kernels:
            w.line(k.struct)  # the layout the kernels read (the same text is in kernels.cu)
        w.line(cuda_one.one_struct(prefix, kernels))
    w.line("extern const unsigned char cv_fatbin[];")
    names = ", ".join(_c_string(n) for n in gp.names) or "0"
    w.line(f"static const char *const cv_gpu_names[] = {{{names}}};")
    w.line(f"static const int cv_gpu_sass[] = {{{', '.join(map(str, targets.sass)) or '0'}}};")
    w.line(f"static cv_cuda_module cv_gpu_module = {{cv_fatbin, cv_gpu_names, {len(gp.names)}, "
           f"cv_gpu_sass, {len(targets.sass)}, {targets.ptx}, {{0}}}};")


def branch(w: Writer, index: int, name: str, nparams: int) -> None:
    """The CPU wrapper's branch to the GPU path (argv, out and stream are parsed)."""
    with w.block(f"if (cv_gpu_candidate(argv, {nparams}))"):
        w.line(f"PyObject *g = py_f{index}_gpu(argv, out, stream);")
        w.line("if (g != Py_NotImplemented) return g;")
        w.line("Py_DECREF(g);")
    with w.block("if (stream && stream != Py_None)"):
        msg = _c_string(f"{name}(): stream= is for calls with device arrays")
        w.line(f"PyErr_SetString(PyExc_TypeError, {msg});")
        w.line("return NULL;")


def function(w: Writer, index: int, name: str, comps: list[Compiled], gp: GpuPlan,
             enabled: bool) -> None:
    if enabled:
        for comp in comps:
            _match(w, comp)
            _run(w, comp, gp)
    params = comps[0].sig.params
    n = max(1, len(params))
    w.line(f"static const char *const f{index}_gnames[] = "
           f"{{{', '.join(_c_string(p.name) for p in params) or '0'}}};")
    with w.block(f"static PyObject *py_f{index}_gpu(PyObject **argv, PyObject *out, "
                 "PyObject *stream)"):
        w.line(f"cv_gpu_array ga[{n}]; int dev[{n}] = {{0}}; int first = -1;")
        w.line("PyObject *result = NULL; char got[200];")
        w.line("(void)out; (void)stream; (void)got;")
        _view_arguments(w, name, index, len(params))
        if not enabled:
            w.line(f"result = cv_gpu_unavailable({_c_string(name)});")
        else:
            _dispatch(w, name, comps)
        w.line("done:")
        w.line(f"for (int i = 0; i < {len(params)}; i++) if (dev[i]) api->gpu->release(&ga[i]);")
        w.line("return result;")


def _view_arguments(w: Writer, name: str, index: int, nparams: int) -> None:
    with w.block(f"for (int i = 0; i < {nparams}; i++)"):
        w.line("PyObject *o = argv[i];")
        w.line("if (PyFloat_Check(o) || PyLong_Check(o) || PyArray_IsScalar(o, Generic)) "
               "continue;")
        w.line("int r = api->gpu->array(o, &ga[i]);")
        w.line("if (r < 0) goto done;")
        with w.block("if (!r)"):
            w.line("if (first < 0) { result = Py_NotImplemented; Py_INCREF(result); goto done; }")
            w.line("cv_gpu_describe(o, &ga[i], 0, got, sizeof got);")
            w.line(f"PyErr_Format(PyExc_TypeError, \"%s(): argument '%s' must be a device array "
                   f"like '%s', got %s\", {_c_string(name)}, f{index}_gnames[i], "
                   f"f{index}_gnames[first], got);")
            w.line("goto done;")
        w.line("dev[i] = 1;")
        w.line("if (first < 0) first = i;")
        with w.block("else if (ga[i].device != ga[first].device)"):
            w.line(f"PyErr_Format(PyExc_ValueError, \"%s(): arguments on two devices: '%s' on "
                   f"cuda:%d, '%s' on cuda:%d\", {_c_string(name)}, f{index}_gnames[first], "
                   f"ga[first].device, f{index}_gnames[i], ga[i].device);")
            w.line("goto done;")
    w.line("if (first < 0) { result = Py_NotImplemented; Py_INCREF(result); goto done; }")


def _dispatch(w: Writer, name: str, comps: list[Compiled]) -> None:
    w.line(f"char why[{len(comps)}][320]; int shape_err[{len(comps)}] = {{0}};")
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
                _match_param(w, i, p.name, p, comp)
                continue
            want = render_type(p)
            with w.block(f"if (!dev[{i}] || ga[{i}].dtype != {DT[p.type.dtype]})"):
                w.line(f"cv_gpu_describe(argv[{i}], &ga[{i}], dev[{i}], got, sizeof got);")
                _fail(w, False, f"argument '{p.name}': expected a {p.type.dtype} array {want}, "
                      "got %s", "got")
            with w.block(f"if (ga[{i}].ndim != {p.type.ndim})"):
                w.line(f"cv_gpu_describe(argv[{i}], &ga[{i}], 1, got, sizeof got);")
                _fail(w, True, f"argument '{p.name}': expected {p.type.ndim} dimensions {want}, "
                      "got %s", "got")
        match_dims(w, comp, lambda i, axis: f"ga[{i}].shape[{axis}]")
        w.line("return 1;")


# Running -------------------------------------------------------------------------------

def _run(w: Writer, comp: Compiled, gp: GpuPlan) -> None:
    fn = comp.fn
    nparams, nbuf = max(1, len(fn.params)), max(1, len(comp.buffers))
    st = GpuStorage({id(p): i for i, p in enumerate(fn.param_nodes)},
                    {id(b): i for i, b in enumerate(comp.buffers)})
    with w.block(f"static PyObject *{comp.prefix}_grun(PyObject **argv, cv_gpu_array *ga, "
                 f"int first, PyObject *out, PyObject *stream_kw, const {comp.prefix}_call *c)"):
        w.line(f"PyObject *result = NULL, *obj[{nbuf}] = {{0}}, *user[{nbuf}] = {{0}}, "
               f"*copies[{nparams}] = {{0}};")
        w.line(f"cv_gpu_array gb[{nbuf}]; int scratch[{nbuf}] = {{0}}, held[{nbuf}] = {{0}};")
        w.line("uintptr_t stream = 0; const int dev = ga[first].device; int sm = 0;")
        w.line("void *caller_ctx = NULL; int saved = 0;  /* the caller's CUDA context */")
        nk = len(gp.kernels[comp.prefix])
        w.line(f"cv_gpu_array kpart[{nk}]; int kpart_on[{nk}] = {{0}};  /* split-K sums */")
        w.line("(void)kpart;")
        w.line("(void)argv; (void)stream; (void)sm; (void)gb; (void)copies; (void)scratch;")
        for s, sym in enumerate(comp.symbols):
            w.line(f"const int64_t S_{sym} = c->sym[{s}]; (void)S_{sym};")
        _empty_reduction_checks(w, comp)
        w.line("if (api->gpu->save_context(&caller_ctx) < 0) goto done;")
        w.line("saved = 1;")
        w.line("if (api->gpu->stream(&ga[first], stream_kw, &stream) < 0) goto done;")
        for i, p in enumerate(fn.params):
            if not p.is_scalar:
                w.line(f"if (api->gpu->order_after(&ga[{i}], stream) < 0) goto done;")
        for i in sorted(comp.contiguous):
            _contiguous_input(w, i)
        _out_argument(w, comp)
        for b, buffer in enumerate(comp.buffers):
            _buffer(w, comp, b, buffer)
        w.line("if ((sm = api->gpu->sm_count(dev)) < 0) goto done;")
        _launches(w, comp.prefix, gp, st)
        index = {id(b): i for i, b in enumerate(comp.buffers)}
        for o in fn.outputs:  # new arrays get their Python objects while the kernels run
            b = index[id(o)]
            w.line(f"if (!obj[{b}] && !(obj[{b}] = api->gpu->wrap(&gb[{b}]))) goto done;")
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
        w.line(f"for (int i = 0; i < {nparams}; i++) Py_XDECREF(copies[i]);")
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
            w.line(f"if (cv_gpu_check_out(api, {_c_string(comp.name)}, {k}, outs[{k}], {dt}, "
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
    items = [f"(user[{index[id(o)]}] ? user[{index[id(o)]}] : obj[{index[id(o)]}])"
             for o in comp.fn.outputs]
    if not comp.fn.returns_tuple:
        w.line(f"result = {items[0]}; Py_INCREF(result);")
        return
    w.line(f"result = PyTuple_New({len(items)});")
    w.line("if (!result) goto done;")
    for i, item in enumerate(items):
        w.line(f"{{ PyObject *o = {item}; Py_INCREF(o); PyTuple_SET_ITEM(result, {i}, o); }}")


# Launches ------------------------------------------------------------------------------

# A call on little work (every GEMM a GEMV, every other kernel at most ONE_WORK
# elements) runs as the call's one cooperative kernel.
ONE_WORK = 1 << 20


def _launches(w: Writer, prefix: str, gp: GpuPlan, st: GpuStorage) -> None:
    """Plans each kernel's launch (its arguments into one.a{g}, its shape into L[g]),
    then launches the call's one-kernel where the work is small and the device runs it,
    else each kernel in turn."""
    kernels = gp.kernels[prefix]
    w.line(f"{prefix}_one_args one; cv_gpu_plan L[{len(kernels)}];")
    w.line("memset(&one, 0, sizeof one); memset(L, 0, sizeof L);")
    w.line(f"int small = {int(prefix in gp.one)}; (void)small;")
    for g, k in enumerate(kernels):
        with w.block(""):
            fill_args(w, k, st, "a")
            _launch(w, k, st, gp.first[k.name], g)
            w.line(f"one.a{g} = a;")
    if prefix in gp.one:
        w.line("int64_t one_grid = sm;")
        paired = []
        for g in range(len(kernels) - 1):
            offsets = cuda_one.tile_consumer(kernels, g)
            if offsets is not None:
                _tile_consumer_runs(w, g, offsets, alone=len(kernels) == 2)
                paired.append(g)
        # a cooperative launch only while a grid barrier is left
        left = " - ".join([str(len(kernels) - 1)] + [f"(one.runs[{g}] > 0)" for g in paired])
        w.line(f"static int one_off;  /* the device cannot run {prefix}_one */")
        with w.block("if (small && !one_off)"):
            w.line(f"const int r = api->gpu->launch_one(&cv_gpu_module, dev, {gp.one[prefix]}, "
                   f"(uint32_t)one_grid, {cuda_one.ONE_BLOCK}, stream, &one, {left} > 0);")
            w.line("if (r < 0) goto done;")
            w.line("one_off = r == 1;")
            w.line("small = r == 0;")
        w.line("else small = 0;  /* launched one by one below */")
    for g, k in enumerate(kernels):
        w.line(f"if (!small && L[{g}].run && api->gpu->launch(&cv_gpu_module, dev, L[{g}].kid, "
               f"L[{g}].grid, L[{g}].gy, L[{g}].block, 0, stream, &one.a{g}) < 0) goto done;")
        if k.group.kind is Kind.GEMM:
            ksum = gp.first[k.name] + cuda.ENTRIES[Kind.GEMM].index("ksum")
            w.line(f"if (!small && L[{g}].sum_grid && api->gpu->launch(&cv_gpu_module, dev, "
                   f"{ksum}, L[{g}].sum_grid, 1, {cuda.BLOCK}, 0, stream, &one.a{g}) < 0) "
                   "goto done;")


def _tile_consumer_runs(w: Writer, g: int, offsets: list[Dim], alone: bool) -> None:
    """one.runs[g]: kernel g + 1 runs inside kernel g's GEMV tiles (cuda_one.one_kernel) where
    a tile can hold every column its elements read: the GEMM's n is runs x the consumer's
    n', each offset a multiple of n' below n, and a tile's columns split into whole runs
    (of whole float4s where the GEMV reads float4). Runs of 8 columns where the tile stays
    8, 16 or 32 wide (1, 2 or 4 runs): each row of B then loads whole 32-byte sectors
    (runs of 4 read half sectors: a hand-written LSTM step took 5.2 us so against 3.7,
    H200, bench/gpu/lstm_probe.cu). Where the pair is the call (``alone``), a block per
    tile, no idle ones (8.5 us back to back against 9.2 with a block per SM)."""
    a, c = f"one.a{g}", f"one.a{g + 1}"
    with w.block(""):
        w.line(f"const int64_t n = {a}.n[1], n1 = {c}.n[1];")
        w.line("const int64_t runs = n1 > 0 && n % n1 == 0 ? n / n1 : 0;")
        # a power of two of columns per tile: its lanes split a warp evenly
        w.line(f"const int64_t cols = runs == 1 || runs == 2 || runs == 4 ? runs * 8 : {a}.cols;")
        conds = [f"one.v[{g}] > 0", f"{a}.cols > 0", "runs > 0", "cols % runs == 0",
                 f"{c}.n[0] == {a}.n[0]", f"(!{a}.vec || ((cols / runs) % 4 == 0 && n1 % 4 == 0))"]
        exprs = dict.fromkeys(dim(d) for d in offsets if d != Dim.of(0))
        conds += [f"({e}) >= 0 && ({e}) % n1 == 0 && ({e}) < n" for e in exprs]
        with w.block(f"if ({' && '.join(conds)})"):
            w.line(f"one.runs[{g}] = (int)runs; {a}.cols = cols;")
            if alone:
                w.line(f"const int64_t run = cols / runs, mr = one.v[{g}], "
                       f"tiles = (n1 + run - 1) / run * (({a}.n[0] + mr - 1) / mr);")
                w.line("if (tiles < one_grid) one_grid = tiles;")


def _unit_rows(k: CudaKernel) -> str:
    """C condition for ``_bcu32``: every operand that runs along the row does so with
    stride 1 and in aligned runs of ROW_RUN elements (aligned pointer, the row's length and
    the operand's other strides multiples of the run)."""
    axis = cuda.unit_axis(k)
    if axis is None:
        return "0"
    run = cuda.ROW_RUN
    tests = [f"len % {run} == 0"]
    for j, op in enumerate(k.operands):
        if axis in op.support():
            tests += [f"a.s[{j}][{axis}] == 1",
                      f"(uintptr_t)a.p[{j}] % ({run} * sizeof({ops_c.STORAGE[op.dtype]})) == 0"]
            tests += [f"a.s[{j}][{v}] % {run} == 0" for v in op.support() if v != axis]
    return " && ".join(tests)


def _launch(w: Writer, k: CudaKernel, st: GpuStorage, first: int, g: int) -> None:
    """Kernel g's launch shape into L[g], its one-kernel variant into one.v[g], and
    whether its work is small enough for the one-kernel into `small`."""
    launch = f"L[{g}] = (cv_gpu_plan){{kid, grid, gy, block, 1, 0}};"
    nloops, nops = k.nloops, len(k.operands)
    strides = "&a.s[0][0]"
    if k.group.kind is Kind.ELEMENTWISE:
        w.line(f"const int64_t total = {_product([f'a.n[{v}]' for v in range(nloops)])};")
        with w.block("if (total > 0)"):
            _flat_condition(w, k)
            w.line(f"const int fits = cv_gpu_fits32(a.n, {nloops}, {strides}, {nops}, total);")
            w.line(f"const int kid = {first} + (flat ? 2 : fits ? 0 : 1);")
            w.line(f"const uint32_t grid = flat ? cv_gpu_grid_all((total + {cuda.VEC - 1}) / "
                   f"{cuda.VEC}, {cuda.BLOCK}) : cv_gpu_grid(total, {cuda.BLOCK}, sm, 8), gy = 1, "
                   f"block = {cuda.BLOCK};")
            w.line(launch)
            w.line(f"one.v[{g}] = fits; small = small && total <= {ONE_WORK};")
    elif k.group.kind is Kind.ROW:
        space = k.group.space
        w.line(f"const int64_t rows = {_product([f'a.n[{v}]' for v in space.kept_axes])};")
        w.line(f"const int64_t len = {_product([f'a.n[{v}]' for v in space.reduce_axes])};")
        with w.block("if (rows > 0)"):
            # a block per row for long rows, and for rows too few to keep the SMs busy
            w.line("const int few = len >= 64 && rows < 16 * (int64_t)sm, big = len > 1024 || few;")
            w.line(f"const int fits = cv_gpu_fits32(a.n, {nloops}, {strides}, {nops}, rows * len);")
            w.line(f"const int cached = big && fits && len <= {cuda.ROW_CACHE * cuda.ROW_BLOCK};")
            w.line(f"const int unit = {_unit_rows(k)};")
            # 8 lanes per short row where rows fill every SM that way (a ResNet head's
            # pooling at batch 256; at batch 1 its 512 rows took 1.68 us so, 1.51 a warp
            # each); every lane of a warp then has a row or none
            w.line(f"const int quarter = !big && fits && len <= {cuda.SHORT_ROW} && "
                   f"rows >= {cuda.BLOCK // cuda.QUARTER} * (int64_t)sm && "
                   f"rows % {32 // cuda.QUARTER} == 0;")
            w.line(f"const int kid = {first} + (quarter ? 6 : "
                   "cached ? 4 + unit : (big ? 2 : 0) + (fits ? 0 : 1));")
            w.line(f"const uint32_t block = big ? {cuda.ROW_BLOCK} : {cuda.BLOCK}, gy = 1;")
            w.line(f"const uint32_t grid = cached ? cv_gpu_grid_all(rows, 1) : big ? "
                   f"cv_gpu_grid(rows, 1, sm, {2048 // cuda.ROW_BLOCK}) : "
                   f"cv_gpu_grid(rows, {cuda.BLOCK} / (quarter ? {cuda.QUARTER} : 32), sm, 8);")
            w.line(launch)
            # the one-kernel keeps a warp per short row: a quarter warp there made the
            # ResNet head at batch 1 slower (10.58 us against 10.19-10.38, H200)
            w.line(f"one.v[{g}] = big && fits && len <= "
                   f"{cuda_one.ONE_ROW_CACHE * cuda_one.ONE_BLOCK} ? 4 : (fits ? 0 : 2) + big;")
            w.line(f"small = small && rows * len <= {ONE_WORK};")
    else:
        _gemm_terms(w, k, st)
        batch = "a.n[0]" if nloops == 3 else "1"
        w.line(f"const int64_t nb = {batch}, m = a.n[{nloops - 2}], n = a.n[{nloops - 1}];")
        with w.block("if (nb * m * n > 0)"):
            w.line("const uint32_t gy = (uint32_t)(nb < 65535 ? nb : 65535);")
            w.line("int kid; uint32_t grid, block;")
            with w.block("if (m <= 32)"):  # GEMV: each weight read once per 4 rows
                w.line("const int64_t mr = m == 1 ? 1 : 4, groups = (m + mr - 1) / mr;")
                w.line(f"const int vec = {_vec_condition(k)};")
                # float4 tiles: 16 columns, 32 where 16 would need a second block per SM
                # (bench/gpu/gemv_probe.cu); scalar tiles: narrower while twice as many
                # still fit one per SM (a call's one-kernel has a block per SM, and a
                # second pass over tiles costs a memory round trip more)
                w.line("int cols = vec ? ((n + 15) / 16 * groups * nb > sm ? 32 : 16) : 32;")
                w.line("while (!vec && cols > 8 && (n + cols / 2 - 1) / (cols / 2) * groups * nb "
                       "<= sm) cols /= 2;")
                w.line(f"a.cols = cols; a.vec = vec; kid = {first} + (mr == 1 ? 2 : 3);")
                w.line(f"grid = (uint32_t)((n + cols - 1) / cols * groups); "
                       f"block = {cuda.GEMV_BLOCK};")
                w.line(f"one.v[{g}] = (int)mr;")
            with w.block("else"):  # 64x64 tiles where 128x128 ones leave SMs idle
                w.line("const int64_t tiles = ((m + 127) / 128) * ((n + 127) / 128);")
                w.line("const int few_tiles = tiles * nb < sm;")
                w.line(f"kid = {first} + few_tiles; block = {cuda.BLOCK};")
                w.line("int tc = 0;")
                if k.acc_type == "float":
                    _tc_choice(w, k, first)
                w.line("const int64_t ftiles = ((m + 63) / 64) * ((n + (tc ? 127 : 63)) / "
                       "(tc ? 128 : 64));")
                _split(w, k, g)
                w.line("grid = (uint32_t)(few_tiles ? ftiles * a.split : tiles);")
            w.line(launch)
            w.line(f"if (a.split > 1) L[{g}].sum_grid = cv_gpu_grid(nb * m * n, {cuda.BLOCK}, "
                   "sm, 8);")
            w.line("small = small && m <= 32;")


def _split(w: Writer, k: CudaKernel, g: int) -> None:
    """Split-K where the tiles are too few for the SMs (cv_gpu_split): partial sums in
    scratch memory of the call, added up by the kernel's _ksum launch."""
    depth = " + ".join(f"a.t[{t}].k" for t in range(len(k.group.terms)))
    w.line(f"a.split = few_tiles ? cv_gpu_split(ftiles * nb, {depth}, nb * m * n, sm) : 1;")
    with w.block("if (a.split > 1)"):
        w.line("const int64_t count = a.split * nb * m * n;")
        dt = "CV_DT_FLOAT32" if k.acc_type == "float" else "CV_DT_FLOAT64"
        w.line(f"const int r = api->gpu->scratch(dev, {dt}, 1, &count, stream, &kpart[{g}]);")
        w.line("if (r < 0) goto done;")
        w.line(f"kpart_on[{g}] = r == 0;")
        w.line(f"if (r == 0) a.part = kpart[{g}].data; else a.split = 1;  /* no pools */")


def _product(items: list[str]) -> str:
    return " * ".join(items) or "1"


def _aligned(k: CudaKernel, side: str, inner: str, outer: str) -> str:
    """Every term's operand ``side`` has unit stride along ``inner``, and its rows along
    ``outer`` and its batches start on 16 bytes (float32): what float4 loads need."""
    return " && ".join(c for t in range(len(k.group.terms)) for c in (
        f"(uintptr_t)a.t[{t}].{side} % 16 == 0", f"a.t[{t}].{side}_{inner} == 1",
        f"a.t[{t}].{side}_{outer} % 4 == 0", f"a.t[{t}].{side}_bs % 4 == 0"))


def _vec_condition(k: CudaKernel) -> str:
    """float4 loads of B in the GEMV: float32, one row per tile (mr == 1), whole float4s
    per row of B (n % 4 == 0), offsets within a batch in 32 bits."""
    if k.acc_type != "float":
        return "0"
    fits = " && ".join(f"cv_gpu_term_fits32(&a.t[{t}], m, n)" for t in range(len(k.group.terms)))
    return f"mr == 1 && n % 4 == 0 && {_aligned(k, 'b', 'cs', 'rs')} && {fits}"


def _tc_choice(w: Writer, k: CudaKernel, first: int) -> None:
    """The tensor-core main loop where the operands suit cp.async: A with k contiguous, B
    with n (_tc) or k (_tct) contiguous, rows and batches 16-byte aligned. Tiles of 128 x
    128, or of 64 x 128 where those would leave SMs idle (_tc64, _tct64)."""
    a_ok = _aligned(k, "a", "cs", "rs")
    bn = _aligned(k, "b", "cs", "rs")
    bk = _aligned(k, "b", "rs", "cs")
    w.line(f"tc = !({a_ok}) ? 0 : ({bn}) ? 1 : ({bk}) ? 2 : 0;")
    tc_first = first + len(cuda.ENTRIES[Kind.GEMM])  # entries GEMM_TC follow ENTRIES
    w.line(f"if (tc) kid = {tc_first} + (tc - 1) + (few_tiles ? 2 : 0);")


def _flat_condition(w: Writer, k: CudaKernel) -> None:
    """Every operand steps through memory exactly as the flat index, and is aligned."""
    nloops = k.nloops
    w.line(f"const int64_t c{nloops - 1} = 1;")
    for v in range(nloops - 2, -1, -1):
        w.line(f"const int64_t c{v} = c{v + 1} * a.n[{v + 1}];")
    conds = []
    for j, op in enumerate(k.operands):
        storage = ops_c.STORAGE[op.dtype]
        conds.append(f"(uintptr_t)a.p[{j}] % ({cuda.VEC} * sizeof({storage})) == 0")
        conds += [f"(a.n[{v}] == 1 || a.s[{j}][{v}] == c{v})" for v in range(nloops)]
    w.line(f"const int flat = {' && '.join(conds) or '1'};")


def _gemm_terms(w: Writer, k: CudaKernel, st: GpuStorage) -> None:
    for t, term in enumerate(k.group.terms):
        for side, operand in zip("ab", term.srcs):
            base, view, m = matmul_operand(operand, st)
            rank = len(operand.shape)
            ptr, strides = operand_setup(st, Operand(base, view, m), rank)
            bs = strides[0] if rank == 3 and operand.shape[0] != Dim.of(1) else "0"
            w.line(f"a.t[{t}].{side} = {ptr};")
            w.line(f"a.t[{t}].{side}_rs = {strides[rank - 2]}; a.t[{t}].{side}_cs = "
                   f"{strides[rank - 1]}; a.t[{t}].{side}_bs = {bs};")
        w.line(f"a.t[{t}].k = {dim(term.srcs[0].shape[-1])};")
