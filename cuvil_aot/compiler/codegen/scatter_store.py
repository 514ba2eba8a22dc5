"""A scatter's store inside a kernel (the CPU's and the GPU's): the store of gather_access
turned around. The kernel loops over the value's shape; its index arrays are computed
inline at their part of the loop (value axes ``at`` .. ``at + len(S)``), each index
wrapped once and checked, and the value stored at the affine part of the destination
map (the sliced, non-indexed axes) plus index * stride along each indexed axis.

The strides of the indexed axes are kernel arguments registered as a gather's are
(``a->g{j}_{axis}`` in ``Kernel.gathers``): so the wrapper fills them, an index out of
range reports itself through ``a->gerr`` (NumPy's IndexError after the kernels; nothing
is stored for it), and the CUDA ``_flat`` body is never taken. The CPU runs a scatter's
kernel on one thread, in C order of the value (codegen/launch.py), without ``omp simd``
or streaming stores (c.py): the last write of a duplicate index wins, as in NumPy. On
the GPU the writes of a duplicate index race: one of them wins.

Before (``x[ids] = v``: x f32[N, D] the buffer p0, ids i64[K], v f32[K, D]; loops i0, i1)::

    store v[i0, i1] to scatter(%x, %v, %ids, (0,), 0, ...)

After::

    const int64_t v2 = (int64_t)(v1);                 /* v1 = ids[i0] */
    const int64_t v3 = v2 < 0 ? v2 + a->sym_N : v2;
    const cv_bool v4 = (uint64_t)v3 < (uint64_t)a->sym_N;
    if (!v4) <report v2, axis 0, size N>
    if (v4) p0[i1 * s0_1 + v3 * a->g0_0] = (float)(v0);
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cuvil_aot.compiler.codegen import gather_access, ops_c
from cuvil_aot.compiler.ir.group import Dest, Group
from cuvil_aot.compiler.ir.indexing import IndexMap, zero
from cuvil_aot.compiler.ir.node import Node

if TYPE_CHECKING:
    from cuvil_aot.compiler.codegen.kernel_emitter import Body, KernelEmitter


def writes(group: Group) -> bool:
    """Whether a kernel stores through index arrays (a scatter's kernel)."""
    return any(d.scatter is not None for d in group.dests)


def dest_map(node: Node, m: IndexMap) -> IndexMap:
    """The affine part of scatter ``node``'s store at value index map ``m``: each sliced
    axis at its start plus step times its loop index, 0 on the indexed axes (the index
    terms are added by ``store``)."""
    axes, at, starts, steps = node.attrs
    n = len(node.srcs[2].shape)
    nloops = len(m[0].coeffs) if m else 1  # a 0-d value's kernel runs one loop of one trip
    out = []
    p = 0  # the position of the next sliced axis among the value's other axes
    for a in range(len(node.shape)):
        if a in axes:
            out.append(zero(nloops))
            continue
        v = p if p < at else p + n
        out.append(m[v].scaled(steps[a]).plus(starts[a]))
        p += 1
    return tuple(out)


def store(em: KernelEmitter, dest: Dest, m: IndexMap, value: str, body: Body) -> None:
    """``value`` (the value at ``m``) stored where the scatter's index arrays say."""
    node = dest.scatter
    if node is None:
        raise RuntimeError("scatter_store.store: a destination without a scatter")
    axes, at = node.attrs[0], node.attrs[1]
    n = len(node.srcs[2].shape)
    j = em.operand(dest.buffer, None, dest_map(node, m), dest)
    terms, oks = [], []
    for k, ix in enumerate(node.srcs[2:]):
        axis = axes[k]
        index = em.expr(ix, m[at:at + n], body)
        size = gather_access.size_expr(em, node.shape[axis])
        raw = body.local("int64_t", f"(int64_t)({index})")
        if ix.dtype == "uint64":  # no negative values: never wrapped
            pos, ok = raw, body.local("cv_bool", f"(uint64_t)({index}) < (uint64_t)({size})")
        else:
            pos = body.local("int64_t", f"{raw} < 0 ? {raw} + ({size}) : {raw}")
            ok = body.local("cv_bool", f"(uint64_t){pos} < (uint64_t)({size})")
        em.report(ok, raw, axis, size, body, 1)
        field = f"g{j}_{axis}"
        em.k.gathers[field] = (j, axis)
        terms.append(f"{pos} * a->{field}")
        oks.append(ok)
    offset = " + ".join([em.offset(j, body), *terms])
    stored = ops_c.store(dest.buffer.dtype, value)
    body.w.line(f"if ({' && '.join(oks)}) p{j}[{offset}] = {stored};")
