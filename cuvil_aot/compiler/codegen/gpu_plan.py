"""Every GPU kernel of a module, and its entry points numbered as the module's kernel
table (the order in which gpu_wrapper.py names them and gpu_launch.py launches them)."""

from __future__ import annotations

from dataclasses import dataclass, field

from cuvil_aot.compiler.codegen import cuda, cuda_one
from cuvil_aot.compiler.codegen.compiled import Compiled
from cuvil_aot.compiler.codegen.cuda_emitter import CudaKernel
from cuvil_aot.compiler.codegen.run_time_loops import LoopSpan
from cuvil_aot.compiler.ir.group import Kind


@dataclass
class GpuPlan:
    """Every GPU kernel of a module, and its entry points numbered as the module's table."""

    kernels: dict[str, list[CudaKernel]] = field(default_factory=dict)  # by comp.prefix
    names: list[str] = field(default_factory=list)
    first: dict[str, int] = field(default_factory=dict)  # kernel name -> its first entry
    one: dict[str, int] = field(default_factory=dict)  # comp.prefix -> its one-kernel entry
    loops: dict[str, list[LoopSpan]] = field(default_factory=dict)  # comp.prefix -> its loops

    @property
    def source(self) -> str:
        ones = [cuda_one.one_struct(p, ks) + cuda_one.one_kernel(p, ks)
                for p, ks in self.kernels.items() if p in self.one]
        return cuda.source([k for ks in self.kernels.values() for k in ks], ones)


def lower(comps: list[Compiled]) -> GpuPlan:
    """The CUDA kernels of every signature, one per fusion group, and the table."""
    gp = GpuPlan()
    for comp in comps:
        buffers = {id(b) for b in comp.buffers}
        kernels = [cuda.emit_kernel(f"{comp.prefix}_g{g}", group, buffers, comp.hoisted)
                   for g, group in enumerate(comp.groups)]
        gp.kernels[comp.prefix] = kernels
        for k in kernels:
            gp.first[k.name] = len(gp.names)
            gp.names.extend(k.entries)
        gp.loops[comp.prefix] = comp.loops  # launched one by one, in order
        if len(kernels) > 1 and all(k.group.kind is not Kind.SCAN for k in kernels) \
                and not comp.loops:
            gp.one[comp.prefix] = len(gp.names)
            gp.names.append(f"{comp.prefix}_one")
    return gp
