"""The host side of a GPU call's launches: each kernel's arguments, the entry point and
grid it runs with (from the shapes and strides at run time), and the one-kernel
(cuda_one.py) where the call's work is small.

The entry points, block sizes and row limits are the ones the kernels are written for
(cuda_geometry.py).
"""

from __future__ import annotations

from cuvil_aot.compiler.codegen import (
    batch_fold,
    cuda_one,
    cuda_wgmma,
    gpu_attention,
    gpu_int8,
    gpu_queue,
    gpu_wg_copies,
    ops_c,
    run_time_loops,
)
from cuvil_aot.compiler.codegen.cuda_elementwise import flat_condition, last_condition
from cuvil_aot.compiler.codegen.cuda_emitter import CudaKernel, unit_axis
from cuvil_aot.compiler.codegen.cuda_geometry import (
    BLOCK,
    DOT_COLS,
    DOT_MMA_COLS,
    DOT_ROWS,
    DOT_VARIANT,
    DOT_WIDE_BLOCK,
    ENTRIES,
    GEMV_BLOCK,
    GEMV_ROWS_BLOCK,
    QUARTER,
    QUARTER_ROW_MAX,
    ROW_BLOCK,
    ROW_CACHE,
    ROW_RUN,
    VEC,
)
from cuvil_aot.compiler.codegen.cuda_scan import launch_scan
from cuvil_aot.compiler.codegen.gpu_plan import GpuPlan, module_symbol, unit_of
from cuvil_aot.compiler.codegen.kernel_emitter import Operand
from cuvil_aot.compiler.codegen.launch import (
    Storage,
    dim,
    fill_args,
    int8_weight,
    matmul_operand,
    operand_setup,
)
from cuvil_aot.compiler.codegen.writer import Writer
from cuvil_aot.compiler.ir.group import Kind
from cuvil_aot.compiler.ir.node import Node
from cuvil_aot.compiler.ir.types import Dim

# A call on little work (every GEMM a GEMV, every other kernel at most ONE_WORK
# elements) runs as the call's one cooperative kernel.
ONE_WORK = 1 << 20


class GpuStorage(Storage):
    """Device arrays: parameters in ga[], buffers (outputs, intermediates) in gb[]."""

    def param_data(self, i: int) -> str:
        return f"ga[{i}].data"

    def buffer_data(self, b: int) -> str:
        return f"gb[{b}].data"

    def param_strides(self, i: int, base: Node) -> list[str]:
        return [f"ga[{i}].strides[{a}]" for a in range(len(base.shape))]


def launches(w: Writer, prefix: str, gp: GpuPlan, st: GpuStorage) -> None:
    """Plans each kernel's launch (its arguments into one.a{g}, its shape into L[g]),
    then launches the call's one-kernel where the work is small and the device runs it,
    else the kernels in turn, as one list (_queue). Run-time loops plan and launch each
    kernel in turn (a trip's sizes and split-K sums come from the one before)."""
    kernels = gp.kernels[prefix]
    w.line(f"{prefix}_one_args one; cv_gpu_plan L[{len(kernels)}];")
    w.line("memset(&one, 0, sizeof one); memset(L, 0, sizeof L);")
    for g, k in enumerate(kernels):  # the wgmma main loop's argument: its maps, then sh{g}
        if gp.wg_kid(k) is not None:
            shared, _ = gp.tag(k)
            w.line(f"{shared}_wg_args wg{g}; memset(&wg{g}, 0, sizeof wg{g});")
            gpu_wg_copies.declare_args(w, k, g)
    w.line(f"int small = {int(prefix in gp.one)}; (void)small;")
    spans = gp.loops.get(prefix, [])
    if spans:  # run-time loops: each kernel planned and launched in turn, no one-kernel

        def plan_and_launch(g: int, storage: GpuStorage) -> None:
            k = kernels[g]
            with w.block(""):
                if run_time_loops.in_body(spans, g):  # the previous iteration's split-K sums
                    w.line(f"if (kpart_on[{g}]) {{ api->gpu->scratch_free(&kpart[{g}], stream); "
                           f"kpart_on[{g}] = 0; }}")
                    if gp.wg_kid(k) is not None:
                        gpu_wg_copies.free_previous(w, g)
                fill_args(w, k, storage, "a")
                _launch(w, k, storage, gp, g)
                w.line(f"one.a{g} = a;")
                _launch_planned(w, k, gp, g)

        run_time_loops.run_kernels(w, prefix, len(kernels), spans, st, plan_and_launch)
        return
    gpu_attention.declare(w, gp, prefix)
    for g, k in enumerate(kernels):
        with w.block(""):
            fill_args(w, k, st, "a")
            fused = gpu_attention.role(gp, prefix, g)
            if fused is None:
                _launch(w, k, st, gp, g)
            else:  # the GEMMs' terms (Q, K, V) even where the attention kernel runs
                i, role = fused
                if k.group.kind is Kind.GEMM:
                    _gemm_terms(w, k, st, gp, g)
                if role == "out":
                    with w.block(f"if (attn{i})"):
                        gpu_attention.plan(w, gp, prefix, i, g, st)
                with w.block(f"if (!attn{i})"):
                    _launch(w, k, st, gp, g)
            w.line(f"one.a{g} = a;")
    if prefix in gp.one:
        w.line("int64_t one_grid = sm;")
        paired = []
        for g in range(len(kernels) - 1):
            offsets = cuda_one.tile_consumer(kernels, g)
            if offsets is not None:
                _tile_consumer_runs(w, g, offsets, alone=len(kernels) == 2)
                paired.append(g)
        # a cooperative launch only while a grid barrier is left
        left = " - ".join([str(len(kernels) - 1)] + [f"(one.runs[{g}] > 0)" for g in paired])
        w.line(f"static int one_off;  /* the device cannot run {prefix}_one */")
        with w.block("if (small && !one_off)"):
            w.line(f"const int r = api->gpu->launch_one(&{module_symbol(prefix)}, dev, "
                   f"{gp.one[prefix]}, "
                   f"(uint32_t)one_grid, {cuda_one.ONE_BLOCK}, stream, &one, {left} > 0);")
            w.line("if (r < 0) goto done;")
            w.line("one_off = r == 1;")
            w.line("small = r == 0;")
        w.line("else small = 0;  /* launched one by one below */")
    gpu_queue.queue(w, prefix, gp)


def _launch_planned(w: Writer, k: CudaKernel, gp: GpuPlan, g: int) -> None:
    """Launches kernel g as L[g] says (and its split-K sum) at once, in a run-time loop's
    body; a GEMM through its unit's shared main loops, its arguments tagged (cuda_gemm.py)."""
    table = module_symbol(k.name)
    if k.group.kind is not Kind.GEMM:
        w.line(f"if (L[{g}].run && api->gpu->launch(&{table}, dev, L[{g}].kid, "
               f"L[{g}].grid, L[{g}].gy, L[{g}].block, 0, stream, &one.a{g}) < 0) goto done;")
        return
    shared, tag = gp.tag(k)
    ksum = gp.entry(k, "ksum")
    with w.block(f"if (L[{g}].run)"):
        w.line(f"{shared}_args sh; memset(&sh, 0, sizeof sh); sh.tag = {tag}; "
               f"sh.u.m{tag} = one.a{g};")
        args = "&sh"
        if gp.wg_kid(k) is not None:
            w.line(f"if (L[{g}].wg) wg{g}.a = sh;")
            args = f"L[{g}].wg ? (void *)&wg{g} : (void *)&sh"
        gpu_wg_copies.launch_now(w, k, gp, g)
        w.line(f"if (api->gpu->launch(&{table}, dev, L[{g}].kid, L[{g}].grid, L[{g}].gy, "
               f"L[{g}].block, L[{g}].smem, stream, {args}) < 0) goto done;")
        w.line(f"if (L[{g}].sum_grid && api->gpu->launch(&{table}, dev, {ksum}, "
               f"L[{g}].sum_grid, 1, {BLOCK}, 0, stream, &sh) < 0) goto done;")


def _tile_consumer_runs(w: Writer, g: int, offsets: list[Dim], alone: bool) -> None:
    """one.runs[g]: kernel g + 1 runs inside kernel g's GEMV tiles (cuda_one.one_kernel) where
    a tile can hold every column its elements read: the GEMM's n is runs x the consumer's
    n', each offset a multiple of n' below n, and a tile's columns split into whole runs
    (of whole float4s where the GEMV reads float4). Runs of 8 columns where the tile stays
    8, 16 or 32 wide (1, 2 or 4 runs): each row of B then loads whole 32-byte sectors
    (runs of 4 read half sectors: a hand-written LSTM step took 5.2 us so against 3.7,
    H200, bench/gpu/lstm_probe.cu). Where the pair is the call (``alone``), a block per
    tile, no idle ones (8.5 us back to back against 9.2 with a block per SM)."""
    a, c = f"one.a{g}", f"one.a{g + 1}"
    with w.block(""):
        w.line(f"const int64_t n = {a}.n[1], n1 = {c}.n[1];")
        w.line("const int64_t runs = n1 > 0 && n % n1 == 0 ? n / n1 : 0;")
        # a power of two of columns per tile: its lanes split a warp evenly
        w.line(f"const int64_t cols = runs == 1 || runs == 2 || runs == 4 ? runs * 8 : {a}.cols;")
        conds = [f"one.v[{g}] > 0", f"{a}.cols > 0", "runs > 0", "cols % runs == 0",
                 f"{c}.n[0] == {a}.n[0]", f"(!{a}.vec || ((cols / runs) % 4 == 0 && n1 % 4 == 0))"]
        exprs = dict.fromkeys(dim(d) for d in offsets if d != Dim.of(0))
        conds += [f"({e}) >= 0 && ({e}) % n1 == 0 && ({e}) < n" for e in exprs]
        with w.block(f"if ({' && '.join(conds)})"):
            w.line(f"one.runs[{g}] = (int)runs; {a}.cols = cols;")
            if alone:
                w.line(f"const int64_t run = cols / runs, mr = one.v[{g}], "
                       f"tiles = (n1 + run - 1) / run * (({a}.n[0] + mr - 1) / mr);")
                w.line("if (tiles < one_grid) one_grid = tiles;")


def _unit_rows(k: CudaKernel) -> str:
    """C condition for ``_bcu32``: every operand that runs along the row does so with
    stride 1 and in aligned runs of ROW_RUN elements (aligned pointer, the row's length and
    the operand's other strides multiples of the run)."""
    axis = unit_axis(k)
    if axis is None:
        return "0"
    run = ROW_RUN
    tests = [f"len % {run} == 0"]
    for j, op in enumerate(k.operands):
        if axis in op.support():
            tests += [f"a.s[{j}][{axis}] == 1",
                      f"(uintptr_t)a.p[{j}] % ({run} * sizeof({ops_c.STORAGE[op.dtype]})) == 0"]
            tests += [f"a.s[{j}][{v}] % {run} == 0" for v in op.support() if v != axis]
    return " && ".join(tests)


def _launch(w: Writer, k: CudaKernel, st: GpuStorage, gp: GpuPlan, g: int) -> None:
    """Kernel g's launch shape into L[g], its one-kernel variant into one.v[g], and
    whether its work is small enough for the one-kernel into `small`."""
    first = gp.first[k.name]
    launch = f"L[{g}] = (cv_gpu_plan){{kid, grid, gy, block, 1, 0}};"
    nloops, nops = k.nloops, len(k.operands)
    strides = "&a.s[0][0]"
    if k.group.kind is Kind.ELEMENTWISE:
        w.line(f"const int64_t total = {_product([f'a.n[{v}]' for v in range(nloops)])};")
        with w.block("if (total > 0)"):
            flat_condition(w, k)
            w.line(f"const int fits = cv_gpu_fits32(a.n, {nloops}, {strides}, {nops}, total);")
            last_condition(w, k)
            w.line(f"const int kid = {first} + (flat ? 2 : last ? 3 : fits ? 0 : 1);")
            w.line(f"const uint32_t grid = flat ? cv_gpu_grid_all((total + {VEC - 1}) / "
                   f"{VEC}, {BLOCK}) : cv_gpu_grid(last ? total / {VEC} : total, {BLOCK}, "
                   f"sm, 8), gy = 1, block = {BLOCK};")
            w.line(launch)
            w.line(f"one.v[{g}] = fits; small = small && fits && total <= {ONE_WORK};")
    elif k.group.kind is Kind.ROW:
        space = k.group.space
        w.line(f"const int64_t rows = {_product([f'a.n[{v}]' for v in space.kept_axes])};")
        w.line(f"const int64_t len = {_product([f'a.n[{v}]' for v in space.reduce_axes])};")
        with w.block("if (rows > 0)"):
            # a block per row for long rows, and for rows too few to keep the SMs busy
            w.line("const int few = len >= 64 && rows < 16 * (int64_t)sm, big = len > 1024 || few;")
            w.line(f"const int fits = cv_gpu_fits32(a.n, {nloops}, {strides}, {nops}, rows * len);")
            w.line(f"const int cached = big && fits && len <= {ROW_CACHE * ROW_BLOCK};")
            w.line(f"const int unit = {_unit_rows(k)};")
            # 8 lanes per short row where rows fill every SM that way (a ResNet head's
            # pooling at batch 256; at batch 1 its 512 rows took 1.68 us so, 1.51 a warp
            # each); every lane of a warp then has a row or none
            w.line(f"const int quarter = !big && fits && len <= {QUARTER_ROW_MAX} && "
                   f"rows >= {BLOCK // QUARTER} * (int64_t)sm && "
                   f"rows % {32 // QUARTER} == 0;")
            w.line(f"const int kid = {first} + (quarter ? 6 : "
                   "cached ? 4 + unit : (big ? 2 : 0) + (fits ? 0 : 1));")
            w.line(f"const uint32_t block = big ? {ROW_BLOCK} : {BLOCK}, gy = 1;")
            w.line(f"const uint32_t grid = cached ? cv_gpu_grid_all(rows, 1) : big ? "
                   f"cv_gpu_grid(rows, 1, sm, {2048 // ROW_BLOCK}) : "
                   f"cv_gpu_grid(rows, {BLOCK} / (quarter ? {QUARTER} : 32), sm, 8);")
            w.line(launch)
            # the one-kernel keeps a warp per short row: a quarter warp there made the
            # ResNet head at batch 1 slower (10.58 us against 10.19-10.38, H200)
            w.line(f"one.v[{g}] = big && len <= "
                   f"{cuda_one.ONE_ROW_CACHE * cuda_one.ONE_BLOCK} ? 4 : big;")
            w.line(f"small = small && fits && rows * len <= {ONE_WORK};")
    elif k.group.kind is Kind.SCAN:
        launch_scan(w, k, first, g)
    else:
        _gemm_terms(w, k, st, gp, g)
        if batch_fold.foldable(k):
            wg = gp.wg_kid(k) is not None
            few = "1" if k.loops == "bf16" else _transposed_weights(k)  # the dot GEMV
            if k.loops == "float":  # or the GEMV of 8-row tiles
                few = f"({few}) || ({_vec_rows_condition(k, 'nb * m')})"
            batch_fold.emit_cuda(w, k, module_symbol(k.name) if wg else None, few)
        else:
            batch = "a.n[0]" if nloops == 3 else "1"
            w.line(f"const int64_t nb = {batch}, m = a.n[{nloops - 2}], n = a.n[{nloops - 1}];")
        with w.block("if (nb * m * n > 0)"):
            w.line("uint32_t gy = (uint32_t)(nb < 65535 ? nb : 65535);")
            w.line("int kid, wg = 0, wg_split = 1, cl = 0;")
            w.line("uint32_t grid, block, wsmem = 0, wtr = 0;")
            # GEMV for a few rows; where B is a large transposed matrix (x @ w.T) the dot
            # GEMV, whose lanes step along w's rows: the GEMV's lanes own columns, so they
            # would read w's rows K floats apart (a BERT-base layer at 1 x 16 took 385 us
            # so), and the tensor-core tiles took 13.5 us for each of its 768-wide GEMMs
            if k.loops == "bf16":  # the tiles on bfloat16, or wgmma (cuda_gemm.B16_ENTRIES)
                w.line("const int gemv = 0, dot = 0;")
            else:
                w.line(f"const int transposed = {_transposed_weights(k)};")
                w.line("const int gemv = m <= 32 && !transposed, dot = m <= 32 && transposed;")
            if k.name in gp.int8:
                with w.block("if (q8)"):  # the fused int8 GEMV (cuda_q8.h): a block per
                    w.line(f"kid = {gp.fused[unit_of(k.name)]} + (m > 1); "  # few outputs
                           "block = CV_GEMV_Q8_BLOCK;")
                    w.line("const int64_t per = CV_GEMV_Q8_PER_BLOCK, "
                           "groups = (n + per - 1) / per;")
                    # one row: a single wave of the blocks an SM holds, each taking the same
                    # number of groups, not a tail wave (the probe's persist64 against
                    # block64: 4096 -> 11008 in 18.2 against 19.2 us, H100)
                    w.line("const int64_t held = (int64_t)CV_GEMV_Q8_X1_BLOCKS * sm, "
                           "slots = held > gy ? held / gy : 1, "
                           "turns = m == 1 ? (groups + slots - 1) / slots : 1;")
                    w.line("grid = (uint32_t)((groups + turns - 1) / turns);")
                    w.line("a.cols = 0; a.vec = 0; a.split = 1;")
                w.line("else if (gemv)")
            else:
                w.line("if (gemv)")
            with w.block(""):  # GEMV: each weight read once per 4 rows, or per 8 as float4s
                w.line("const int64_t mr = m == 1 ? 1 : 4, groups = (m + mr - 1) / mr;")
                w.line(f"one.v[{g}] = (int)mr;")
                if k.loops == "float":  # the tiles of 8 rows (cuda_gemv_rows.h)
                    with w.block(f"if (m > 1 && {_vec_rows_condition(k, 'm')})"):
                        # columns narrowed to a tile an SM: one wave (two blocks an SM fit)
                        w.line("const int64_t groups8 = (m + 7) / 8; int cols = 32;")
                        w.line("while (cols > 8 && (n + cols - 1) / cols * groups8 * nb < sm) "
                               "cols /= 2;")
                        w.line(f"a.cols = cols; a.vec = 0; kid = {gp.entry(k, 'gemv8')}; "
                               f"block = {GEMV_ROWS_BLOCK};")
                        w.line("grid = (uint32_t)((n + cols - 1) / cols * groups8);")
                    w.line("else")
                with w.block(""):
                    w.line(f"const int vec = {_vec_condition(k)};")
                    # float4 tiles: 16 columns, 32 where 16 would need a second block per SM
                    # (bench/gpu/gemv_probe.cu); scalar tiles: narrower while twice as many
                    # still fit one per SM (a call's one-kernel has a block per SM, and a
                    # second pass over tiles costs a memory round trip more)
                    w.line("int cols = vec ? ((n + 15) / 16 * groups * nb > sm ? 32 : 16) : 32;")
                    w.line("while (!vec && cols > 8 && (n + cols / 2 - 1) / (cols / 2) * groups "
                           "* nb <= sm) cols /= 2;")
                    w.line(f"a.cols = cols; a.vec = vec; kid = {first} + (mr == 1 ? 2 : 3);")
                    w.line(f"grid = (uint32_t)((n + cols - 1) / cols * groups); "
                           f"block = {GEMV_BLOCK};")
            with w.block("else if (dot)"):  # a block (8 warps) per tile of DOT_ROWS x DOT_COLS
                dot = ENTRIES[Kind.GEMM].index("dot")
                w.line(f"a.cols = 0; a.vec = {_dot_vec_condition(k)};")
                w.line(f"kid = {first} + {dot}; block = {BLOCK};")
                # on tensor cores (float32, up to 16 rows, vec): tiles of DOT_MMA_COLS columns,
                # or of 8 (vec 2) where those would be fewer than the SMs
                w.line(f"const int64_t wide = (n + {DOT_MMA_COLS - 1}) / {DOT_MMA_COLS};")
                w.line("if (a.vec && m <= 16 && wide * nb < sm) a.vec = 2;")
                dotw = ENTRIES[Kind.GEMM].index("dotw")
                w.line(f"if (a.vec == 2) {{ kid = {first} + {dotw}; block = {DOT_WIDE_BLOCK}; }}")
                w.line(f"const int64_t dot_tiles = a.vec == 2 ? (n + 7) / 8 : a.vec && m <= 16 "
                       f"? wide : (n + {DOT_COLS - 1}) / {DOT_COLS} * "
                       f"((m + {DOT_ROWS - 1}) / {DOT_ROWS});")
                w.line("grid = cv_gpu_grid(dot_tiles, 1, sm, 8);")
                w.line(f"one.v[{g}] = {DOT_VARIANT};")
            with w.block("else"):  # 64x64 tiles where 128x128 ones leave SMs idle
                w.line("const int64_t tiles = ((m + 127) / 128) * ((n + 127) / 128);")
                w.line("int few_tiles = tiles * nb < sm;")
                w.line(f"kid = {first} + few_tiles; block = {BLOCK};")
                w.line("int tc = 0;")
                if k.loops == "float":
                    _tc_choice(w, k, first)
                w.line("int64_t ftiles = ((m + 63) / 64) * ((n + (tc ? 127 : 63)) / "
                       "(tc ? 128 : 64));")
                w.line("if (tc) few_tiles = ftiles * nb < sm;  /* split-K below */")
                wg_kid = gp.wg_kid(k)
                if wg_kid is not None:
                    cuda_wgmma.choose(w, k, gp.gemms[unit_of(k.name)][k.loops], wg_kid,
                                      module_symbol(k.name), g)
                    tcc_kid = gp.tcc_kid(k)
                    if tcc_kid is not None:
                        _cluster_choice(w, k, tcc_kid)
                _split(w, k, g)
                # the wgmma loop: batches in its work items, a block per SM at most
                w.line("grid = (uint32_t)(wg ? (ftiles * nb * a.split < sm ? ftiles * nb * "
                       "a.split : sm) : cl ? ftiles * CV_TC_CLUSTER : few_tiles || tc ? "
                       "ftiles * a.split : tiles);")
                w.line("if (wg) gy = 1;")
            w.line(launch)
            w.line(f"L[{g}].wg = wg; L[{g}].smem = wsmem; L[{g}].tr = wtr; (void)wg_split;")
            w.line(f"if (a.split > 1) L[{g}].sum_grid = cv_gpu_grid(nb * ((m - a.split_row0 + "
                   f"CV_KSUM_ROWS - 1) / CV_KSUM_ROWS) * n, {BLOCK}, sm, 8);")
            # the one-kernel's GEMV would read the dequantized weight, not stored where q8
            q8 = " && !q8" if k.name in gp.int8 else ""
            w.line(f"small = small && (gemv || dot){q8};")


def _split(w: Writer, k: CudaKernel, g: int) -> None:
    """Split-K where the tiles are too few for the SMs (cv_gpu_split): partial sums in
    scratch memory of the call, added up by the kernel's _ksum launch."""
    depth = " + ".join(f"a.t[{t}].k" for t in range(len(k.group.terms)))
    w.line(f"a.split = wg ? wg_split : !cl && few_tiles ? cv_gpu_split(ftiles * nb, {depth}, "
           "nb * m * n, sm) : 1;")
    with w.block("if (a.split > 1)"):  # the split rows' partial sums (a.split_row0 on)
        w.line("const int64_t count = a.split * nb * (m - a.split_row0) * n;")
        dt = "CV_DT_FLOAT32" if k.acc_type == "float" else "CV_DT_FLOAT64"
        w.line(f"const int r = api->gpu->scratch(dev, {dt}, 1, &count, stream, &kpart[{g}]);")
        w.line("if (r < 0) goto done;")
        w.line(f"kpart_on[{g}] = r == 0;")
        w.line(f"if (r == 0) a.part = kpart[{g}].data; else a.split = 1;  /* no pools */")


def _cluster_choice(w: Writer, k: CudaKernel, kid: int) -> None:
    """After the wgmma choice: where the tensor-core tiles with an N-major B (``tc`` 1) are
    too few and split-K would take at least half a cluster's chunks, split k within
    thread-block clusters instead (cv_gemm_tc_cluster, sm_90: ``wgl & 16``), the chunks
    added up in distributed shared memory: no partial sums in global memory, no _ksum."""
    depth = " + ".join(f"a.t[{t}].k" for t in range(len(k.group.terms)))
    w.line(f"cl = !wg && tc == 1 && (wgl & 16) && few_tiles && cv_gpu_split(ftiles * nb, "
           f"{depth}, nb * m * n, sm) >= CV_TC_CLUSTER / 2;")
    w.line(f"if (cl) {{ kid = {kid}; wsmem = CV_TCC_SMEM; }}")


def _transposed_weights(k: CudaKernel) -> str:
    """Some term's B has unit row stride, not unit column stride, and over 64K elements
    (an attention's K^T over a few hundred positions stays a GEMV)."""
    return " || ".join(f"(a.t[{t}].b_rs == 1 && a.t[{t}].b_cs != 1 && a.t[{t}].k * n > 65536)"
                       for t in range(len(k.group.terms)))


def _product(items: list[str]) -> str:
    return " * ".join(items) or "1"


def _aligned(k: CudaKernel, side: str, inner: str, outer: str) -> str:
    """Every term's operand ``side`` has unit stride along ``inner``, and its rows along
    ``outer`` and its batches start on 16 bytes (float32): what float4 loads need."""
    return " && ".join(c for t in range(len(k.group.terms)) for c in (
        f"(uintptr_t)a.t[{t}].{side} % 16 == 0", f"a.t[{t}].{side}_{inner} == 1",
        f"a.t[{t}].{side}_{outer} % 4 == 0", f"a.t[{t}].{side}_bs % 4 == 0"))


def _vec_condition(k: CudaKernel) -> str:
    """float4 loads of B in the GEMV: float32, one row per tile (mr == 1), the rest as
    _vec_rows_condition."""
    if k.acc_type != "float":
        return "0"
    return f"mr == 1 && {_vec_rows_condition(k, 'm')}"


def _vec_rows_condition(k: CudaKernel, m: str) -> str:
    """float4 loads of (float32) B in a GEMV: whole float4s per row of B (n % 4 == 0),
    offsets within a batch of ``m`` rows in 32 bits."""
    fits = " && ".join(f"cv_gpu_term_fits32(&a.t[{t}], {m}, n)" for t in range(len(k.group.terms)))
    return f"n % 4 == 0 && {_aligned(k, 'b', 'cs', 'rs')} && {fits}"


def _dot_vec_condition(k: CudaKernel) -> str:
    """float4 loads in the dot GEMV: float32, A's and B's rows contiguous along k and
    aligned, k a multiple of 4."""
    if k.acc_type != "float":
        return "0"
    depths = " && ".join(f"a.t[{t}].k % 4 == 0" for t in range(len(k.group.terms)))
    return f"{_aligned(k, 'a', 'cs', 'rs')} && {_aligned(k, 'b', 'rs', 'cs')} && {depths}"


def _tc_choice(w: Writer, k: CudaKernel, first: int) -> None:
    """The tensor-core main loop where the operands suit cp.async: A with k contiguous, B
    with n (_tc64) or k (_tct64) contiguous, rows and batches 16-byte aligned; tiles of 64
    x 128 (128 x 128 ones ran 0.7-1.0x as fast at the transformer shapes: ncu found them
    latency-bound at 2 blocks an SM, and their 192 tiles of 1024 x 3072 left SMs idle)."""
    a_ok = _aligned(k, "a", "cs", "rs")
    bn = _aligned(k, "b", "cs", "rs")
    bk = _aligned(k, "b", "rs", "cs")
    w.line(f"tc = !({a_ok}) ? 0 : ({bn}) ? 1 : ({bk}) ? 2 : 0;")
    tc_first = first + len(ENTRIES[Kind.GEMM])  # entries GEMM_TC follow ENTRIES
    w.line(f"if (tc) kid = {tc_first} + (tc - 1);")


def _gemm_terms(w: Writer, k: CudaKernel, st: GpuStorage, gp: GpuPlan, g: int) -> None:
    quant = int8_weight(k.group, st.buffers)
    fused = k.name in gp.int8
    if fused and quant is not None:
        gpu_int8.fused_q8(w, k, st, quant)
    if quant is not None:
        w.line(f"const int64_t qshape[2] = {{{', '.join(dim(d) for d in quant.q.shape)}}};")
        with w.block("if (!q8)" if fused else ""):
            gpu_int8.dequantize(w, k, st, quant, gp, g)
    for t, term in enumerate(k.group.terms):
        for side, operand in zip("ab", term.srcs):
            if quant is not None and side == ("a" if quant.qa else "b"):  # w[o * k + p]
                if fused:  # the fused GEMV reads a.q8 instead
                    w.line(f"if (!q8) a.t[{t}].{side} = (const float *)qw[{g}].data;")
                else:
                    w.line(f"a.t[{t}].{side} = (const float *)qw[{g}].data;")
                rs, cs = ("qshape[1]", "1") if quant.qa else ("1", "qshape[1]")
                w.line(f"a.t[{t}].{side}_rs = {rs}; a.t[{t}].{side}_cs = {cs}; "
                       f"a.t[{t}].{side}_bs = 0;")
                continue
            base, view, m = matmul_operand(operand, st)
            rank = len(operand.shape)
            ptr, strides = operand_setup(st, Operand(base, view, m), rank)
            bs = strides[0] if rank == 3 and operand.shape[0] != Dim.of(1) else "0"
            w.line(f"a.t[{t}].{side} = {ptr};")
            w.line(f"a.t[{t}].{side}_rs = {strides[rank - 2]}; a.t[{t}].{side}_cs = "
                   f"{strides[rank - 1]}; a.t[{t}].{side}_bs = {bs};")
        w.line(f"a.t[{t}].k = {dim(term.srcs[0].shape[-1])};")
