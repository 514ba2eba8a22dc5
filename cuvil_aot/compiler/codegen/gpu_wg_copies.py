"""The host side of the wgmma main loop over transposed copies (cuda_transpose.h): TF32 wgmma
reads both operands K-major, so a GEMM whose B is N-major (``x @ w`` of a GPT-2 (in, out)
weight) or whose A is M-major would run the older cv_gemm_tc. Where the device runs the
wgmma entry and gpu_wrap.h's cv_gpu_wg_transposed finds the copies pay, each such operand
is copied, transposed, into scratch memory of the call (``wtm[g][2t + side]``), the GEMM's
terms read the copies, and the copies run as launches of the call's list just before the
GEMM's (``cv_transpose_f32``, an entry of every unit with the wgmma entry): a CUDA graph
replay updates their arguments (the caller's pointers, the scratch) like any other node.

In the generated wrapper, per GEMM kernel g that may run wgmma::

    cv_transpose_args tr3[2];                       /* launches(): alive until the list */
    ...
    if (!wg && (wgl & 2)) {                         /* cuda_wgmma.choose */
        const int r = cv_gpu_wg_transposed(api->gpu, dev, stream, wg3.map, a.t, 1, m, n,
                                           nb, 128, 1, tr3, wtm[3], wtm_on[3]);
        if (r < 0) goto done;
        wg = r > 0; wtr = r > 0 ? r : 0;
    }
    ...
    if (L[3].wg && (L[3].tr >> 1 & 1)) Q[nq++] = (cv_gpu_launch){&cv_gpu_f0, 17, ...,
        sizeof tr3[1], &tr3[1]};                    /* gpu_queue.queue_one */
"""

from __future__ import annotations

from cuvil_aot.compiler.codegen.cuda_emitter import CudaKernel
from cuvil_aot.compiler.codegen.cuda_wgmma import WG_TERMS
from cuvil_aot.compiler.codegen.gpu_plan import GpuPlan, module_symbol, unit_of
from cuvil_aot.compiler.codegen.writer import Writer
from cuvil_aot.compiler.ir.ops import MOVEMENT, Op

COPIES = 2 * WG_TERMS  # two operands a term: wtm[g]'s width


def copies(k: CudaKernel) -> int:
    """The most copies GEMM kernel ``k`` launches before its wgmma main loop."""
    return 2 * len(k.group.terms)


def declare_scratch(w: Writer, gp: GpuPlan, prefix: str) -> None:
    """The call's scratch for the copies (gpu_wrapper._run), where a GEMM may take them."""
    if any(gp.wg_kid(k) is not None for k in gp.kernels[prefix]):
        nk = len(gp.kernels[prefix])
        w.line(f"cv_gpu_array wtm[{nk}][{COPIES}]; int wtm_on[{nk}][{COPIES}] = {{{{0}}}};  "
               "/* wgmma's K-major copies (gpu_wg_copies.py) */")


def release_scratch(w: Writer, gp: GpuPlan, prefix: str) -> None:
    """At the call's end: the copies' scratch back to the pool, after the work queued."""
    if any(gp.wg_kid(k) is not None for k in gp.kernels[prefix]):
        nk = len(gp.kernels[prefix])
        with w.block(f"for (int g = 0; g < {nk}; g++)"):
            w.line(f"for (int cp = 0; cp < {COPIES}; cp++) if (wtm_on[g][cp]) "
                   "api->gpu->scratch_free(&wtm[g][cp], stream);")


def free_previous(w: Writer, g: int) -> None:
    """In a run-time loop's body, before kernel g is planned again: the last trip's copies."""
    w.line(f"for (int cp = 0; cp < {COPIES}; cp++) if (wtm_on[{g}][cp]) "
           f"{{ api->gpu->scratch_free(&wtm[{g}][cp], stream); wtm_on[{g}][cp] = 0; }}")


def declare_args(w: Writer, k: CudaKernel, g: int) -> None:
    """The copies' arguments of kernel g, at the call's scope (the list points at them)."""
    w.line(f"cv_transpose_args tr{g}[{copies(k)}]; memset(tr{g}, 0, sizeof tr{g});")


def _copy_launches(k: CudaKernel, gp: GpuPlan, g: int) -> list[tuple[str, str, str]]:
    """Per copy c of kernel g: the condition that it runs, its grid, its argument."""
    return [(f"L[{g}].wg && (L[{g}].tr >> {c} & 1)",
             f"cv_gpu_grid_all(cv_transpose_tiles(&tr{g}[{c}]), 1)", f"tr{g}[{c}]")
            for c in range(copies(k))]


def _copies_an_argument(k: CudaKernel, c: int) -> bool:
    """Copy c (term c // 2's A or B) reads a view of one of the call's arguments, which no
    kernel of a call with a graph's dependencies writes (gpu_deps.py: no scatters)."""
    node = k.group.terms[c // 2].srcs[c % 2]
    while node.op in MOVEMENT:
        node = node.srcs[0]
    return node.op is Op.PARAM


def queue(w: Writer, k: CudaKernel, gp: GpuPlan, g: int) -> None:
    """Kernel g's copies into the call's list Q, before its main loop (gpu_queue.queue_one).
    A copy of an argument goes on ``roots``: in a graph it waits for nothing, so the
    weights' copies run beside the kernels before their GEMM's instead of between them."""
    if gp.wg_kid(k) is None:
        return
    table, entry = module_symbol(k.name), gp.transpose[unit_of(k.name)]
    for c, (cond, grid, arg) in enumerate(_copy_launches(k, gp, g)):
        root = "roots[nroots++] = nq, " if _copies_an_argument(k, c) else ""
        w.line(f"if ({cond}) {root}Q[nq++] = (cv_gpu_launch){{&{table}, {entry}, {grid}, 1, "
               f"CV_TRANSPOSE_BLOCK, 0, sizeof {arg}, &{arg}}};")


def launch_now(w: Writer, k: CudaKernel, gp: GpuPlan, g: int) -> None:
    """Kernel g's copies launched at once (a run-time loop's body: gpu_launch._launch_planned)."""
    if gp.wg_kid(k) is None:
        return
    table, entry = module_symbol(k.name), gp.transpose[unit_of(k.name)]
    for cond, grid, arg in _copy_launches(k, gp, g):
        w.line(f"if ({cond} && api->gpu->launch(&{table}, dev, {entry}, {grid}, 1, "
               f"CV_TRANSPOSE_BLOCK, 0, stream, &{arg}) < 0) goto done;")
