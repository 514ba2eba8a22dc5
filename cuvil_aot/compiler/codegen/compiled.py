"""One signature of one function lowered to CPU kernels, with the buffers, symbols and
layout needs that both wrappers (pymodule.py, gpu_wrapper.py) build on."""

from __future__ import annotations

from dataclasses import dataclass, field

from cuvil_aot.compiler.codegen import host_scalars, run_time_loops
from cuvil_aot.compiler.codegen.c import emit_kernel
from cuvil_aot.compiler.codegen.kernel_emitter import Kernel
from cuvil_aot.compiler.codegen.launch import Storage, matmul_operand
from cuvil_aot.compiler.ir.group import Group
from cuvil_aot.compiler.ir.node import Function, Node
from cuvil_aot.compiler.ir.signature import Signature


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
    hoisted: dict[int, str] = field(default_factory=dict)  # host_scalars.find
    # fn.groups with each run-time loop's replaced by its kernels (run_time_loops.py)
    groups: list[Group] = field(default_factory=list)
    loops: list[run_time_loops.LoopSpan] = field(default_factory=list)
    named: dict[int, str] = field(default_factory=dict)
    alias: dict[int, Node] = field(default_factory=dict)

    @property
    def storage(self) -> Storage:
        return Storage({id(p): i for i, p in enumerate(self.fn.param_nodes)},
                       {id(b): i for i, b in enumerate(self.buffers)}, self.named, self.alias)


def lower_signature(prefix: str, name: str, fn: Function, sig: Signature) -> Compiled:
    """The CPU kernels (one per fusion group), the buffers they store to, the parameters
    that must be C-contiguous (read through a regrouping reshape) and the symbols."""
    comp = Compiled(prefix, name, fn, sig, hoisted=host_scalars.find(fn))
    comp.groups, comp.loops = run_time_loops.flatten(fn)
    comp.named, comp.alias = run_time_loops.storage_names(comp.loops)
    # a loop's result held by an argument's array has no copy kernel storing it
    stored = [d.buffer for g in comp.groups for d in g.dests] + [
        out for span in comp.loops for out in span.outs]
    for buffer in stored:
        if not any(buffer is b for b in comp.buffers):
            comp.buffers.append(buffer)
    buffer_ids = {id(b) for b in comp.buffers}
    for g, group in enumerate(comp.groups):
        comp.kernels.append(emit_kernel(f"{prefix}_k{g}", group, buffer_ids, comp.hoisted))
    params = {id(p): i for i, p in enumerate(fn.param_nodes)}
    for k in comp.kernels:
        for op in k.operands:
            base = comp.alias.get(id(op.base), op.base)
            if op.view is not None and id(base) in params:
                comp.contiguous.add(params[id(base)])
        for term in k.group.terms:
            for operand in term.srcs:
                base, view, _ = matmul_operand(operand, comp.storage)
                base = comp.alias.get(id(base), base)
                if view is not None and id(base) in params:
                    comp.contiguous.add(params[id(base)])
    comp.symbols = sorted({s for p in sig.params for d in p.type.shape for s in d.symbols})
    comp.symbols += [name for name, _, _ in fn.derived]
    comp.symbols += [s for r in fn.run_time for s in r.defines if s not in comp.symbols]
    comp.symbols += [symbol for symbol, _, _, _ in fn.indices]  # assign.py's int indices
    return comp
