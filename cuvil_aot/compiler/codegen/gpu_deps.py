"""Which launches of a GPU call wait for which: the graph the runtime builds of a call's
launches (native/src/gpu_graph.c) has an edge only where a kernel reads or overwrites what
an earlier one wrote or read (the fusion pass's ``Function.after``), so kernels that share
only inputs (a layer's Q, K and V projections) run at the same time.

Each kernel's mask names every kernel it follows, directly or not: a kernel the call does
not launch (its attention fused, a heads copy read through its strides) passes its own
waits on. A call whose kernels the fusion order does not describe alone keeps the chain:
run-time loops (their bodies' kernels are launched kernel by kernel), gathers and scatters
(one error flag, the first bad index reported as NumPy's C order finds it; duplicates
written in C order) and more kernels than a mask has bits."""

from __future__ import annotations

from cuvil_aot.compiler.codegen.compiled import Compiled
from cuvil_aot.compiler.codegen.cuda_emitter import CudaKernel

MASK_BITS = 64  # cv_gpu_launch.after (cuda_driver.h)


def masks(comp: Compiled, kernels: list[CudaKernel]) -> list[int] | None:
    """For each kernel of ``comp``, the bit mask of the kernels it waits for; None where the
    call's launches stay one chain."""
    after = comp.fn.after
    if comp.loops or len(kernels) > MASK_BITS or len(after) != len(kernels):
        return None
    for k in kernels:
        if k.gathers or any(d.scatter is not None for d in k.group.dests):
            return None
    closed: list[int] = []
    for deps in after:
        mask = 0
        for j in deps:
            mask |= (1 << j) | closed[j]
        closed.append(mask)
    return closed
