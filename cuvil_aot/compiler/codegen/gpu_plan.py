"""Every GPU kernel of a module, grouped in units: one per marked function, each its own
CUDA translation unit, fatbin and table of entry points (the order in which
gpu_wrapper.py names them and gpu_launch.py launches them). A unit is compiled and cached
on its own (toolchain/nvcc.py), so editing one function recompiles only its unit."""

from __future__ import annotations

from dataclasses import dataclass, field

from cuvil_aot.compiler.codegen import (
    attention_match,
    cuda,
    cuda_attention,
    cuda_gemm,
    cuda_one,
    cuda_wgmma,
    gpu_deps,
    text_names,
)
from cuvil_aot.compiler.codegen.compiled import Compiled
from cuvil_aot.compiler.codegen.cuda_emitter import CudaKernel
from cuvil_aot.compiler.codegen.launch import int8_weight
from cuvil_aot.compiler.codegen.run_time_loops import LoopSpan
from cuvil_aot.compiler.gpu_targets import GpuTargets
from cuvil_aot.compiler.ir.group import Kind

# The K-major copy of a wgmma GEMM's operand (cuda_transpose.h), an entry of each unit with
# the wgmma entry
TRANSPOSE_ENTRY = "cv_transpose_f32"


def unit_of(prefix: str) -> str:
    """The unit of a signature's kernels: its function's (``f3_s1`` -> ``f3``)."""
    return prefix.split("_")[0]


def module_symbol(prefix: str) -> str:
    """The C name of the runtime's ``cv_cuda_module`` of ``prefix``'s unit."""
    return f"cv_gpu_{unit_of(prefix)}"


@dataclass
class GpuPlan:
    """Every GPU kernel of a module, and each unit's entry points numbered as its table."""

    kernels: dict[str, list[CudaKernel]] = field(default_factory=dict)  # by comp.prefix
    names: dict[str, list[str]] = field(default_factory=dict)  # unit -> its entry points
    first: dict[str, int] = field(default_factory=dict)  # kernel name -> its first entry
    one: dict[str, int] = field(default_factory=dict)  # comp.prefix -> its one-kernel entry
    loops: dict[str, list[LoopSpan]] = field(default_factory=dict)  # comp.prefix -> its loops
    # comp.prefix -> per kernel, the kernels its launches wait for (gpu_deps.py); None: a chain
    after: dict[str, list[int] | None] = field(default_factory=dict)
    # unit -> accumulator C type -> its GEMM kernels, which share one set of main loops
    # (cuda_gemm.shared_gemms), each launched with its index here as the tag
    gemms: dict[str, dict[str, list[CudaKernel]]] = field(default_factory=dict)
    # unit -> the entry of cv_dequant_q8 (cuda_q8.h), where a GEMM reads int8 weights
    dequant: dict[str, int] = field(default_factory=dict)
    # unit -> the first entry of its fused int8 GEMV (cuda_gemm.q8_entry), and the GEMM kernels
    # (their names) that it may run: x @ (q * s).T of one term
    fused: dict[str, int] = field(default_factory=dict)
    int8: set[str] = field(default_factory=set)
    # comp.prefix -> its fused attentions (attention_match.py), each replacing three kernels
    attention: dict[str, list[cuda_attention.AttentionKernel]] = field(default_factory=dict)
    # built for sm_90 (as sm_90a): units with an eligible float32 or bfloat16 GEMM get the
    # wgmma entry of those shared main loops
    wgmma: bool = False
    wg: set[tuple[str, str]] = field(default_factory=set)  # (unit, CudaKernel.loops) with it
    wg_kernels: set[str] = field(default_factory=set)  # the GEMMs that may run it
    # unit -> the entry of cv_transpose_f32 (cuda_transpose.h): K-major copies for its wgmma
    # entry, where an operand is not K-major (gpu_wg_copies.py)
    transpose: dict[str, int] = field(default_factory=dict)
    texts: dict[str, str] = field(default_factory=dict)  # a kernel's text -> its name

    def wg_kid(self, k: CudaKernel) -> int | None:
        """The entry of GEMM kernel ``k``'s wgmma main loop, None where it has none."""
        unit = unit_of(k.name)
        if (unit, k.loops) not in self.wg or k.name not in self.wg_kernels:
            return None
        return self.first[f"{cuda_gemm.shared_name(unit, k.loops)}_wg"]

    def tcc_kid(self, k: CudaKernel) -> int | None:
        """The entry of GEMM kernel ``k``'s split-K in clusters (cuda_gemm.cluster_entry):
        float32 GEMMs of a unit with the wgmma entry; None for others."""
        if self.wg_kid(k) is None or k.loops != "float":
            return None
        return self.first[cuda_gemm.shared_name(unit_of(k.name), k.loops)
                          + cuda_gemm.CLUSTER_SUFFIX]

    def tag(self, k: CudaKernel) -> tuple[str, int]:
        """GEMM kernel ``k``'s shared main loops (their name) and its tag there."""
        kernels = self.gemms[unit_of(k.name)][k.loops]
        return cuda_gemm.shared_name(unit_of(k.name), k.loops), \
            [g.name for g in kernels].index(k.name)

    def entry(self, k: CudaKernel, name: str) -> int:
        """The entry ``name`` (``ksum``) of GEMM kernel ``k``'s shared main loops."""
        return self.first[k.name] + cuda_gemm.entry_names(k.loops).index(name)

    def shared_structs(self, unit: str) -> str:
        """The argument structs of ``unit``'s shared GEMM main loops."""
        text = "".join(cuda_gemm.shared_struct(cuda_gemm.shared_name(unit, loops), kernels)
                       for loops, kernels in self.gemms.get(unit, {}).items())
        for loops, kernels in self.gemms.get(unit, {}).items():
            if (unit, loops) in self.wg:
                text += cuda_wgmma.struct(cuda_gemm.shared_name(unit, loops),
                                          [k for k in kernels if k.name in self.wg_kernels])
        return text

    def sources(self) -> dict[str, str]:
        """Each unit's CUDA source, by unit."""
        by_unit: dict[str, list[str]] = {}
        for prefix in self.kernels:
            by_unit.setdefault(unit_of(prefix), []).append(prefix)
        return {unit: self._source(unit, prefixes) for unit, prefixes in by_unit.items()}

    def _source(self, unit: str, prefixes: list[str]) -> str:
        shared = [cuda_gemm.shared_gemms(unit, kernels)
                  for kernels in self.gemms.get(unit, {}).values()]
        include = ""
        for loops, kernels in self.gemms.get(unit, {}).items():
            if (unit, loops) in self.wg:  # the header only where a GEMM may run it: nvcc's time
                include = '#include "cuvil_aot/cuda_gemm_wgmma.h"\n' \
                    '#include "cuvil_aot/cuda_transpose.h"\n'
                shared.append(cuda_wgmma.entry(cuda_gemm.shared_name(unit, loops), kernels))
                if loops == "float":
                    shared.append(cuda_gemm.cluster_entry(cuda_gemm.shared_name(unit, loops),
                                                          kernels))
        ones = [cuda_one.one_struct(p, self.kernels[p]) + cuda_one.one_kernel(p, self.kernels[p])
                for p in prefixes if p in self.one]
        q8_kernels = self.gemms.get(unit, {}).get("float", [])
        q8 = [cuda_gemm.q8_entry(unit, q8_kernels, self.int8)] if unit in self.fused else []
        attns = list({ak.name: ak for p in prefixes for ak in self.attention.get(p, [])}.values())
        return cuda.source(list({k.name: k for p in prefixes for k in self.kernels[p]}.values()),
                           include + self.shared_structs(unit)
                           + "".join(ak.struct for ak in attns),
                           shared + q8 + ones + [ak.code for ak in attns],
                           int8=unit in self.dequant)


def refusal(comps: list[Compiled]) -> str | None:
    """Why a function (its signatures ``comps``) has no GPU kernels (the call raises
    CudaError saying it: gpu_wrapper.py); None where it has. Every function has them
    today: bfloat16 values are cuda_kernel.h's cv_bf16, their GEMMs the bf16 main loops."""
    del comps
    return None


def lower(comps: list[Compiled], targets: GpuTargets | None = None) -> GpuPlan:
    """The CUDA kernels of every signature, one per fusion group, and the tables; none for
    a function ``refusal`` refuses. ``targets`` with SASS for sm_90: the wgmma entry, then
    cv_transpose_f32, last in the table of each unit with a float32 GEMM that may run it
    (cuda_wgmma.py, gpu_wg_copies.py)."""
    gp = GpuPlan(wgmma=targets is not None and cuda_wgmma.WG_ARCH in targets.sass)
    refused = {c.name for c in comps if refusal([c]) is not None}
    for comp in comps:
        if comp.name in refused:
            continue
        buffers = {id(b) for b in comp.buffers}
        unit = unit_of(comp.prefix)
        kernels = [_named(gp, cuda.emit_kernel(f"{comp.prefix}_g{g}", group, buffers,
                                               comp.hoisted), buffers)
                   for g, group in enumerate(comp.groups)]
        gp.kernels[comp.prefix] = kernels
        gp.after[comp.prefix] = gpu_deps.masks(comp, kernels)
        names = gp.names.setdefault(unit, [])
        for k in kernels:
            if k.name in gp.first:  # the same kernel as an earlier one: its entries
                continue
            if k.group.kind is not Kind.GEMM:
                gp.first[k.name] = len(names)
                names.extend(k.entries)
                continue
            quant = int8_weight(k.group, buffers)
            if quant is not None and unit not in gp.dequant:
                gp.dequant[unit] = len(names)
                names.append("cv_dequant_q8")
            # x @ (q * s).T of one term: the fused GEMV's, where its rows are few
            if quant is not None and not quant.qa and len(k.group.terms) == 1 \
                    and k.acc_type == "float":
                gp.int8.add(k.name)
                if unit not in gp.fused:
                    gp.fused[unit] = len(names)
                    names.extend(cuda_gemm.q8_names(unit))
            gemms = gp.gemms.setdefault(unit, {})
            if k.loops not in gemms:  # the unit's first: its main loops' entry points
                gemms[k.loops] = []
                entries = cuda_gemm.shared_entries(unit, k.loops)
                gp.first[entries[0]] = len(names)
                names.extend(entries)
            gemms[k.loops].append(k)
            if gp.wgmma and cuda_wgmma.eligible(k, buffers):
                gp.wg_kernels.add(k.name)
            gp.first[k.name] = gp.first[cuda_gemm.shared_entries(unit, k.loops)[0]]
        gp.loops[comp.prefix] = comp.loops  # launched one by one, in order
        _attention(gp, comp, kernels, names)
        # (its GEMV phases read float32 operands: no bfloat16 GEMM)
        if comp.prefix not in gp.attention and 1 < len(kernels) <= cuda_one.ONE_MAX_KERNELS \
                and not comp.loops and all(k.group.kind is not Kind.SCAN and k.loops != "bf16"
                                           for k in kernels):
            gp.one[comp.prefix] = len(names)
            names.append(f"{comp.prefix}_one")
    for unit, by_loops in gp.gemms.items():
        for loops, gemm_kernels in by_loops.items():
            if any(k.name in gp.wg_kernels for k in gemm_kernels):
                gp.wg.add((unit, loops))
                name = cuda_gemm.shared_name(unit, loops)
                gp.first[f"{name}_wg"] = len(gp.names[unit])
                gp.names[unit].extend(name + s for s in cuda_wgmma.entry_suffixes(loops))
                if loops == "float":  # split-K in clusters: sm_90 as the wgmma entry
                    gp.first[name + cuda_gemm.CLUSTER_SUFFIX] = len(gp.names[unit])
                    gp.names[unit].append(name + cuda_gemm.CLUSTER_SUFFIX)
                if unit not in gp.transpose:  # the unit's one copy kernel (cuda_transpose.h)
                    gp.transpose[unit] = len(gp.names[unit])
                    gp.names[unit].append(TRANSPOSE_ENTRY)
    return gp


def _named(gp: GpuPlan, k: CudaKernel, buffers: set[int]) -> CudaKernel:
    """``k``, or the earlier kernel of its text (text_names.py) and of what the plan reads
    of a GEMM beside its text: whether it may run the wgmma entry, its int8 weight's form;
    in its own unit only."""
    quant = int8_weight(k.group, buffers) if k.group.kind is Kind.GEMM else None
    salt = (unit_of(k.name), k.group.kind is Kind.GEMM and gp.wgmma
            and cuda_wgmma.eligible(k, buffers), None if quant is None else quant.qa)
    return text_names.first_of_its_text(k, gp.texts, repr(salt))


def _attention(gp: GpuPlan, comp: Compiled, kernels: list[CudaKernel],
               names: list[str]) -> None:
    """The fused attentions of ``comp`` (none in a call with run-time loops), each an entry
    point of its unit."""
    if comp.loops:
        return
    buffers = {id(b) for b in comp.buffers}
    for match in attention_match.find(comp.groups, comp.buffers, comp.fn.outputs):
        name = f"{comp.prefix}_a{len(gp.attention.get(comp.prefix, []))}"
        ak = cuda_attention.emit(name, match, comp.groups, kernels, buffers, comp.hoisted)
        if ak is None:
            continue
        ak = _attention_named(gp, ak)
        gp.attention.setdefault(comp.prefix, []).append(ak)
        if ak.name not in gp.first:
            gp.first[ak.name] = len(names)
            names.extend(ak.entries)


def _attention_named(gp: GpuPlan, ak: cuda_attention.AttentionKernel
                     ) -> cuda_attention.AttentionKernel:
    """``ak``, or the earlier attention of its unit of the same text but for the names (the
    versions of GPT-2's port: 8 attentions, 2 texts), as ``_named`` does for kernels: each
    text is one more instantiation of the attention's template for nvcc."""
    own = text_names.own_names(ak.name)
    text = own.sub("@", f"attention\0{ak.struct}\0{ak.code}\0{unit_of(ak.name)}")
    name = gp.texts.setdefault(text, ak.name)
    return ak if name == ak.name else ak.renamed(name)
