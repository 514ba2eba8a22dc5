"""A GPU call's launches as one list: each planned kernel (L[g], its arguments in one.a{g})
into ``Q`` in order, then one ``api->gpu->launch_list`` call, which replays a CUDA graph of
them where they are many and came before (native/src/gpu_graph.c). Everything ``Q``
points at is declared at the call's scope, alive until the list is launched."""

from __future__ import annotations

from cuvil_aot.compiler.codegen import gpu_attention, gpu_wg_copies
from cuvil_aot.compiler.codegen.cuda_emitter import CudaKernel
from cuvil_aot.compiler.codegen.cuda_geometry import BLOCK
from cuvil_aot.compiler.codegen.gpu_plan import GpuPlan, module_symbol
from cuvil_aot.compiler.codegen.writer import Writer
from cuvil_aot.compiler.ir.group import Kind


def queue(w: Writer, prefix: str, gp: GpuPlan) -> None:
    """The call's launches in order into Q (a GEMM's argument struct, tagged, into sh{g}),
    then all of them at once: the runtime replays a CUDA graph of them where they are many
    and came before (native/src/gpu_graph.c), else launches them one by one."""
    kernels = gp.kernels[prefix]
    nq = len(kernels) + sum(k.group.kind is Kind.GEMM for k in kernels)  # a GEMM's _ksum
    nq += sum(gpu_wg_copies.copies(k) for k in kernels if gp.wg_kid(k) is not None)
    w.line(f"cv_gpu_launch Q[{nq}]; int nq = 0, q0 = 0; (void)q0;")
    # launches that wait for nothing in a graph (gpu_wg_copies.queue: weights' copies)
    w.line(f"int roots[{nq}], nroots = 0; (void)roots; (void)nroots;")
    w.line("static void *graphs;  /* the runtime's graphs of this call site */")
    for g, k in enumerate(kernels):  # Q points at these until launch_list returns
        if k.group.kind is Kind.GEMM:
            w.line(f"{gp.tag(k)[0]}_args sh{g};")
    gpu_attention.declare_queued(w, gp, prefix)
    after = gp.after.get(prefix)
    for g, k in enumerate(kernels):
        if after is not None:
            w.line("q0 = nq;")
        fused = gpu_attention.role(gp, prefix, g)
        if fused is not None and fused[1] == "out":  # the attention kernel, or the GEMM
            gpu_attention.queue(w, gp, prefix, fused[0], g)
            with w.block(f"if (!attn{fused[0]})"):
                queue_one(w, k, gp, g)
        else:
            queue_one(w, k, gp, g)
        if after is not None:  # what its launches wait for in a graph (gpu_deps.py)
            w.line(f"cv_gpu_mark(Q, q0, nq, {g + 1}, {after[g]:#x}ull);")
            if gp.wg_kid(k) is not None:  # its copies of arguments wait for nothing
                w.line("while (nroots) Q[roots[--nroots]].after = 0;")
    w.line("if (nq && api->gpu->launch_list(Q, nq, dev, stream, &graphs) < 0) goto done;")


def queue_one(w: Writer, k: CudaKernel, gp: GpuPlan, g: int) -> None:
    """Kernel g into Q as L[g] says (a GEMM tagged, with its split-K sum)."""
    table = module_symbol(k.name)
    if k.group.kind is not Kind.GEMM:
        w.line(f"if (!small && L[{g}].run) Q[nq++] = (cv_gpu_launch){{&{table}, L[{g}].kid, "
               f"L[{g}].grid, L[{g}].gy, L[{g}].block, 0, sizeof one.a{g}, &one.a{g}}};")
        return
    tag = gp.tag(k)[1]
    ksum = gp.entry(k, "ksum")
    with w.block(f"if (!small && L[{g}].run)"):
        # zeroed: the runtime compares the bytes with the graph's (no stale union bytes)
        w.line(f"memset(&sh{g}, 0, sizeof sh{g}); sh{g}.tag = {tag}; "
               f"sh{g}.u.m{tag} = one.a{g};")
        main = f"(cv_gpu_launch){{&{table}, L[{g}].kid, L[{g}].grid, L[{g}].gy, " \
               f"L[{g}].block, L[{g}].smem, sizeof sh{g}, &sh{g}}}"  # _tcc's stages
        if gp.wg_kid(k) is not None:  # its maps and sh{g}, with its shared memory
            wg = f"(cv_gpu_launch){{&{table}, L[{g}].kid, L[{g}].grid, 1, L[{g}].block, " \
                 f"L[{g}].smem, sizeof wg{g}, &wg{g}}}"
            main = f"L[{g}].wg ? (wg{g}.a = sh{g}, {wg}) : {main}"
        gpu_wg_copies.queue(w, k, gp, g)  # its operands' K-major copies first
        w.line(f"Q[nq++] = {main};")
        w.line(f"if (L[{g}].sum_grid) Q[nq++] = (cv_gpu_launch){{&{table}, {ksum}, "
               f"L[{g}].sum_grid, 1, {BLOCK}, 0, sizeof sh{g}, &sh{g}}};")
