"""The host side of the fused attentions (cuda_attention.py) of a GPU call.

Per attention ``i`` the call decides ``attn{i}`` (both head dims, of Q/K and of V, fit
the kernel: at most 128);
where it holds, the scores and probabilities buffers are never allocated, the first
matmul's and the softmax's kernels never launched, and the second matmul's launch is the
attention kernel's, with the arguments those three kernels would have had (their terms:
Q, Kᵀ and V, as strides) and the score functor's. Where it fails, the three kernels run
as before.
"""

from __future__ import annotations

from cuvil_aot.compiler.codegen.cuda_attention import (
    DECODE_ROWS,
    DMAX,
    FEW_DMAX,
    FEW_ROWS,
    ROWS,
    THREADS,
    AttentionKernel,
    head_dims,
)
from cuvil_aot.compiler.codegen.cuda_emitter import CudaKernel
from cuvil_aot.compiler.codegen.gpu_plan import GpuPlan, module_symbol
from cuvil_aot.compiler.codegen.launch import Storage, dim, fill_args
from cuvil_aot.compiler.codegen.writer import Writer


def of(gp: GpuPlan, prefix: str) -> list[AttentionKernel]:
    return gp.attention.get(prefix, [])


def conditions(w: Writer, gp: GpuPlan, prefix: str) -> None:
    """``attn{i}``: attention i runs fused in this call (its head dims fit: at one query row
    those of the decode rows, CUVIL_AOT_CUDA_ATTENTION not 0)."""
    for i, ak in enumerate(of(gp, prefix)):
        dk, dv = (dim(d) for d in head_dims(ak.first, ak.out))
        t = dim(ak.score.group.space.shape[-2])
        # grouped (Match.grouped, where CUVIL_AOT_CUDA_ATTENTION_GROUPED allows): the
        # matmuls' rows whole heads of T rows each
        whole = f" && ({dim(ak.out.group.space.shape[-2])}) % ({t}) == 0 && " \
            "(api->gpu->attention() & 4)" if ak.match.grouped else ""
        # one query row (a decode step) where cuda_attention_decode.h runs it (head dims
        # up to 64); wider, the tensor-core tiles' 64 rows ran it slower than the GEMVs
        # and softmax (78 against 95 µs, H200, 2026-12-03)
        one_row = f"(({t}) > 1 || (({dk}) <= {FEW_DMAX} && ({dv}) <= {FEW_DMAX}))"
        w.line(f"const int attn{i} = ({dk}) <= {DMAX} && ({dv}) <= {DMAX} && {one_row}"
               f"{whole} && api->gpu->attention(); (void)attn{i};")


def fused_buffer(gp: GpuPlan, prefix: str, buffer_id: int) -> int | None:
    """The attention whose scores, probabilities or copied heads ``buffer_id`` is, if any."""
    for i, ak in enumerate(of(gp, prefix)):
        probs = ak.score.group.roots[0]
        copies = [c.group.roots[0] for c in ak.copies if c is not None]
        if ak.match.merge is not None:  # the second matmul's own buffer
            copies.append(ak.out.group.roots[0])
        if buffer_id in (id(ak.match.score_buffer), id(probs), *map(id, copies)):
            return i
    return None


def role(gp: GpuPlan, prefix: str, g: int) -> tuple[int, str] | None:
    """(attention, "absorbed" or "out") of kernel g, where an attention replaces it."""
    for i, ak in enumerate(of(gp, prefix)):
        if g in (ak.match.scores, ak.match.softmax, ak.match.merge) or g in ak.match.copies:
            return i, "absorbed"
        if g == ak.match.out:
            return i, "out"
    return None


def declare(w: Writer, gp: GpuPlan, prefix: str) -> None:
    for i, ak in enumerate(of(gp, prefix)):
        w.line(f"{ak.score.name}_args as{i}; memset(&as{i}, 0, sizeof as{i});")
        w.line(f"cv_att_in ai{i}[3]; memset(ai{i}, 0, sizeof ai{i});")


def plan(w: Writer, gp: GpuPlan, prefix: str, i: int, g: int, st: Storage) -> None:
    """Attention i's launch into L[g] (the GEMM struct ``a`` is filled): a block per
    ROWS query rows of one batch; of its entry points (AttentionKernel.entries) the one
    built for head dims up to 64 where they are, or its split entry (``_s``: a block per
    ROWS / 2 rows, the keys split between two halves of its warps) where the blocks would
    fill less than half the SMs (GPT-2 at 1 x 128: 24 blocks on 132); with head dims up to
    FEW_DMAX, at most FEW_ROWS rows its FMA entry (``_f``: 4 rows a warp) and at most
    DECODE_ROWS its decode entry (``_d``: one block a batch, its warps splitting the keys)."""
    ak = of(gp, prefix)[i]
    with w.block(""):
        fill_args(w, ak.score, st, "sa")
        w.line(f"as{i} = sa;")
    n = ak.out.nloops
    if ak.match.grouped:  # B·H heads of T rows, n = the matmuls' rows / T of each
        w.line(f"const int64_t t = as{i}.n[{ak.score.nloops - 2}], rep = a.n[1] / t, "
               f"nz = a.n[0] * rep, d = a.n[2];")
    else:
        nz = "a.n[0]" if n == 3 else "1"
        w.line(f"const int64_t nz = {nz}, t = a.n[{n - 2}], d = a.n[{n - 1}];")
    _operands(w, ak, i)
    dk, dv = (dim(d) for d in head_dims(ak.first, ak.out))
    with w.block("if (nz * t * d > 0)"):
        first = gp.first[ak.name]
        if ak.entries[1:2] == (f"{ak.name}_n",):  # the build for head dims up to 64
            w.line(f"int kid = {first} + (({dk}) <= 64 && ({dv}) <= 64);")
        else:
            w.line(f"int kid = {first};")
        w.line("int split = 1;")
        if ak.entries[-1] == f"{ak.name}_s":
            w.line(f"split = (api->gpu->attention() & 2) && ({dk}) <= 64 && ({dv}) <= 64 && "
                   f"t > {ROWS // 2} && 2 * ((t + {ROWS - 1}) / {ROWS}) * nz <= sm ? 2 : 1;")
            w.line(f"if (split == 2) kid = {first + len(ak.entries) - 1};")
        if f"{ak.name}_d" in ak.entries:  # few rows: the FMA kernel, a decode step's
            w.line(f"if (({dk}) <= {FEW_DMAX} && ({dv}) <= {FEW_DMAX}) kid = t <= "
                   f"{DECODE_ROWS} ? {first + ak.entries.index(f'{ak.name}_d')} : t <= "
                   f"{FEW_ROWS} ? {first + ak.entries.index(f'{ak.name}_f')} : kid;")
        w.line(f"const int64_t rows = {ROWS} / split;")
        w.line(f"const uint32_t grid = (uint32_t)((t + rows - 1) / rows), "
               f"gy = (uint32_t)(nz < 65535 ? nz : 65535), block = {THREADS};")
        w.line(f"L[{g}] = (cv_gpu_plan){{kid, grid, gy, block, 1, 0}};")


def declare_queued(w: Writer, gp: GpuPlan, prefix: str) -> None:
    """The attention kernels' arguments, alive until the call's launch list is launched."""
    for i, ak in enumerate(of(gp, prefix)):
        w.line(f"{ak.name}_args ax{i};")


def queue(w: Writer, gp: GpuPlan, prefix: str, i: int, g: int) -> None:
    """Attention i's launch into the call's list Q, where kernel g (its second matmul)
    would have run."""
    ak = of(gp, prefix)[i]
    with w.block(f"if (attn{i} && !small && L[{g}].run)"):
        # zeroed: the runtime compares the bytes with a graph's (no stale padding)
        w.line(f"memset(&ax{i}, 0, sizeof ax{i}); ax{i}.q = one.a{ak.match.scores}; "
               f"ax{i}.s = as{i}; ax{i}.o = one.a{g};")
        w.line(f"memcpy(ax{i}.ops, ai{i}, sizeof ai{i});")
        if ak.match.merge is not None:  # its kernel's arguments are filled by now
            w.line(f"ax{i}.ops[3] = {_merged(ak)};")
        w.line(f"Q[nq++] = (cv_gpu_launch){{&{module_symbol(ak.name)}, L[{g}].kid, "
               f"L[{g}].grid, L[{g}].gy, L[{g}].block, 0, sizeof ax{i}, &ax{i}}};")


def _operands(w: Writer, ak: AttentionKernel, i: int) -> None:
    """Q, K and V into ai{i}: the matmuls' terms (in ``one.a{g1}`` and ``a``), or for a head
    copy the argument the copy kernel reads, its (B, H, rows, columns) strides ((B, H,
    columns, rows) where the copy holds the matrices transposed: Match.transposed).
    Pointers and strides as they are: strides count elements, of whatever type."""
    t1, t3 = f"one.a{ak.match.scores}.t[0]", "a.t[0]"
    terms = [(f"{t1}.a", f"{t1}.a_bs", f"{t1}.a_rs", f"{t1}.a_cs"),
             (f"{t1}.b", f"{t1}.b_bs", f"{t1}.b_cs", f"{t1}.b_rs"),
             (f"{t3}.b", f"{t3}.b_bs", f"{t3}.b_rs", f"{t3}.b_cs")]
    for which, (ptr, bs, rs, cs) in enumerate(terms):
        copy = ak.copies[which]
        if ak.match.grouped and copy is None:
            # head z of the B·H: Q rows (z % rep)·T on of matrix z / rep, whatever the
            # matrices' stride; K, V: matrix z / rep (cv_att_batch's (z / nh) * sb +
            # (z % nh) * sh with nh = rep)
            shape = f"rep, {bs}, t * {rs}" if which == 0 else f"rep, {bs}, 0"
            w.line(f"ai{i}[{which}] = (cv_att_in){{{ptr}, {shape}, {rs}, {cs}}};")
            continue
        if copy is None:
            w.line(f"ai{i}[{which}] = (cv_att_in){{{ptr}, 1, {bs}, 0, {rs}, {cs}}};")
            continue
        c, j = f"one.a{ak.match.copies[which]}", copy_operand(copy)
        rows, cols = (3, 2) if ak.match.transposed[which] else (2, 3)
        w.line(f"ai{i}[{which}] = (cv_att_in){{{c}.p[{j}], {c}.n[1], {c}.s[{j}][0], "
               f"{c}.s[{j}][1], {c}.s[{j}][{rows}], {c}.s[{j}][{cols}]}};")


def copy_operand(k: CudaKernel) -> int:
    """The operand a head copy kernel reads (its other one is the store)."""
    reads = [j for j, op in enumerate(k.operands) if op.dest is None]
    assert len(reads) == 1, k.name
    return reads[0]


def _merged(ak: AttentionKernel) -> str:
    """The merged output (a cv_att_in) from the merge kernel's store: its loop variable v
    runs along axis perm[v] of the output's (B, H, T, D) view."""
    assert ak.match.merge is not None
    k = ak.merge_kernel
    assert k is not None
    perm = k.group.roots[0].attrs[0]
    j = next(j for j, op in enumerate(k.operands) if op.dest is not None)
    c = f"one.a{ak.match.merge}"
    along = {axis: v for v, axis in enumerate(perm)}
    strides = ", ".join(f"{c}.s[{j}][{along[axis]}]" for axis in range(4))
    return f"(cv_att_in){{{c}.p[{j}], {c}.n[{along[1]}], {strides}}}"
