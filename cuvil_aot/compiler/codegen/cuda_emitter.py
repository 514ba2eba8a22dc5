"""The CUDA kernel emitter: the shared expression emitter (kernel_emitter.py) where CUDA
differs. Its op table is ops_cuda's; a body may index every operand by the flat index
``t`` (``_flat`` kernels' tails) or take its values from one lane of the vectors of a
``_flat`` step; and in a cached row kernel (cuda_rows.py) every value of a row's element
stays in registers for the later passes, loads and stores are predicated selects, and
operands that run along the row move in vectors of V.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from cuvil_aot.compiler.codegen import gather_access, ops_c, ops_cuda
from cuvil_aot.compiler.codegen.cuda_geometry import ENTRIES
from cuvil_aot.compiler.codegen.kernel_emitter import Body, Kernel, KernelEmitter, dest_map
from cuvil_aot.compiler.codegen.writer import Writer
from cuvil_aot.compiler.ir.group import Dest, Group, Kind
from cuvil_aot.compiler.ir.indexing import IndexMap
from cuvil_aot.compiler.ir.node import Node
from cuvil_aot.compiler.ir.ops import Op
from cuvil_aot.compiler.ir.types import Shape


@dataclass
class CudaKernel(Kernel):
    """A kernel of the module's CUDA source, with its entry points (cuda_geometry.ENTRIES)."""

    @property
    def entries(self) -> list[str]:
        """Its own entry points: none for a GEMM, whose are its unit's (gpu_plan.py)."""
        if self.group.kind is Kind.GEMM:
            return []
        return [f"{self.name}_{e}" for e in ENTRIES[self.group.kind]]

    @property
    def acc_type(self) -> str:
        return ops_c.CTYPE[self.group.terms[0].dtype]

    @property
    def loops(self) -> str:
        """A GEMM's key of its unit's shared main loops (cuda_gemm.shared_name): "bf16" where
        its operands are bfloat16 (a float32 matmul of two bfloat16 values, canonicalize.py),
        else its accumulator's C type ("" for a kernel that is no GEMM)."""
        if self.group.kind is not Kind.GEMM:
            return ""
        return "bf16" if self.group.terms[0].srcs[0].dtype == "bfloat16" else self.acc_type


class GpuBody(Body):
    """A body region; ``flat``: every offset is the flat index ``t``; ``lane``: values move
    through the vectors ``L{j}``/``S{j}`` of a _flat kernel's step."""

    def __init__(self, w: Writer, flat: bool = False, lane: int | None = None,
                 in_row: bool = False):
        super().__init__(w, False, None)
        self.flat, self.lane, self.in_row = flat, lane, in_row


@dataclass
class RowCache:
    """Values of a row's elements kept in register arrays ``cv{n}[r]``, by (node, index
    map): ``done`` by an earlier pass (readable), ``pending`` by the current one."""

    done: dict[tuple[int, IndexMap], str] = field(default_factory=dict)
    pending: dict[tuple[int, IndexMap], str] = field(default_factory=dict)
    types: dict[str, str] = field(default_factory=dict)  # array name -> element C type
    vectors: dict[str, str] = field(default_factory=dict)  # a run's vector -> its C type


def unit_axis(k: CudaKernel) -> int | None:
    """The loop variable along a row when the row is one axis, else None (``_bcu32`` is
    then never launched)."""
    reduced = list(k.group.space.reduce_axes)
    return reduced[0] if len(reduced) == 1 else None


class CudaEmitter(KernelEmitter):
    language = ops_cuda.CUDA  # libdevice math, cuda_kernel.h's helpers

    def __init__(self, name: str, group: Group, buffers: set[int],
                 hoisted: dict[int, str] | None = None):
        super().__init__(name, group, buffers, hoisted)
        self.k: CudaKernel = CudaKernel(name, group)
        self.row_cache: RowCache | None = None  # set while a cached row kernel is emitted
        self.read_only = False  # loads of what the kernel does not write: cv_ld<RO>

    def accumulator(self) -> str:
        return "acc"

    def loop_index(self, body: Body) -> str:
        """In a 1-D kernel the flat index is the loop variable (``_flat``: ``t``, and
        ``t + lane`` in a step's lane)."""
        if isinstance(body, GpuBody) and body.lane is not None:
            return f"(int64_t)(t + {body.lane})"
        if isinstance(body, GpuBody) and body.flat:
            return "(int64_t)t"
        return super().loop_index(body)

    def offset(self, j: int, body: Body) -> str:
        body.used.add(j)
        if isinstance(body, GpuBody) and body.flat:
            return "t"
        return super().offset(j, body)

    def expr(self, node: Node, m: IndexMap, body: Body) -> str:
        """In a cached row kernel, every value of a row's element that a pass computes is
        also kept in registers, so later passes reuse it (softmax: exp once)."""
        cache = self.row_cache
        if cache is None or not isinstance(body, GpuBody) or not body.in_row:
            return super().expr(node, m, body)
        key = (id(node), m)
        if key in cache.done:
            return f"{cache.done[key]}[r]"
        if key in body.memo:
            return body.memo[key]
        if id(node) in self.recips:  # x / d as x * (1 / d): see cuda_rows._full_pass
            x = self.expr(node.srcs[0], m, body)
            value = body.local(ops_c.CTYPE[node.dtype], f"{x} * {self.recips[id(node)][0]}")
            body.memo[key] = value
        else:
            value = super().expr(node, m, body)
        if node.op is not Op.CONST and value.startswith("v"):  # a local: computed or loaded
            name = f"cv{len(cache.types)}"
            cache.types[name] = ops_c.CTYPE[node.dtype]
            cache.pending[key] = name
            body.w.line(f"{name}[r] = {value};")
        return value

    def load(self, base: Node, view: Shape | None, m: IndexMap, body: Body) -> str:
        j = self.operand(base, view, m)
        if isinstance(body, GpuBody) and body.lane is not None:
            body.used.add(j)
            return body.local(ops_c.CTYPE[base.dtype], f"L{j}.v[{body.lane}]")
        if predicated(self, body):  # a select, not a branch: the loads of a pass overlap
            ctype, offset = ops_c.CTYPE[base.dtype], self.offset(j, body)
            scalar = f"in ? ({ctype})p{j}[{offset}] : ({ctype})0"
            if not self._along_row(j):
                return body.local(ctype, scalar)
            vec, vtype = self._run_vector(j)
            body.w.line(f"if (V > 1 && r % V == 0) {vec} = in ? *reinterpret_cast<const {vtype} *>"
                        f"(&p{j}[{offset}]) : {vtype}{{}};")
            return body.local(ctype, f"V > 1 ? ({ctype}){vec}.v[r % V] : {scalar}")
        if self.read_only and not self._writes(base):
            j = self.operand(base, view, m)
            value = ops_c.load(base.dtype, f"cv_ld<RO>(&p{j}[{self.offset(j, body)}])")
            return body.local(ops_c.CTYPE[base.dtype], value)
        return super().load(base, view, m, body)

    def _writes(self, base: Node) -> bool:
        """Whether the kernel may write ``base``: one of its stores, or any array where it
        assigns into one (an argument written in place)."""
        dests = self.group.dests
        return any(d.buffer is base or d.region is not None or d.scatter is not None
                   for d in dests)

    def fetch(self, j: int, offset: str, ok: str, body: Body) -> str:
        """A gather's table load: in a cached row kernel's pass only for slots in the row."""
        return super().fetch(j, offset, f"in && {ok}" if predicated(self, body) else ok, body)

    def report(self, ok: str, value: str, axis: int, size: str, body: Body,
               flag: int) -> None:
        if predicated(self, body):
            ok = f"(!in || {ok})"
        body.w.line(gather_access.CUDA_REPORT.format(ok=ok, value=value, axis=axis, size=size,
                                                     flag=flag))

    def _along_row(self, j: int) -> bool:
        """Operand j runs along the row: in ``_bcu32`` contiguously, in runs of V."""
        axis = unit_axis(self.k)
        return axis is not None and axis in self.k.operands[j].support()

    def _run_vector(self, j: int) -> tuple[str, str]:
        """The vector register (name, C type) through which a cached row kernel moves
        operand j's runs."""
        assert self.row_cache is not None
        name, vtype = f"q{j}", f"cv_vec<{ops_c.STORAGE[self.k.operands[j].dtype]}, V>"
        self.row_cache.vectors[name] = vtype
        return name, vtype

    def store(self, root: Node, dest: Dest, m: IndexMap, value: str, body: Body) -> None:
        if predicated(self, body):
            j = self.operand(dest.buffer, None, dest_map(root, dest, m), dest)
            if self._along_row(j):
                (vec, vtype), offset = self._run_vector(j), self.offset(j, body)
                with body.w.block("if (V > 1)"):  # the run's last element stores the run
                    body.w.line(f"{vec}.v[r % V] = ({ops_c.STORAGE[dest.buffer.dtype]})({value});")
                    body.w.line(f"if (r % V == V - 1 && in) *reinterpret_cast<{vtype} *>"
                                f"(&p{j}[{offset}] - (V - 1)) = {vec};")
                body.w.line("else if (in)")
            else:
                body.w.line("if (in)")
            body.w.level += 1
            super().store(root, dest, m, value, body)
            body.w.level -= 1
            return
        if isinstance(body, GpuBody) and body.lane is not None:
            j = self.operand(dest.buffer, None, dest_map(root, dest, m), dest)
            body.used.add(j)
            storage = ops_c.STORAGE[dest.buffer.dtype]
            body.w.line(f"S{j}.v[{body.lane}] = ({storage})({value});")
            return
        super().store(root, dest, m, value, body)


def predicated(em: CudaEmitter, body: Body) -> bool:
    """A pass of a cached row kernel: it runs for every register slot r, and `in` says
    whether slot r holds an element of the row (loads, folds and stores respect it)."""
    return em.row_cache is not None and isinstance(body, GpuBody) and body.in_row
