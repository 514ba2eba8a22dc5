"""The fused attention kernel of one match (attention_match.py): its score functor, its
argument struct and its entry point, around cv_attention (native/.../cuda_attention.h).

The score functor is the softmax ROW group's expression x with every read of the first
matmul's buffer replaced by the score the kernel computed (``s``); its operands (the mask,
the scale where the wrapper computes it) are loaded as the ROW kernel would, through their
own argument struct ``{name}_score_args`` that the wrapper fills as any kernel's. The
output goes through the second matmul's GEMM epilogue functor (``{g3}_epi``), so whatever
that GEMM stored (its buffer, an epilogue) is stored the same way. Launch::

    typedef struct { f0_s0_g0_args q; f0_s0_a0_score_args s; f0_s0_g2_args o;
                     cv_att_in ops[4]; } f0_s0_a0_args;
    extern "C" __global__ void f0_s0_a0(const __grid_constant__ f0_s0_a0_args a_) {
        cv_attention<64, 64, true, true>(a_.ops[0], a_.ops[1], a_.ops[2], Z, T, S, Dk, Dv,
                     f0_s0_a0_score{&a_.s}, f0_s0_g2_epi{&a_.o});
    }

Q, K and V (``ops``) are the matmuls' terms, or where fusion copied one from an argument's
heads view (attention_match.Match.copies) that argument read through the copy kernel's
strides, batch z as (b, h). Their elements are float, cv_bf16 or cv_f16 (the bf16
policy's heads): the kernel's template arguments after the X3 flags where any is not
float. Where a kernel merged the output's heads
(``o.transpose(0, 2, 1, 3)``: Match.merge) the kernel stores into that kernel's buffer
through ``ops[3]`` (cv_att_store, or cv_att_store_as<cv_bf16> where the policy rounded the
output to bfloat16) instead of the second matmul's epilogue.
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass

from cuvil_aot.compiler.codegen import cuda, text_names
from cuvil_aot.compiler.codegen.attention_match import Match
from cuvil_aot.compiler.codegen.cuda_emitter import CudaEmitter, CudaKernel, GpuBody
from cuvil_aot.compiler.codegen.cuda_gemm import one_tf32_product
from cuvil_aot.compiler.codegen.cuda_pieces import prologue
from cuvil_aot.compiler.codegen.kernel_emitter import Body, root_map
from cuvil_aot.compiler.codegen.ops_c import STORAGE
from cuvil_aot.compiler.codegen.writer import Writer
from cuvil_aot.compiler.ir.group import Group
from cuvil_aot.compiler.ir.indexing import IndexMap, identity
from cuvil_aot.compiler.ir.node import Node
from cuvil_aot.compiler.ir.types import Dim, Shape

THREADS = 128  # CV_ATT_THREADS
ROWS = 64  # CV_ATT_ROWS: query rows per block
DMAX = 128  # CV_ATT_DMAX
# The entries of few query rows (each its own registers): head dims up to FEW_DMAX, at
# most FEW_ROWS (CV_ATT_BM: cv_attention_few, the FMA kernel) or DECODE_ROWS (CV_ATT_RW:
# cv_attention_rows, cuda_attention_decode.h) query rows
FEW_DMAX = 64
FEW_ROWS = 16
DECODE_ROWS = 4


@dataclass
class AttentionKernel:
    """One fused attention: ``name`` its entry point, ``score`` the kernel whose argument
    struct the wrapper fills for the score functor, ``first``/``out`` the two GEMM
    kernels whose arguments it fills as before (their terms: Q, Kᵀ and V)."""

    name: str
    match: Match
    score: CudaKernel
    first: CudaKernel
    out: CudaKernel
    code: str = ""
    struct: str = ""
    copies: tuple[CudaKernel | None, ...] = (None, None, None)  # Match.copies' kernels
    merge_kernel: CudaKernel | None = None  # Match.merge's
    # the entry points: ``name``, then ``{name}_n`` (built for head dims up to 64) where a
    # head dim is known only at run time and the kernel's wider build covers it (_builds),
    # then ``{name}_s`` where the last build may split its keys (split_build)
    entries: tuple[str, ...] = ()

    def renamed(self, name: str) -> AttentionKernel:
        """This attention as ``name`` (an earlier one of the same text: gpu_plan.py), its
        score functor's arguments with it; the version's own match and kernels kept."""
        sub = functools.partial(text_names.own_names(self.name).sub, name)
        score = dataclasses.replace(self.score, name=sub(self.score.name),
                                    struct=sub(self.score.struct), code=sub(self.score.code))
        return dataclasses.replace(self, name=name, code=sub(self.code), struct=sub(self.struct),
                                   entries=tuple(map(sub, self.entries)), score=score)


class ScoreEmitter(CudaEmitter):
    """The ROW group's emitter where the scores buffer reads as ``s``."""

    def __init__(self, name: str, group: Group, buffers: set[int], scores: Node,
                 hoisted: dict[int, str] | None = None):
        super().__init__(name, group, buffers, hoisted)
        self.scores = scores

    def load(self, base: Node, view: Shape | None, m: IndexMap, body: Body) -> str:
        if base is self.scores:
            return "s"
        return super().load(base, view, m, body)


def emit(name: str, match: Match, groups: list[Group], kernels: list[CudaKernel],
         buffers: set[int], hoisted: dict[int, str]) -> AttentionKernel | None:
    """The attention kernel of ``match``; None where a functor would need what a functor
    cannot do (a gather's table) or the first matmul's epilogue reads what its kernel does
    not."""
    copies = tuple(None if c is None or not _one_read(kernels[c]) else kernels[c]
                   for c in match.copies)
    merge = match.merge if match.merge is not None and _one_read(kernels[match.merge]) \
        else None
    match = dataclasses.replace(match, merge=merge, copies=tuple(
        None if k is None else c for k, c in zip(copies, match.copies)))
    first, out = kernels[match.scores], kernels[match.out]
    score = _score_functor(name, match, groups[match.softmax], buffers, hoisted)
    if score is None:
        return None
    sk, w = score
    pre = _pre_functor(name, first, buffers, hoisted, sk if match.grouped else None)
    if pre is None:
        return None
    w.extend(pre)
    on = out.nloops
    nz, t = ("a_.o.n[0]" if on == 3 else "1"), f"a_.o.n[{on - 2}]"
    epi = _store(kernels[match.merge]) if match.merge is not None else \
        f"{out.name}_epi{{&a_.o}}"
    pre_args = "{&a_.q}"
    if match.grouped:  # over B·H heads of T rows (Match.grouped): the matmuls' indices
        t = f"a_.s.n[{sk.nloops - 2}]"
        nz = f"a_.o.n[0] * (a_.o.n[1] / {t})"
        assert match.merge is None  # its store: the matmul's epilogue (_head_merge)
        _grouped_store(w, name, out, sk)
        epi = f"{name}_out{{{epi}, &a_.o, &a_.s}}"
        pre_args = "{&a_.q, &a_.s}"
    x3 = ", ".join("false" if one_tf32_product([k]) else "true" for k in (first, out))
    x3 += _elements(first, out)
    builds = [(dk, dv, 1) for dk, dv in _builds(first, out)]
    entries = (name, f"{name}_n")[:len(builds)]
    if max(builds[-1][:2]) <= FEW_DMAX:  # few rows (split 3) and the decode rows (0)
        builds += [(*builds[-1][:2], 3), (*builds[-1][:2], 0)]
        entries += (f"{name}_f", f"{name}_d")
    if split_build(first, out, builds[-1][:2]):  # its own entry: its own registers
        builds.append((*builds[-1][:2], 2))
        entries += (f"{name}_s",)
    for entry, (dk, dv, split) in zip(entries, builds):
        # the split build runs where blocks are fewer than SMs: one a SM, so ptxas need not
        # fit three (GPT-2 1 x 128 with its causal mask from ramps: 168 registers and a
        # spill, 16.3 -> 18.5 us; 210 and none so)
        # (and the few rows' entries: blocks are few there, and ptxas spilled the decode
        # rows' to fit four an SM in 128 registers)
        bounds = f"{THREADS}" if split == 1 else f"{THREADS}, 1"
        call = {0: f"cv_attention_rows<{x3}>", 3: f"cv_attention_few<{x3}>"}.get(
            split, f"cv_attention<{dk}, {dv}, {x3}>")
        with w.block(f'extern "C" __global__ void __launch_bounds__({bounds}) '
                     f"{entry}(const __grid_constant__ {name}_args a_)"):
            w.line(f"{call}(a_.ops[0], a_.ops[1], a_.ops[2], {nz}, {t}, "
                   f"a_.q.n[{first.nloops - 1}], a_.q.t[0].k, a_.o.n[{on - 1}], {split}, "
                   f"cv_att_then<{name}_pre, {name}_score>{{{pre_args}, {{&a_.s}}}}, {epi});")
    decl = Writer()
    cuda.args_struct(sk, decl)
    with decl.block("typedef struct", f"}} {name}_args;"):
        decl.line(f"{first.name}_args q;")
        decl.line(f"{sk.name}_args s;")
        decl.line(f"{out.name}_args o;")
        decl.line("cv_att_in ops[4];  /* Q, K, V, the merged output */")
    return AttentionKernel(name, match, sk, first, out,
                           '#include "cuvil_aot/cuda_attention.h"\n' + w.text(), decl.text(),
                           copies, None if merge is None else kernels[merge], entries)


def _score_functor(name: str, match: Match, row: Group, buffers: set[int],
                   hoisted: dict[int, str]) -> tuple[CudaKernel, Writer] | None:
    """``{name}_score``: the softmax group's x at (z, row, col), the first matmul's value
    there being ``s``; its own kernel (argument struct) for the wrapper to fill."""
    em = ScoreEmitter(f"{name}_score", row, buffers, match.score_buffer, hoisted)
    nloops = em.nloops
    body = GpuBody(Writer())
    value = em.expr(match.x, identity(nloops), body)
    if em.k.gathers:
        return None
    w = Writer()
    with w.block(f"struct {name}_score", "};"):
        w.line(f"const {name}_score_args *a;")
        with w.block("__device__ __forceinline__ float operator()(int64_t z, int64_t row, "
                     "int64_t col, float s) const"):
            prologue(em.k, w, "int64_t")
            w.line("int64_t rem = z; (void)rem;")
            for v in range(nloops - 3, -1, -1):
                w.line(f"const int64_t i{v} = rem % a->n[{v}]; rem /= a->n[{v}]; (void)i{v};")
            w.line(f"const int64_t i{nloops - 2} = row, i{nloops - 1} = col;")
            w.line(f"(void)i{nloops - 2}; (void)i{nloops - 1};")
            w.extend(body.w)
            w.line(f"return (float)({value});")
    return em.k, w


def _grouped_store(w: Writer, name: str, out: CudaKernel, sk: CudaKernel) -> None:
    """``{name}_out``: the output's store at head z (of B·H) and row i (of T) of a grouped
    match, as the second matmul's epilogue at (z / n, (z % n)·T + i), n = its rows / T."""
    t = f"s->n[{sk.nloops - 2}]"
    with w.block(f"struct {name}_out", "};"):
        w.line(f"{out.name}_epi epi;")
        w.line(f"const {out.name}_args *o;")
        w.line(f"const {sk.name}_args *s;")
        with w.block("__device__ __forceinline__ void operator()(int64_t z, int64_t i, "
                     "int64_t c, float v) const"):
            w.line(f"const int64_t n = o->n[1] / {t};")
            w.line(f"epi(z / n, (z % n) * {t} + i, c, v);")


def _pre_functor(name: str, first: CudaKernel, buffers: set[int],
                 hoisted: dict[int, str], grouped: CudaKernel | None = None) -> Writer | None:
    """``{name}_pre``: the first matmul's epilogue value (its root) from the accumulator,
    read through that GEMM kernel's own arguments: the same expression its ``_epi``
    stores, so the same operands in the same order (checked: else None). ``grouped``: the
    score kernel of a grouped match, whose T turns the kernel's (z, i) of B·H heads into
    the matmul's (z / n, (z % n)·T + i)."""
    group = first.group
    em = CudaEmitter(f"{name}_pre", group, buffers, hoisted)
    body = GpuBody(Writer())
    root = group.roots[0]
    value = em.expr(root, root_map(group, root), body)
    k = em.k
    same = len(k.operands) <= len(first.operands) and all(
        a.base is b.base and a.view == b.view and a.map == b.map and a.dest is None
        for a, b in zip(k.operands, first.operands))
    if not same or k.gathers or not set(k.scalars) <= set(first.scalars) \
            or not k.symbols <= first.symbols:
        return None
    loop_vars = "int64_t i0, int64_t i1, int64_t i2" if em.nloops == 3 else \
        "int64_t, int64_t i0, int64_t i1"
    if grouped is not None:
        loop_vars = "int64_t z, int64_t i, int64_t i2"
    w = Writer()
    with w.block(f"struct {name}_pre", "};"):
        w.line(f"const {first.name}_args *a;")
        if grouped is not None:
            w.line(f"const {grouped.name}_args *s;")
        with w.block(f"__device__ __forceinline__ float operator()({loop_vars}, float acc) "
                     "const"):
            if grouped is not None:
                t = f"s->n[{grouped.nloops - 2}]"
                w.line(f"const int64_t n = a->n[1] / {t}, i0 = z / n, i1 = (z % n) * {t} + i;")
                w.line("(void)i0; (void)i1; (void)i2;")
            prologue(k, w, "int64_t")
            w.extend(body.w)
            w.line(f"return (float)({value});")
    return w


def _elements(first: CudaKernel, out: CudaKernel) -> str:
    """cv_attention's template arguments TQ, TK, TV (after a comma) where an operand is
    not float32, else none (their defaults: float)."""
    q, kt = first.group.terms[0].srcs
    dtypes = (q.dtype, kt.dtype, out.group.terms[0].srcs[1].dtype)
    return "" if dtypes == ("float32",) * 3 else "".join(f", {STORAGE[d]}" for d in dtypes)


def split_build(first: CudaKernel, out: CudaKernel, build: tuple[int, int]) -> bool:
    """Whether the build of head dims ``build`` has a split entry (``{name}_s``: a block's
    keys split between two halves of its warps, cv_attention_tf32): the TF32 kernel (not
    all three operands bfloat16), both head dims at most 64 (both halves' tiles fit)."""
    tf32 = "cv_bf16, cv_bf16, cv_bf16" not in _elements(first, out)
    return tf32 and build[0] <= 64 and build[1] <= 64


def _store(merge: CudaKernel) -> str:
    """The functor storing into the merge kernel's buffer, of its element."""
    dtype = merge.group.roots[0].dtype
    return "cv_att_store{&a_.ops[3]}" if dtype == "float32" else \
        f"cv_att_store_as<{STORAGE[dtype]}>{{&a_.ops[3]}}"


def _builds(first: CudaKernel, out: CudaKernel) -> list[tuple[int, int]]:
    """cv_attention's head-dim template arguments per entry point: both head dims rounded
    up to a multiple of 32 where they are known here, else 128 (the host checks them
    against DMAX); then, where one is known only at run time and every known one is at
    most 64, a build with 64 for the unknown ones (the host picks it where they fit: 168
    registers, 3 blocks an SM, against 226 and 2 at 128)."""
    dk, dv = head_dims(first, out)
    wk, wv = (-(-d.value // 32) * 32 if d.is_static and 0 < d.value <= DMAX else DMAX
              for d in (dk, dv))
    if (dk.is_static and dv.is_static) or any(d.is_static and d.value > 64 for d in (dk, dv)):
        return [(wk, wv)]
    return [(wk, wv), (wk if dk.is_static else 64, wv if dv.is_static else 64)]


def head_dims(first: CudaKernel, out: CudaKernel) -> tuple[Dim, Dim]:
    """Q/K's head dim (the first matmul's k: its A operand's last axis) and V's."""
    return first.group.terms[0].srcs[0].shape[-1], out.group.space.shape[-1]


def _one_read(k: CudaKernel) -> bool:
    """A head copy kernel reads one operand, without a gather (else it runs as before)."""
    return not k.gathers and sum(op.dest is None for op in k.operands) == 1 \
        and len(k.operands) == 2
