"""SCAN CUDA kernels: per row of the kept axes, one pass along the row (c_scan.py is the
CPU twin). ``_r32``/``_r64`` (32- or 64-bit offsets) run ``{kernel}_scan``:

- a running sum, product, maximum or minimum: a warp per row, 32 elements per step, each
  step an inclusive scan by shuffles plus the carry of the steps before (integers wrap
  exactly as NumPy's; floats add in a tree within a step, so they round differently from
  NumPy's sequential sum, within the tests' tolerance; np.maximum and np.minimum are
  associative, the first NaN and the last of tied values winning in any grouping, so the
  extrema are NumPy's exactly; lanes past the row's end hold the identity, the start);
- a sort: a block per row; a row of up to CV_SORT_SHARED keys is sorted in shared
  memory by a bitonic network, a longer one ranks each key by counting the keys before
  it (cuda_rowsort.h). Ties go by position: np.argsort(kind="stable")'s permutation.

A call with a scan kernel is launched kernel by kernel, never as one cooperative
kernel (gpu_plan.py).
"""

from __future__ import annotations

from cuvil_aot.compiler.codegen import ops_c, ops_cuda
from cuvil_aot.compiler.codegen.c_scan import RUNNING, combine, init, scan_root
from cuvil_aot.compiler.codegen.cuda_emitter import CudaEmitter, CudaKernel, GpuBody
from cuvil_aot.compiler.codegen.cuda_geometry import BLOCK
from cuvil_aot.compiler.codegen.cuda_pieces import decompose, entry, product, prologue, sizes
from cuvil_aot.compiler.codegen.writer import Writer
from cuvil_aot.compiler.ir.indexing import identity
from cuvil_aot.compiler.ir.node import Node
from cuvil_aot.compiler.ir.ops import Op

INCLUDE = '#include "cuvil_aot/cuda_rowsort.h"'
# the type a value crosses a shuffle in (__shfl_*_sync has no 8- or 16-bit versions)
SHUFFLE = {"float": "float", "double": "double", "int64_t": "long long",
           "uint64_t": "unsigned long long"}
FULL = "0xffffffffu"


def scan_kernels(em: CudaEmitter, w: Writer) -> None:
    """``{kernel}_scan<I>`` and its entry points."""
    k = em.k
    root, axis = scan_root(em)
    kept = list(em.group.space.kept_axes)
    inner = Writer()
    if root.op in RUNNING:
        _warp_scan(em, inner, root, axis, kept)
    else:
        _block_sort(em, inner, root, axis, kept)
    w.line(INCLUDE)
    with w.block(f"template <class I> static __device__ __forceinline__ void "
                 f"{k.name}_scan(const {k.name}_args *a)"):
        prologue(k, w, "I")
        sizes(k, w, "I")
        w.line(f"const I rows = {product(kept)}, len = n{axis};")
        w.extend(inner)
    entry(w, k, "r32", f"{BLOCK}", f"{k.name}_scan<int32_t>(a);")
    entry(w, k, "r64", f"{BLOCK}", f"{k.name}_scan<int64_t>(a);")


def _warp_scan(em: CudaEmitter, w: Writer, root: Node, axis: int, kept: list[int]) -> None:
    m = identity(em.nloops)
    ctype = ops_c.CTYPE[root.dtype]
    shuffle = SHUFFLE.get(ctype, "int")
    start = f"({ctype}){init(root.op, root.dtype)}"
    w.line("const I lane = (I)(threadIdx.x % 32), warps = (I)(blockDim.x / 32);")
    with w.block("for (I row = (I)blockIdx.x * warps + (I)(threadIdx.x / 32); row < rows; "
                 "row += (I)gridDim.x * warps)"):
        decompose(w, kept, "row", "I")
        w.line(f"{ctype} carry = {start};")
        with w.block("for (I base = 0; base < len; base += 32)"):
            w.line(f"const I i{axis} = base + lane;")
            w.line(f"{ctype} x = {start};")
            with w.block(f"if (i{axis} < len)"):
                w.line(f"x = {em.expr(root.srcs[0], m, GpuBody(w))};")
            w.line("#pragma unroll")
            with w.block("for (int d = 1; d < 32; d <<= 1)"):
                w.line(f"const {ctype} y = ({ctype})__shfl_up_sync({FULL}, ({shuffle})x, d);")
                step = combine(root.op, root.dtype, 'y', 'x', ops_cuda.render)
                w.line(f"if (lane >= d) x = {step};")
            w.line(f"x = {combine(root.op, root.dtype, 'carry', 'x', ops_cuda.render)};")
            with w.block(f"if (i{axis} < len)"):
                em.store(root, em.group.dests[0], m, "x", GpuBody(w))
            w.line(f"carry = ({ctype})__shfl_sync({FULL}, ({shuffle})x, 31);")


def _block_sort(em: CudaEmitter, w: Writer, root: Node, axis: int, kept: list[int]) -> None:
    m = identity(em.nloops)
    src, dest = root.srcs[0], em.group.dests[0]
    ktype = ops_c.CTYPE[src.dtype]

    def key(at: str, prefix: str) -> str:
        """The row's key at position ``at``: i{axis} redeclared in the current block."""
        w.line(f"const I i{axis} = {at};")
        body = GpuBody(w)
        body.prefix = prefix
        return em.expr(src, m, body)

    def store(at: str, value: str) -> None:
        with w.block(""):
            w.line(f"const I i{axis} = {at};")
            em.store(root, dest, m, value, GpuBody(w))

    w.line(f"__shared__ {ktype} keys[CV_SORT_SHARED];")
    w.line("__shared__ int32_t pos[CV_SORT_SHARED];")
    w.line("const I tid = (I)threadIdx.x, team = (I)blockDim.x;")
    with w.block("for (I row = (I)blockIdx.x; row < rows; row += (I)gridDim.x)"):
        decompose(w, kept, "row", "I")
        with w.block("if (len <= CV_SORT_SHARED)"):
            with w.block("for (I j = tid; j < len; j += team)"):
                w.line(f"keys[j] = {key('j', 'v')};")
                w.line("pos[j] = (int32_t)j;")
            w.line("cv_block_sort(keys, pos, (int)len);")
            with w.block("for (I j = tid; j < len; j += team)"):
                store("j", "keys[j]" if root.op is Op.SORT else "(int64_t)pos[j]")
            w.line("__syncthreads();  /* the next row reuses keys and pos */")
        with w.block("else for (I j = tid; j < len; j += team)"):  # rank by counting
            w.line(f"{ktype} mine;")
            with w.block(""):
                w.line(f"mine = {key('j', 'v')};")
            w.line("I rank = 0;")
            with w.block("for (I q = 0; q < len; q++)"):
                other = key("q", "u")
                w.line(f"rank += cv_sort_before({other}, q, mine, j);")
            store("rank", "mine" if root.op is Op.SORT else "(int64_t)j")


def launch_scan(w: Writer, k: CudaKernel, first: int, g: int) -> None:
    """Kernel g's launch into L[g] (gpu_launch.py): a warp per row for a running sum or
    product, a block per row for a sort; 32-bit offsets where they fit."""
    space = k.group.space
    axis = space.reduce_axes[0]
    per_block = BLOCK // 32 if k.group.roots[0].op in RUNNING else 1
    w.line(f"const int64_t rows = {' * '.join(f'a.n[{v}]' for v in space.kept_axes) or '1'}, "
           f"len = a.n[{axis}];")
    with w.block("if (rows > 0 && len > 0)"):
        w.line(f"const int fits = cv_gpu_fits32(a.n, {k.nloops}, &a.s[0][0], "
               f"{len(k.operands)}, rows * len);")
        w.line(f"const int kid = {first} + (fits ? 0 : 1);")
        w.line(f"const uint32_t block = {BLOCK}, gy = 1, "
               f"grid = cv_gpu_grid(rows, {per_block}, sm, 8);")
        w.line(f"L[{g}] = (cv_gpu_plan){{kid, grid, gy, block, 1, 0}};")
    w.line("small = 0;  /* a scan is never a phase of the one-kernel */")
