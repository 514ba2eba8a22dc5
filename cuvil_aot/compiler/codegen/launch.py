"""The exec function of one compiled signature: fills each kernel's arguments and runs it.

It runs without the GIL: it reads array data pointers and strides (plain
struct fields) and calls the kernels, the thread pool and the GEMM runtime.
"""

from __future__ import annotations

from collections.abc import Container
from dataclasses import dataclass, field

from cuvil_aot.compiler.codegen import batch_fold, ops_c, scatter_store
from cuvil_aot.compiler.codegen.kernel_emitter import Kernel, Operand
from cuvil_aot.compiler.codegen.writer import Writer
from cuvil_aot.compiler.ir import quantized
from cuvil_aot.compiler.ir.group import Group, Kind
from cuvil_aot.compiler.ir.indexing import IndexMap, contiguous_strides, identity, through
from cuvil_aot.compiler.ir.node import Node
from cuvil_aot.compiler.ir.ops import MOVEMENT, Op
from cuvil_aot.compiler.ir.quantized import Quantized
from cuvil_aot.compiler.ir.types import Dim, Shape


def dim(d: Dim) -> str:
    return d.c_expr("S_{}")


@dataclass
class Storage:
    """Where each array lives at run time: parameter index or buffer index."""

    params: dict[int, int]  # id(PARAM node) -> argument index
    buffers: dict[int, int]  # id(buffer node) -> buffer index
    # a run-time loop's body (run_time_loops.py): carried values by the C pointer that
    # holds this iteration's (contiguous), captured parameters by the value they stand for
    named: dict[int, str] = field(default_factory=dict)
    alias: dict[int, Node] = field(default_factory=dict)

    def local(self, base: Node, view: Shape | None) -> tuple[Node, str | None, list[str]]:
        """``base`` with aliases resolved, and the pointer and strides of a named one."""
        if id(base) in self.named:
            shape = view if view is not None else base.shape
            return base, self.named[id(base)], [dim(s) for s in contiguous_strides(shape)]
        return self.alias.get(id(base), base), None, []

    def data(self, base: Node) -> str:
        base, named, _ = self.local(base, None)
        if named is not None:
            return named
        if id(base) in self.params:
            return self.param_data(self.params[id(base)])
        return self.buffer_data(self.buffers[id(base)])

    def strides(self, base: Node, view: Shape | None) -> list[str]:
        """Element strides of each axis of base (or of its reinterpretation ``view``)."""
        base, named, strides = self.local(base, view)
        if named is not None:
            return strides
        if view is None and id(base) in self.params:
            return self.param_strides(self.params[id(base)], base)
        return [dim(s) for s in contiguous_strides(view if view is not None else base.shape)]

    # Where the call's arrays are: NumPy arguments in[], buffers buf[] (GpuStorage: device
    # arrays)
    def param_data(self, i: int) -> str:
        return f"PyArray_BYTES(in[{i}])"

    def buffer_data(self, b: int) -> str:
        return f"buf[{b}]"

    def param_strides(self, i: int, base: Node) -> list[str]:
        size = f"(npy_intp)sizeof({ops_c.STORAGE[base.dtype]})"
        return [f"(PyArray_STRIDE(in[{i}], {a}) / {size})" for a in range(len(base.shape))]


def _linear(coeffs: list[tuple[Dim, str]]) -> str:
    terms = [f"{dim(c)} * {s}" if c != Dim.of(1) else s for c, s in coeffs if c != Dim.of(0)]
    return " + ".join(terms) or "0"


def operand_setup(st: Storage, op: Operand, nloops: int) -> tuple[str, list[str]]:
    """(pointer expression, stride per loop variable) of a kernel operand."""
    base = op.dest.buffer if op.dest is not None else op.base
    strides = st.strides(base, op.view)
    offset = _linear([(a.const, s) for a, s in zip(op.map, strides)])
    per_var = [_linear([(a.coeffs[v], s) for a, s in zip(op.map, strides)]) if op.map else "0"
               for v in range(nloops)]
    size = f"(int64_t)sizeof({ops_c.STORAGE[base.dtype]})"
    return f"{st.data(base)} + ({offset}) * {size}", per_var


def fill_args(w: Writer, k: Kernel, st: Storage, var: str) -> None:
    w.line(f"{k.name}_args {var};")
    w.line(f"memset(&{var}, 0, sizeof {var});")
    shape = k.group.space.shape or (Dim.of(1),)
    for v, d in enumerate(shape):
        w.line(f"{var}.n[{v}] = {dim(d)};")
    for j, op in enumerate(k.operands):
        ptr, strides = operand_setup(st, op, k.nloops)
        w.line(f"{var}.p[{j}] = {ptr};")
        for v, s in enumerate(strides):
            if s != "0":
                w.line(f"{var}.s[{j}][{v}] = {s};")
    for field_name in sorted(k.scalars):
        w.line(f"{var}.{field_name} = c->{field_name};")
    for sym in sorted(k.symbols):
        w.line(f"{var}.sym_{sym} = S_{sym};")
    for name, (j, axis) in sorted(k.gathers.items()):
        op = k.operands[j]
        w.line(f"{var}.{name} = {st.strides(op.base, op.view)[axis]};")
    if k.gathers:
        w.line(f"{var}.gerr = gerr;")


def _product(dims: Shape) -> str:
    return " * ".join(dim(d) for d in dims) or "1"


def launch(w: Writer, k: Kernel, st: Storage) -> None:
    """Code that runs kernel ``k`` (a block of the exec function)."""
    group = k.group
    with w.block(""):
        fill_args(w, k, st, "a")
        if group.kind is Kind.GEMM:
            _launch_gemm(w, k, st)
        elif group.kind in (Kind.ROW, Kind.SCAN):  # per row of the kept axes
            kept = group.space.kept_shape
            row = tuple(group.space.shape[a] for a in group.space.reduce_axes)
            w.line(f"const int64_t row_len = {_product(row)};")
            w.line("const int64_t grain = row_len > 0 ? (32768 + row_len - 1) / row_len : 1024;")
            w.line(f"cv_launch(api, K->{k.name}, &a, {_product(kept)}, grain);")
        elif k.merge:
            shape = group.space.shape
            w.line(f"a.merged = {merge_condition(k)};")
            w.line(f"a.inner = a.merged ? {_product(shape[-2:])} : {dim(shape[-1])};")
            w.line("const int64_t inner = a.inner;")
            w.line(f"const int64_t rows = a.merged ? {_product(shape[:-2])} : "
                   f"{_product(shape[:-1])};")
            _split_and_launch(w, k)
        else:
            shape = group.space.shape or (Dim.of(1),)
            w.line(f"const int64_t inner = {dim(shape[-1])};")
            w.line(f"const int64_t rows = {_product(shape[:-1])};")
            _split_and_launch(w, k)


def merge_condition(k: Kernel) -> str:
    """C: every operand that moves with the two innermost loops steps over the inner one
    exactly once per step of the outer one (c.mergeable), so one loop covers both."""
    outer, inner = k.nloops - 2, k.nloops - 1
    n = dim(k.group.space.shape[inner])
    checks = [f"a.s[{j}][{outer}] == {n} * a.s[{j}][{inner}]"
              for j, op in enumerate(k.operands) if inner in op.support()]
    return " && ".join(checks) or "1"


def _split_and_launch(w: Writer, k: Kernel) -> None:
    """Tasks over rows x inner (cv_split), launched."""
    w.line("int64_t ntasks, grain;")
    w.line("cv_split(api, rows, inner, &a.chunk, &a.nchunk, &ntasks, &grain);")
    if scatter_store.writes(k.group):  # one thread, in C order: the last write wins
        w.line("grain = ntasks;")
    w.line(f"a.stream = rows * inner * {_root_bytes(k)} >= CV_STREAM_MIN_BYTES;")
    w.line(f"if (rows * inner > 0) cv_launch(api, K->{k.name}, &a, ntasks, grain);")


def _root_bytes(k: Kernel) -> int:
    """Bytes the kernel stores per element of its loop space."""
    return sum(ops_c.ITEMSIZE[d.buffer.dtype] for d in k.group.dests)


# The runtime's GEMM (runtime.h) by the dtype of the operands: float32 and float64
# accumulate in their own type, bfloat16 operands (canonicalize.py) in float32
GEMMS = {"float32": "f32", "float64": "f64", "bfloat16": "bf16"}
OPERAND_CTYPE = {"f32": "float", "f64": "double", "bf16": "uint16_t"}


def int8_weight(group: Group, buffers: Container[int]) -> Quantized | None:
    """The int8 weight a GEMM group's one term reads through its scales, unless it was
    stored as float32 anyway (a buffer: ir/quantized.py)."""
    term = group.terms[0]
    for side in (0, 1):
        found = quantized.match(term, side)
        stored = (found.weight, *found.weight.srcs) if found is not None else ()
        if found is not None and not any(id(n) in buffers for n in stored):
            return found
    return None


def _launch_gemm(w: Writer, k: Kernel, st: Storage) -> None:
    group = k.group
    quant = int8_weight(group, st.buffers)
    if quant is not None:
        _launch_gemm_q8(w, k, st, quant)
        return
    dtype = group.terms[0].srcs[0].dtype
    sfx = GEMMS.get(dtype)
    if sfx is None:
        raise ops_c.Unsupported(f"matmul on {dtype} (supported: float16, bfloat16, float32, "
                                "float64)")
    out = group.space.shape
    w.line(f"cv_gemm_term_{sfx} terms[{len(group.terms)}];")
    for t, term in enumerate(group.terms):
        for side, operand in zip("ab", term.srcs):
            base, view, m = matmul_operand(operand, st)
            ptr, strides = operand_setup(st, Operand(base, view, m), len(operand.shape))
            rank = len(operand.shape)
            rs, cs = strides[rank - 2], strides[rank - 1]
            bs = strides[0] if rank == 3 and operand.shape[0] != Dim.of(1) else "0"
            w.line(f"terms[{t}].{side} = (const {OPERAND_CTYPE[sfx]} *)({ptr});")
            w.line(f"terms[{t}].{side}_rs = {rs}; terms[{t}].{side}_cs = {cs}; "
                   f"terms[{t}].{side}_bs = {bs};")
        w.line(f"terms[{t}].k = {dim(term.srcs[0].shape[-1])};")
    batch = dim(out[0]) if len(out) == 3 else "1"
    w.line(f"cv_gemm_{sfx} g = {{{batch}, {dim(out[-2])}, {dim(out[-1])}, {len(group.terms)}, "
           f"terms, K->{k.name}, &a}};")
    if batch_fold.foldable(k):
        batch_fold.emit_c(w, k)
    w.line(f"if (g.nbatch * g.m * g.n > 0 && api->gemm_{sfx}(&g) != 0) return -1;")


def _launch_gemm_q8(w: Writer, k: Kernel, st: Storage, quant: Quantized) -> None:
    """api->gemm_q8 on the term's float32 operand and the int8 weight with its scales."""
    term, out = k.group.terms[0], k.group.space.shape
    operand = term.srcs[1 if quant.qa else 0]
    base, view, m = matmul_operand(operand, st)
    ptr, strides = operand_setup(st, Operand(base, view, m), len(operand.shape))
    rank = len(operand.shape)
    bs = strides[0] if rank == 3 and operand.shape[0] != Dim.of(1) else "0"
    q_strides, s_strides = st.strides(quant.q, None), st.strides(quant.scale, None)

    def scale_stride(axis: int | None) -> str:
        return "0" if axis is None else s_strides[axis]

    batch = dim(out[0]) if len(out) == 3 else "1"
    group = dim(quant.group) if quant.group is not None else "0"
    w.line(f"cv_gemm_q8 g = {{{batch}, {dim(out[-2])}, {dim(out[-1])}, "
           f"{dim(term.srcs[0].shape[-1])}, {group}, {int(quant.qa)}, (const float *)({ptr}), "
           f"{strides[rank - 2]}, {strides[rank - 1]}, {bs}, "
           f"(const int8_t *)({st.data(quant.q)}), {q_strides[0]}, {q_strides[1]}, 0, "
           f"(const float *)({st.data(quant.scale)}), {scale_stride(quant.out_axis)}, "
           f"{scale_stride(quant.group_axis)}, 0, K->{k.name}, &a}};")
    if not quant.qa and batch_fold.foldable(k):
        batch_fold.emit_c_q8(w, k)
    w.line("if (api->gemm_q8(&g) != 0) return -1;")


def matmul_operand(node: Node, st: Storage) -> tuple[Node, Shape | None, IndexMap]:
    """The parameter or buffer under a matmul operand's views, and its index map."""
    nloops = len(node.shape)
    m: IndexMap = identity(nloops)
    while node.op in MOVEMENT and id(node) not in st.buffers:
        sub = through(node, m, nloops)
        if sub is None:
            return node.srcs[0], node.shape, m
        node, m = node.srcs[0], sub
    if node.op is Op.CONST:
        raise ops_c.Unsupported("matmul with a constant operand")
    return node, None, m
