"""The host side of a GEMM that reads int8 weights (``x @ (q * s).T``; ir/quantized.py) on
the GPU: the fused int8 GEMV's argument (cv_gemv_q8, cuda_q8.h) where the call allows it,
else the weight dequantized into scratch for the float32 GEMM (cv_dequant_q8)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from cuvil_aot.compiler.codegen.cuda_emitter import CudaKernel
from cuvil_aot.compiler.codegen.gpu_plan import GpuPlan, module_symbol, unit_of
from cuvil_aot.compiler.codegen.launch import dim
from cuvil_aot.compiler.codegen.writer import Writer
from cuvil_aot.compiler.ir.quantized import Quantized

if TYPE_CHECKING:
    from cuvil_aot.compiler.codegen.gpu_launch import GpuStorage


def _scale_strides(st: GpuStorage, quant: Quantized) -> tuple[str, str]:
    """The scale's strides along the output and the group axes (0 where it has none)."""
    ss = st.strides(quant.scale, None)
    out, group = quant.out_axis, quant.group_axis
    return ("0" if out is None else ss[out]), ("0" if group is None else ss[group])


def fused_q8(w: Writer, k: CudaKernel, st: GpuStorage, quant: Quantized) -> None:
    """q8: the fused int8 GEMV (cv_gemv_q8, cuda_q8.h) runs this call's GEMM, reading the
    weight as int8 from a.q8: x @ (q * s).T (not (q * s) @ x), at most 16 rows of x over
    all batches, q contiguous along k, k < 2^32. vec (16-byte loads): per channel always
    (each row from its first aligned byte), per group where rows are aligned and the group
    a multiple of 16; else byte loads. Else (q8 == 0) the weight is dequantized."""
    nloops = k.nloops
    qs = st.strides(quant.q, None)
    s_os, s_gs = _scale_strides(st, quant)
    rows = f"a.n[0] * a.n[{nloops - 2}]" if nloops == 3 else f"a.n[{nloops - 2}]"
    w.line(f"const int q8 = {rows} <= 16 && ({qs[1]}) == 1 && {dim(quant.q.shape[1])} < "
           "((int64_t)1 << 32);")
    with w.block("if (q8)"):
        q, s = st.data(quant.q), st.data(quant.scale)
        group = dim(quant.group) if quant.group is not None else "0"
        w.line(f"const int64_t q8g = ({group}) > 0 ? ({group}) : 0;")
        w.line(f"a.q8 = (cv_q8_weight){{(const int8_t *)({q}), (const float *)({s}), {qs[0]}, "
               f"q8g, {s_os}, {s_gs}, q8g == 0 || (q8g % 16 == 0 && (uintptr_t)({q}) % 16 == 0 "
               f"&& ({qs[0]}) % 16 == 0)}};")


def dequantize(w: Writer, k: CudaKernel, st: GpuStorage, quant: Quantized, gp: GpuPlan,
                g: int) -> None:
    """The int8 weight dequantized into qw[g] (scratch of the call, or an array where the
    device has no pools) by cv_dequant_q8 (cuda_q8.h), for the float32 GEMM: the first
    step on the GPU, correct where the CPU's gemm_q8 reads int8 in registers."""
    qs = st.strides(quant.q, None)
    s_os, s_gs = _scale_strides(st, quant)
    group = dim(quant.group) if quant.group is not None else dim(quant.q.shape[1])
    w.line(f"if (qw_on[{g}]) {{ api->gpu->scratch_free(&qw[{g}], stream); qw_on[{g}] = 0; }}")
    w.line(f"if (qw_held[{g}]) {{ api->gpu->release(&qw[{g}]); qw_held[{g}] = 0; }}")
    with w.block(""):
        w.line(f"const int r = api->gpu->scratch(dev, CV_DT_FLOAT32, 2, qshape, stream, "
               f"&qw[{g}]);")
        w.line("if (r < 0) goto done;")
        w.line(f"qw_on[{g}] = r == 0;")
    with w.block(f"if (!qw_on[{g}])"):
        w.line(f"if (api->gpu->empty(&ga[first], CV_DT_FLOAT32, 2, qshape, &qw[{g}]) < 0) "
               "goto done;")
        w.line(f"qw_held[{g}] = 1;")
    w.line(f"const cv_dequant_q8_args dq = {{(const int8_t *)({st.data(quant.q)}), "
           f"(const float *)({st.data(quant.scale)}), (float *)qw[{g}].data, qshape[0], "
           f"qshape[1], ({group}) > 0 ? ({group}) : 1, {qs[0]}, {qs[1]}, "
           f"{s_os}, {s_gs}}};")
    w.line(f"if (qshape[0] * qshape[1] > 0 && api->gpu->launch(&{module_symbol(k.name)}, "
           f"dev, {gp.dequant[unit_of(k.name)]}, cv_gpu_grid(qshape[0] * qshape[1], "
           f"CV_DEQUANT_Q8_BLOCK, sm, 8), 1, CV_DEQUANT_Q8_BLOCK, 0, stream, (void *)&dq) < 0) "
           "goto done;")
