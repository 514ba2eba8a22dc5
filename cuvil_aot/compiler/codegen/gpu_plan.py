"""Every GPU kernel of a module, grouped in units: one per marked function, each its own
CUDA translation unit, fatbin and table of entry points (the order in which
gpu_wrapper.py names them and gpu_launch.py launches them). A unit is compiled and cached
on its own (toolchain/nvcc.py), so editing one function recompiles only its unit."""

from __future__ import annotations

from dataclasses import dataclass, field

from cuvil_aot.compiler.codegen import cuda, cuda_one
from cuvil_aot.compiler.codegen.compiled import Compiled
from cuvil_aot.compiler.codegen.cuda_emitter import CudaKernel
from cuvil_aot.compiler.codegen.run_time_loops import LoopSpan
from cuvil_aot.compiler.ir.group import Kind


def unit_of(prefix: str) -> str:
    """The unit of a signature's kernels: its function's (``f3_s1`` -> ``f3``)."""
    return prefix.split("_")[0]


def module_symbol(prefix: str) -> str:
    """The C name of the runtime's ``cv_cuda_module`` of ``prefix``'s unit."""
    return f"cv_gpu_{unit_of(prefix)}"


@dataclass
class GpuPlan:
    """Every GPU kernel of a module, and each unit's entry points numbered as its table."""

    kernels: dict[str, list[CudaKernel]] = field(default_factory=dict)  # by comp.prefix
    names: dict[str, list[str]] = field(default_factory=dict)  # unit -> its entry points
    first: dict[str, int] = field(default_factory=dict)  # kernel name -> its first entry
    one: dict[str, int] = field(default_factory=dict)  # comp.prefix -> its one-kernel entry
    loops: dict[str, list[LoopSpan]] = field(default_factory=dict)  # comp.prefix -> its loops

    def sources(self) -> dict[str, str]:
        """Each unit's CUDA source, by unit."""
        by_unit: dict[str, list[str]] = {}
        for prefix in self.kernels:
            by_unit.setdefault(unit_of(prefix), []).append(prefix)
        return {unit: self._source(prefixes) for unit, prefixes in by_unit.items()}

    def _source(self, prefixes: list[str]) -> str:
        ones = [cuda_one.one_struct(p, self.kernels[p]) + cuda_one.one_kernel(p, self.kernels[p])
                for p in prefixes if p in self.one]
        return cuda.source([k for p in prefixes for k in self.kernels[p]], ones)


def lower(comps: list[Compiled]) -> GpuPlan:
    """The CUDA kernels of every signature, one per fusion group, and the tables."""
    gp = GpuPlan()
    for comp in comps:
        buffers = {id(b) for b in comp.buffers}
        kernels = [cuda.emit_kernel(f"{comp.prefix}_g{g}", group, buffers, comp.hoisted)
                   for g, group in enumerate(comp.groups)]
        gp.kernels[comp.prefix] = kernels
        names = gp.names.setdefault(unit_of(comp.prefix), [])
        for k in kernels:
            gp.first[k.name] = len(names)
            names.extend(k.entries)
        gp.loops[comp.prefix] = comp.loops  # launched one by one, in order
        if len(kernels) > 1 and all(k.group.kind is not Kind.SCAN for k in kernels) \
                and not comp.loops:
            gp.one[comp.prefix] = len(names)
            names.append(f"{comp.prefix}_one")
    return gp
