"""A batched GEMM run as one GEMM of nb·m rows, where its batches step as rows do.

``x @ w + b`` with x of shape (B, T, K) and a 2-D weight is a GEMM of B batches of T rows
that share B. Where x's batches lie T rows apart (a contiguous x), and so do those of the
output and of every epilogue operand that moves with the batch and the rows (a residual),
the same values come out of one GEMM of B·T rows, whose epilogue sees batch 0 and rows
up to B·T: each address it forms, batch · s[0] + row · s[1], is the same.

The check is at run time (the strides are the call's), as the CPU's merged loops do it
(launch.merge_condition); at build time a kernel whose epilogue reads through index arrays
or stores through them, or has an operand that moves with the batch but not the rows (or
the other way round), never folds.

- CPU (``emit_c``): always where it holds. A decode step of B sequences, (B, 1, K) @ w.T,
  was B GEMVs each streaming all of w; folded it is one pass of B rows (LLaMA's MLP at
  B = 4, 512 → 1408 → 512: 201 → 69 µs, 2-core Zen 5 VM).
- GPU (``emit_cuda``): up to 16 rows in all where the dot GEMV runs (x @ w.T: its tensor-
  core tiles take 16 rows for the instructions of one), where the float4 GEMV of 8-row
  tiles takes an (in, out) weight (x @ w, its rows whole float4s: cuda_gemv_rows.h) and on
  bfloat16's tiles, B read once for every 8 or 16 rows where each batch's block column
  read it again (a decode step of B sequences; GPT-2's at 8 sequences on an H100: its four
  projections 80.8 µs as 8 batches of one row, 102.9 µs folded into the scalar four-row
  tiles that came before). Above 32 rows a batch, the wgmma main loop's tail split
  (gpu_wrap.h's cv_gpu_wg_split) takes GEMMs of one batch only; folded, a GPT-2 block's
  8 × 128 × 2304 projection is the 1024-row GEMM whose last round of tiles it splits
  alone: only where the tail split is allowed (CUVIL_AOT_CUDA_WG_TAIL, bit 4 of
  api->gpu->wgmma).
"""

from __future__ import annotations

from cuvil_aot.compiler.codegen import scatter_store
from cuvil_aot.compiler.codegen.kernel_emitter import Kernel
from cuvil_aot.compiler.codegen.writer import Writer

BATCH, ROWS = 0, 1  # the loops of a 3-loop GEMM kernel: batch, rows (m), columns (n)
FEW_ROWS = 16  # the GPU's GEMV and dot GEMV (on tensor cores) rows: folded below this


def foldable(k: Kernel) -> bool:
    """Whether GEMM kernel ``k`` may fold where the strides allow: three loops, epilogue
    accesses that are strides only, each moving with both the batch and the rows or with
    neither, no index ramp (its value is the loop variables')."""
    if k.nloops != 3 or k.gathers or k.ramps or scatter_store.writes(k.group):
        return False
    pair = {BATCH, ROWS}
    return all(len(pair & set(op.support())) != 1 for op in k.operands)


def condition(k: Kernel, terms: str, m: str) -> str:
    """C, at the call (``m`` rows a batch; the GEMM's terms ``terms[t]``): every term's B
    shared by the batches and its A's batches m rows apart; every operand that moves with
    the batch one batch m rows apart."""
    checks = [f"{terms}[{t}].b_bs == 0 && {terms}[{t}].a_bs == {m} * {terms}[{t}].a_rs"
              for t in range(len(k.group.terms))]
    return " && ".join(checks + _operand_checks(k, m))


def _operand_checks(k: Kernel, m: str) -> list[str]:
    """Every epilogue operand that moves with the batch one batch ``m`` rows apart."""
    return [f"a.s[{j}][{BATCH}] == {m} * a.s[{j}][{ROWS}]"
            for j, op in enumerate(k.operands) if BATCH in op.support()]


def emit_c(w: Writer, k: Kernel) -> None:
    """Fold the CPU GEMM ``g`` of terms ``terms`` (launch.py) where the call allows."""
    with w.block(f"if (g.nbatch > 1 && {condition(k, 'terms', 'g.m')})"):
        w.line("g.m *= g.nbatch; g.nbatch = 1;")
        for t in range(len(k.group.terms)):
            w.line(f"terms[{t}].a_bs = 0;")


def emit_c_q8(w: Writer, k: Kernel) -> None:
    """Fold the CPU int8-weight GEMM ``g`` (launch.py; x the rows, the weight 2-D) where the
    call allows."""
    checks = " && ".join(["g.x_bs == g.m * g.x_rs", *_operand_checks(k, "g.m")])
    with w.block(f"if (g.nbatch > 1 && {checks})"):
        w.line("g.m *= g.nbatch; g.nbatch = 1; g.x_bs = 0;")


def emit_cuda(w: Writer, k: Kernel, table: str | None, few: str) -> None:
    """The GEMM's ``nb``, ``m`` and ``n``, folded into one batch where allowed (``a``'s
    extents and terms rewritten: the kernels read only those): at most 16 rows in all where
    C condition ``few`` holds (it may read ``n`` and ``a.t``: the dot GEMV's choice), or
    more than 32 a batch where the wgmma loop's tail split is allowed (``table``: the
    unit's, where it is built for sm_90)."""
    w.line(f"int64_t nb = a.n[{BATCH}], m = a.n[{ROWS}];")
    w.line("const int64_t n = a.n[2];")
    when = f"nb * m <= {FEW_ROWS} && ({few})"
    if table is not None:
        when = f"({when} || (m > 32 && (api->gpu->wgmma(&{table}, dev) & 4)))"
    with w.block(f"if (nb > 1 && {when} && {condition(k, 'a.t', 'm')})"):
        w.line(f"m *= nb; nb = 1; a.n[{BATCH}] = 1; a.n[{ROWS}] = m;")
        for t in range(len(k.group.terms)):
            w.line(f"a.t[{t}].a_bs = 0;")
