"""GPU kernels in CUDA C++, one per fusion group, all in one source per module.

A kernel takes one by-value argument: a struct laid out alike in C and C++
(``int64_t``s, pointers, doubles) that the host wrapper (gpu_wrapper.py)
fills as the CPU wrapper fills its kernels' arguments (launch.py): each
operand is a base pointer plus one element stride per loop variable, from the
access's index map. Expressions come from the emitter the CPU kernels use
(kernel_emitter.py); CudaEmitter (cuda_emitter.py) overrides what differs: the op
table (ops_cuda.py), offsets, vector lanes and the GEMM accumulator.

Each group has a few entry points (``extern "C"``) that the host picks from:

- elementwise (cuda_elementwise.py): ``_s32``/``_s64``, grid-stride loops decomposing a flat index
  into the loop variables, in 32-bit arithmetic when every offset fits;
  ``_flat`` when every operand runs contiguously along the loop space and is
  aligned: 4 elements per step through 16-byte (for 4-byte types) vectors;
- row (cuda_rows.py): ``_w32``/``_w64`` one warp per row, ``_b32``/``_b64`` one block per
  row (long rows, or few rows); the stages reduce with shuffles, then the roots
  are stored; ``_bc32`` (a block per row) keeps up to 16 elements per thread in
  registers, and every value of an element a pass computes, so a row of up to 4096 is
  read once and exp(x - max) computed once; ``_bcu32`` is ``_bc32`` where every operand
  that runs along the row does so contiguously (the row's stride a constant 1) and in
  aligned runs of 4: a thread's elements come in runs of 4 through 16-byte (for 4-byte
  types) vectors;
  ``_q32`` gives each of many short rows (up to 64) 8 lanes of a warp;
- GEMM (cuda_gemm.py): the group's epilogue functor only; the entry points are its unit's,
  shared by every GEMM of the unit (its tag picks the epilogue): ``_tiled`` (128x128
  tiles), ``_tiled64``, ``_gemv1``, ``_gemv4`` (main loops in cuda_gemm.h; at one row per
  tile the GEMV reads float32 weights as float4 where they are contiguous and aligned),
  and for float32 ``_tc64``/``_tct64`` (3xTF32 on tensor cores, 64x128 tiles).
"""

from __future__ import annotations

from collections.abc import Sequence

from cuvil_aot.compiler.codegen import gather_access, ops_c
from cuvil_aot.compiler.codegen.cuda_elementwise import elementwise_kernels
from cuvil_aot.compiler.codegen.cuda_emitter import CudaEmitter, CudaKernel
from cuvil_aot.compiler.codegen.cuda_gemm import gemm_kernels
from cuvil_aot.compiler.codegen.cuda_geometry import ENTRIES
from cuvil_aot.compiler.codegen.cuda_rows import REDUCE_OP, row_kernels
from cuvil_aot.compiler.codegen.cuda_scan import scan_kernels
from cuvil_aot.compiler.codegen.kernel_emitter import scalar_dtype
from cuvil_aot.compiler.codegen.launch import int8_weight
from cuvil_aot.compiler.codegen.writer import Writer
from cuvil_aot.compiler.ir.group import Group, Kind

# ENTRIES and REDUCE_OP: what each kernel kind and each reduction lowers to on the GPU
__all__ = ["ENTRIES", "REDUCE_OP", "args_struct", "emit_kernel", "source"]

# Cooperative groups without libcu++ (its grid barrier needs none): 0.5 s of nvcc per unit
# and architecture instead of 1.2 (nvcc 13.0, sm_90)
HEADER = "#define _CG_LIMIT_INCLUDED_DEPENDENCIES\n#include <cooperative_groups.h>\n" \
    '#include "cuvil_aot/cuda_gemm.h"\n'
KERNELS = {Kind.ELEMENTWISE: elementwise_kernels, Kind.ROW: row_kernels, Kind.GEMM: gemm_kernels,
           Kind.SCAN: scan_kernels}


def emit_kernel(name: str, group: Group, buffers: set[int],
                hoisted: dict[int, str] | None = None) -> CudaKernel:
    em = CudaEmitter(name, group, buffers, hoisted)
    w = Writer()
    KERNELS[group.kind](em, w)
    em.k.code = w.text()
    decl = Writer()
    args_struct(em.k, decl, group.kind is Kind.GEMM and int8_weight(group, buffers) is not None)
    em.k.struct = decl.text()
    return em.k


def args_struct(k: CudaKernel, w: Writer, int8: bool = False) -> None:
    """The argument struct: the same text compiles to the same layout in C and C++; a GEMM
    that reads an int8 weight (``int8``) holds it for cv_gemv_q8 (cuda_q8.h)."""
    nops = max(1, len(k.operands))
    with w.block("typedef struct", f"}} {k.name}_args;"):
        w.line(f"int64_t n[{k.nloops}];")
        w.line(f"char *p[{nops}];")
        w.line(f"int64_t s[{nops}][{k.nloops}];")
        if k.group.kind is Kind.GEMM:
            w.line(f"cv_gpu_term t[{len(k.group.terms)}];")
            w.line("int64_t cols;  /* columns per block of the GEMV main loop */")
            w.line("int64_t vec;  /* 1: the GEMV reads B as float4 */")
            w.line("int64_t split;  /* > 1: k in chunks, partial sums in part (_ksum adds) */")
            w.line("char *part;")
            w.line("int64_t split_row0;  /* the split's first row (wgmma's tail split; else 0) */")
            if int8:
                w.line("cv_q8_weight q8;  /* the int8 weight, for the fused GEMV */")
        for field_name, node in sorted(k.scalars.items()):
            w.line(f"{ops_c.CTYPE[scalar_dtype(node)]} {field_name};")
        for sym in sorted(k.symbols):
            w.line(f"int64_t sym_{sym};")
        gather_access.fields(k, w)


def source(kernels: list[CudaKernel], structs: str = "", more: Sequence[str] = (),
           int8: bool = False) -> str:
    """A unit's CUDA source: the headers, every argument struct (then ``structs``), every
    kernel, then ``more``: the unit's shared GEMM main loops (cuda_gemm.py) and the
    one-kernel versions of multi-kernel calls (cuda_one.py). ``int8``: a GEMM reads int8
    weights (cuda_q8.h, before the structs that hold them)."""
    q8 = '#include "cuvil_aot/cuda_q8.h"\n' if int8 else ""
    return HEADER + q8 + "".join(k.struct for k in kernels) + structs + \
        "".join(k.code for k in kernels) + "".join(more)
