"""The Hopper GEMM (cuda_gemm_wgmma.h: wgmma fed by TMA, sm_90a) as one more entry point of
a unit's float32 shared main loops (cuda_gemm.py), ``{unit}_gemm_f32_wg``, and the host code
that picks it at call time (gpu_launch.py).

Only units built for sm_90 (GpuTargets.sass holds 90: nvcc.py builds it as sm_90a) with a
float32 GEMM get it: the header and the entry cost nvcc time. At call time a GEMM runs it
where the device runs the unit as sm_90a (api->gpu->wgmma) and the runtime made every
term's tensor maps (16-byte aligned bases, row and batch strides): over the operands as
they are where both are K-major (``x @ w.T``: A with k contiguous, B with k contiguous),
else over K-major copies of those that are not (``x @ w`` of an (in, out) weight: for 3xTF32 read
as it is, its tiles transposed in shared memory as they are split, cv_gpu_wg_maps_nmajor;
else B transposed into scratch of the call by cv_transpose_f32 first, gpu_wg_copies.py)
where gpu_wrap.h's model says they pay; else cv_gemm_tc as before. Its argument: the
tensor maps, then the shared main loops' tagged argument::

    typedef struct { cv_tmap map[4]; f0_gemm_f32_args a; } f0_gemm_f32_wg_args;
    extern "C" __global__ void __launch_bounds__(384, 1)
    f0_gemm_f32_wg(const __grid_constant__ f0_gemm_f32_wg_args w_) {
        const cv_gemm_job j = f0_gemm_f32_job(&w_.a);
        cv_gemm_wgmma_job<CV_WG_TF32X3, 128, 3>(w_.map, j.t, j.nterms, ..., f0_gemm_f32_epi{&w_.a});
    }

3xTF32 (float32 accuracy) in general; one TF32 product where cuda_gemm.one_tf32_product says
every operand of the unit is a TF32 number (the tf32, bf16-cast and fp16 policies).
Few tiles: split-K (cv_gpu_wg_split, gpu_wrap.h), the partial sums added by the unit's
_ksum; many: a persistent grid of one block per SM.
"""

from __future__ import annotations

from dataclasses import dataclass

from cuvil_aot.compiler.codegen.cuda_emitter import CudaKernel
from cuvil_aot.compiler.codegen.cuda_gemm import one_tf32_product
from cuvil_aot.compiler.codegen.writer import Writer
from cuvil_aot.compiler.ir.group import Kind
from cuvil_aot.compiler.ir.indexing import identity, through
from cuvil_aot.compiler.ir.node import Node
from cuvil_aot.compiler.ir.ops import MOVEMENT

WG_TERMS = 4  # a GEMM of more terms runs cv_gemm_tc (each term adds 256 bytes of maps)
WG_THREADS = 384  # a producer warpgroup and two consumers
WG_BM = 128
WG_ARCH = 90  # the compute capability (x10) whose SASS nvcc.py builds as sm_90a


@dataclass(frozen=True)
class WgConfig:
    """One kind of the header's main loop: CV_WG_* kind, tile width and stages."""

    kind: str
    bn: int
    stages: int
    x3: bool

    @property
    def smem(self) -> int:
        """cv_wg_cfg<...>::SMEM: the stages, the epilogue's bands, the alignment slack."""
        stage = (WG_BM * 128 + self.bn * 128) * (2 if self.x3 else 1)
        return self.stages * stage + 8 * 16 * 33 * 4 + 1024


# Timed on the H200 (bench/gpu/h200_2026-12-03): 3xTF32 128-wide tiles, 3 stages (95
# TFLOP/s at 4096^3); one TF32 product 256-wide, 4 stages (369); bfloat16 operands (the
# bf16 main loops, CudaKernel.loops) 256-wide, 4 stages (678 in bench/gpu/wgmma_probe.cu)
X3 = WgConfig("CV_WG_TF32X3", 128, 3, True)
ONE = WgConfig("CV_WG_TF32", 256, 4, False)
BF16 = WgConfig("CV_WG_BF16", 256, 4, False)
# bfloat16's second entry, ``_wg192``: 192-wide tiles where they fill the SMs in fewer
# tile-widths of time (cv_gpu_wg_bn): N = 768 in 128 tiles where 256-wide ones make 96
BF16_192 = WgConfig("CV_WG_BF16", 192, 4, False)
# cv_gpu_wg_split's model of each kind's rate (gpu_wrap.h), and the operands' bytes
SPLIT_MODEL = {X3.kind: 1, ONE.kind: 0, BF16.kind: 2}


def eligible(k: CudaKernel, buffers: set[int]) -> bool:
    """GEMM kernel ``k`` may run the wgmma main loop: float32 accumulation of float32 (or, in
    the bf16 main loops, bfloat16) operands, at most WG_TERMS terms. A float32 GEMM's
    operand layout is decided at call time: K-major as they are (``x @ w.T``), or copied
    K-major first (``x @ w`` of an (in, out) weight: gpu_wg_copies.py). The copies are
    float32, so a bfloat16 GEMM needs every term's B possibly K-major: not, read as stored
    from a C-ordered parameter or buffer (ids in ``buffers``), stepping along n in its last
    axis, whose unit then skips the entry (nvcc's time)."""
    terms = k.group.terms
    bf16 = k.loops == "bf16"
    operand = "bfloat16" if bf16 else "float32"
    return k.group.kind is Kind.GEMM and k.acc_type == "float" and \
        0 < len(terms) <= WG_TERMS and \
        all(s.dtype == operand for t in terms for s in t.srcs) and \
        (not bf16 or all(_b_may_be_k_major(t.srcs[1], buffers) for t in terms))


def _b_may_be_k_major(b: Node, buffers: set[int]) -> bool:
    rank = len(b.shape)
    node, m = b, identity(rank)
    while node.op in MOVEMENT and id(node) not in buffers:  # as launch.matmul_operand
        sub = through(node, m, rank)
        if sub is None:  # a view of a regrouped buffer: its strides decide at run time
            return True
        node, m = node.srcs[0], sub
    if not m:
        return True
    last = m[-1]  # the stored array's contiguous axis, C-ordered
    return last.uses(rank - 2) or not last.uses(rank - 1)


def config(kernels: list[CudaKernel]) -> WgConfig:
    if kernels[0].loops == "bf16":
        return BF16
    return ONE if one_tf32_product(kernels) else X3


def struct(name: str, eligible_kernels: list[CudaKernel]) -> str:
    """The entry's argument, two maps per term of the widest eligible GEMM (the same text in
    C, gpu_wrap.h's cv_tmap, and C++, the header's)."""
    nmaps = 2 * max(len(k.group.terms) for k in eligible_kernels)
    return f"typedef struct {{ cv_tmap map[{nmaps}]; {name}_args a; }} {name}_wg_args;\n"


def entry_suffixes(loops: str) -> tuple[str, ...]:
    """The wgmma entries of shared main loops of key ``loops``, in kernel-table order."""
    return ("_wg", "_wg192") if loops == "bf16" else ("_wg",)


def entry(name: str, kernels: list[CudaKernel]) -> str:
    """The ``_wg`` entry point of the shared main loops ``name`` (and bfloat16's
    ``_wg192``)."""
    configs = [config(kernels)] + ([BF16_192] if config(kernels) is BF16 else [])
    w = Writer()
    for c, suffix in zip(configs, entry_suffixes(kernels[0].loops)):
        with w.block(f'extern "C" __global__ void __launch_bounds__({WG_THREADS}, 1) '
                     f"{name}{suffix}(const __grid_constant__ {name}_wg_args w_)"):
            w.line(f"static_assert(cv_wg_cfg<{c.kind}, {c.bn}, {c.stages}>::SMEM == {c.smem}, "
                   '"cuda_wgmma.WgConfig.smem");')
            w.line(f"const cv_gemm_job j = {name}_job(&w_.a);")
            w.line(f"cv_gemm_wgmma_job<{c.kind}, {c.bn}, {c.stages}>(w_.map, j.t, j.nterms, "
                   f"j.m, j.n, j.nb, j.split, reinterpret_cast<float *>(j.part), "
                   f"{name}_epi{{&w_.a}}, j.row0);")
    return w.text()


def choose(w: Writer, k: CudaKernel, kernels: list[CudaKernel], kid: int, table: str,
           g: int) -> None:
    """Inside gpu_launch's tiled branch, after the cv_gemm_tc choice (``tc`` 2: both
    operands K-major and aligned): the wgmma main loop (``wg``) where the device runs it
    (``wgl``: api->gpu->wgmma) and the runtime made the maps (into wg{g}.map); else, where
    the runtime allows copies (``wgl & 2``), over K-major copies of the operands that are
    not (3xTF32: an N-major B read as it is, cv_gpu_wg_maps_nmajor, where ``wgl & 8``; else
    copies, gpu_wg_copies.py; which into ``wtr``); its entry, block, shared memory, tiles and
    split-K (``wg_split``)."""
    c = config(kernels)
    nterms = len(k.group.terms)
    w.line(f"const int wgl = api->gpu->wgmma(&{table}, dev);")
    # bfloat16: the tile width that fills the SMs soonest, its entry the next for 192
    bn = "bn" if c is BF16 else str(c.bn)
    if c is BF16:
        w.line(f"const int bn = cv_gpu_wg_bn(m, n, nb, sm, {BF16_192.bn}, {BF16.bn});")
    # float32: where cv_gemm_tc could run (tc 2); bfloat16: the maps check the layout
    ready = "" if c is BF16 else "tc == 2 && "
    maps = "cv_gpu_wg_maps_bf16" if c is BF16 else "cv_gpu_wg_maps"
    w.line(f"wg = {ready}wgl && {maps}(api->gpu, wg{g}.map, a.t, {nterms}, m, n, nb, {bn});")
    if c is not BF16:  # N-major B read as it is (3xTF32), else copies (cv_transpose_f32)
        with w.block("if (!wg && (wgl & 2))"):
            if c.x3:  # wgl & 8: its tiles transposed as they are split (cuda_wg_split.h)
                w.line(f"wg = (wgl & 8) && cv_gpu_wg_maps_nmajor(api->gpu, wg{g}.map, a.t, "
                       f"{nterms}, m, n, nb, {c.bn});")
            with w.block("if (!wg)"):  # over K-major copies (gpu_wg_copies.py)
                w.line(f"const int r = cv_gpu_wg_transposed(api->gpu, dev, stream, wg{g}.map, "
                       f"a.t, {nterms}, m, n, nb, {c.bn}, {int(c.x3)}, tr{g}, wtm[{g}], "
                       f"wtm_on[{g}]);")
                w.line("if (r < 0) goto done;")
                w.line("wg = r > 0; wtr = r > 0 ? (uint32_t)r : 0;")
    with w.block("if (wg)"):
        if c is BF16:
            w.line(f"kid = {kid} + (bn == {BF16_192.bn}); block = {WG_THREADS}; "
                   f"wsmem = bn == {BF16_192.bn} ? {BF16_192.smem} : {c.smem};")
        else:
            w.line(f"kid = {kid}; block = {WG_THREADS}; wsmem = {c.smem};")
        w.line(f"ftiles = ((m + {WG_BM - 1}) / {WG_BM}) * ((n + {bn} - 1) / {bn});")
        depth = " + ".join(f"a.t[{t}].k" for t in range(nterms))
        # wgl & 4: the tail split allowed (CUVIL_AOT_CUDA_WG_TAIL), rows from a.split_row0
        w.line(f"wg_split = cv_gpu_wg_split(m, n, nb, {depth}, sm, {bn}, "
               f"{SPLIT_MODEL[c.kind]}, wgl & 4, &a.split_row0);")
