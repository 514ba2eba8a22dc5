"""The transformer cases' part of RESULTS.md (issue 22): their floors, and a summary table
with every anchor side by side (report.py renders the rest)."""

from __future__ import annotations

from cases import BY_NAME, OURS, TRANSFORMER, Case

MIB = 1 << 20
ANCHORS = [c for c in TRANSFORMER if c not in OURS]


def us(seconds: float) -> str:
    v = seconds * 1e6
    return f"{v:.2f}" if v < 10 else f"{v:.1f}" if v < 100 else f"{v:,.0f}"


def floors(case: Case, fl: dict, l3: int) -> tuple[float, float, str]:
    """Seconds of the GEMMs at the SGEMM rate, and of reading the weights once (at the L3
    stream rate where they fit in L3, else the copy rate); and how they were derived."""
    t_gemm = case.flops / fl["sgemm_flops"]
    in_l3 = case.weight_bytes <= l3
    bw = fl["l3_bw"] if in_l3 else fl["copy_bw"]
    t_w = case.weight_bytes / bw
    why = (f"max(GEMMs {case.flops / 1e6:,.1f} MFLOP at {fl['sgemm_flops'] / 1e9:.0f} GFLOP/s "
           f"= {us(t_gemm)} µs, weights {case.weight_bytes / MIB:.1f} MiB at {bw / 1e9:.0f} "
           f"GB/s ({'L3 stream' if in_l3 else 'copy'}) = {us(t_w)} µs)")
    return t_gemm, t_w, why


def fma_floor(case: Case, fl: dict) -> str:
    """The GEMM FLOPs at the measured FMA peak (no GEMM passes it), µs."""
    return us(case.flops / fl["fma_flops"]) if "fma_flops" in fl else "?"


def fma_share(case: Case, fl: dict, cv: dict | None) -> str:
    """cuvil_aot's whole call as a GEMM rate, and its share of the FMA peak: a lower bound
    on the GEMMs' own share (the call also runs attention, softmax, LayerNorm, GELU)."""
    if not cv or "fma_flops" not in fl:
        return ""
    rate = case.flops / cv["median_s"]
    return f"{rate / 1e9:.0f} ({rate / fl['fma_flops']:.0%})"


def target_met(case: Case, t: float, anchors: dict[str, float]) -> bool:
    """``target_vs_best``× faster than the best anchor (and there is one)."""
    return bool(anchors) and t * case.target_vs_best <= min(anchors.values())


def summary(run_results: dict[str, dict], fl: dict, l3: int, table) -> list[str]:
    """One row a case: every competitor's median (best sample under it), the floors, and
    the speed-up of cuvil_aot over the best anchor against the target."""
    rows = []
    for name, results in run_results.items():
        case = BY_NAME[name]
        t_gemm, t_w, _ = floors(case, fl, l3)
        cells = []
        for comp in TRANSFORMER:
            res = results.get(comp)
            if res is None:
                cells.append("—")
            elif not res.get("ok"):
                cells.append("skipped" if res.get("skipped") else "**failed**")
            else:
                cells.append(f"{us(res['median_s'])} ({us(res['min_s'])})")
        ok = {c: r for c, r in results.items() if r.get("ok")}
        anchors = {c: r["median_s"] for c, r in ok.items() if c not in OURS}
        best = min(anchors, key=anchors.get) if anchors else None
        cv, frozen = ok.get("cuvil_aot"), ok.get("cuvil_aot frozen")
        speedup, met = "", ""
        if cv and best:
            speedup = f"{anchors[best] / cv['median_s']:.2f}× ({best})"
            met = "yes" if target_met(case, cv["median_s"], anchors) else "**no**"
        if frozen and best:
            speedup += f"; frozen {anchors[best] / frozen['median_s']:.2f}×"
            kept = target_met(case, frozen["median_s"], anchors)
            met += f"; frozen {'yes' if kept else '**no**'}"
        floor = max(t_gemm, t_w)
        rows.append([case.title, *cells, us(t_gemm), fma_floor(case, fl), us(t_w),
                     f"{cv['median_s'] / floor:.2f}" if cv else "", fma_share(case, fl, cv),
                     speedup, met])
    header = ["case", *(f"{c} µs" for c in TRANSFORMER), "GEMM floor µs", "FMA floor µs",
              "weight floor µs", "cuvil / floor", "cuvil GFLOP/s (FMA peak)",
              "best anchor / cuvil", "target met"]
    return table(header, rows)


def section(run: dict, fl: dict, l3: int, table, case_section) -> list[str]:
    results = {n: r for n, r in run["results"].items() if BY_NAME[n].group == "transformers"}
    if not results:
        return []
    spin = run.get("ort_spinning") or "ORT's default (spinning on)"
    lines = [
        "## Transformers (issue 22: bench/transformer_models.py)", "",
        "BERT-base layers (hidden 768, 12 heads, FFN 3072, post-LayerNorm, additive padding "
        "mask: the last quarter of the tokens padded in the first ceil(B/2) sequences) and "
        "GPT-2-small blocks (pre-LayerNorm; prefill with a causal mask, and one decode token "
        "against a KV cache grown by np.concatenate), written in plain NumPy; weights 0.02·N(0, "
        "1), LayerNorm gammas 1 + 0.05·N(0, 1). NumPy's erf GELU is an A&S polynomial (|error| "
        "< 1.5e-7); PyTorch and ONNX Runtime use the exact erf.",
        "",
        "Competitors: cuvil_aot (the weights as ordinary arrays, packed at every call where "
        "a GEMM packs them), cuvil_aot frozen (the same function, the weights passed through "
        "cuvil_aot.freeze: packed once), NumPy (the original functions), PyTorch eager and "
        "torch.compile (torch.nn.functional: linear, layer_norm, gelu, "
        "scaled_dot_product_attention), ONNX Runtime on the graph in standard ONNX ops, and "
        "ONNX Runtime fused: the graph onnxruntime.transformers.optimizer produces, built "
        "directly with ORT's contrib ops (Attention with a packed QKV weight, "
        "SkipLayerNormalization, BiasGelu / FastGelu; MultiHeadAttention with past_key / "
        "past_value for the decode step). In both ORT graphs the weights are initializers "
        "(constants, as a deployed model has them; ORT may prepack them) and only the "
        "activations are fed per call. ORT runs os.cpu_count() intra-op threads; "
        f"session.intra_op.allow_spinning: {spin} (CUVIL_BENCH_ORT_SPINNING=0 turns it off). "
        "Spinning ORT threads slow NumPy in the same process; here every measurement runs in "
        "a fresh process, so they slow no other competitor.",
        "",
        "Floors: the GEMM FLOPs (2·tokens·params of the projections and the FFN, plus "
        "4·B·heads·T·S·64 for Q·Kᵀ and P·V, causal attention counted in full) at the measured "
        "SGEMM rate and at the measured FMA peak (`FMA floor`: no GEMM can pass it; "
        "`cuvil GFLOP/s` is those FLOPs over cuvil_aot's whole call, in brackets its share "
        "of the peak, a lower bound on the GEMMs' own), and the weight bytes read once at "
        "the L3 stream rate (the copy rate "
        "where they exceed L3); `cuvil / floor` divides by the larger. Target (issue 22): "
        "cuvil_aot 1.25× faster than the best anchor.",
        "", "### Summary (µs: median (best sample))", "",
        *summary(results, fl, l3, table), "",
    ]
    for name, res in results.items():
        lines += case_section(BY_NAME[name], res, fl, l3)
    return lines
