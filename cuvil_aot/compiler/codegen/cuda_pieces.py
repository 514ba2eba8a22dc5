"""The pieces every CUDA kernel is built from: operand pointers and strides, loop sizes,
loop variables from a flat index, and ``extern "C"`` entry points."""

from __future__ import annotations

from collections.abc import Callable

from cuvil_aot.compiler.codegen import ops_c
from cuvil_aot.compiler.codegen.cuda_emitter import CudaKernel, GpuBody
from cuvil_aot.compiler.codegen.writer import Writer


def prologue(k: CudaKernel, w: Writer, index: str, strides: bool = True,
             unit: int | None = None) -> None:
    """Each operand's pointer and strides; along loop variable ``unit`` the stride is the
    constant 1 where the template parameter UNIT says so (the host checked it)."""
    for j, op in enumerate(k.operands):
        const = "" if op.dest is not None else "const "
        storage = ops_c.STORAGE[op.dtype]
        w.line(f"{const}{storage} *__restrict__ p{j} = ({const}{storage} *)a->p[{j}];")
        for v in op.support() if strides else ():
            value = f"({index})a->s[{j}][{v}]"
            if v == unit:
                value = f"UNIT ? ({index})1 : {value}"
            w.line(f"const {index} s{j}_{v} = {value};")


def sizes(k: CudaKernel, w: Writer, index: str) -> None:
    """Each loop variable's size ``n{v}``, in the index type."""
    for v in range(k.nloops):
        w.line(f"const {index} n{v} = ({index})a->n[{v}]; (void)n{v};")


def product(axes: list[int]) -> str:
    """The product of the sizes ``n{v}`` of loop variables ``axes``."""
    return " * ".join(f"n{v}" for v in axes) or "1"


def decompose(w: Writer, axes: list[int], flat: str, index: str) -> None:
    """Loop variables i{axis} from a flat index over ``axes`` (last fastest)."""
    if not axes:
        return
    w.line(f"{index} rem = {flat};")
    for axis in reversed(axes[1:]):
        w.line(f"const {index} i{axis} = rem % n{axis}; rem /= n{axis};")
    w.line(f"const {index} i{axes[0]} = rem;")
    w.line(" ".join(f"(void)i{axis};" for axis in axes))


def entry(w: Writer, k: CudaKernel, suffix: str, threads: str, call: str) -> None:
    """Entry point ``{kernel}_{suffix}``: ``call`` on the by-value argument struct."""
    with w.block(f'extern "C" __global__ void __launch_bounds__({threads}) '
                 f"{k.name}_{suffix}(const __grid_constant__ {k.name}_args a_)"):
        w.line(f"const {k.name}_args *a = &a_;")
        w.line(call)


def filled(body: GpuBody, fill: Callable[[GpuBody], None]) -> Writer:
    """The code ``fill`` writes into ``body``."""
    fill(body)
    return body.w
