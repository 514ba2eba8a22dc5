"""GPU kernels that are the same but for their names, one kernel: the versions of a
function (``use_cache`` or not, a mask or None, sizes of one) mostly run the same kernels,
and each text is in its unit's source and table once (Hugging Face's GPT-2 block, 32
versions: 2.66 MB of CUDA, 0.22 MB of it distinct). Host code fills each version's own
arguments struct, laid out as the kernel's by the same text."""

from __future__ import annotations

import re

from cuvil_aot.compiler.codegen.cuda_emitter import CudaKernel


def first_of_its_text(k: CudaKernel, seen: dict[str, str], salt: str = "") -> CudaKernel:
    """``k`` named as the kernel in ``seen`` (text -> name) whose struct and code are
    ``k``'s but for the name, with the same ``salt`` (what else tells them apart); where
    there is none, ``k`` as it is, recorded in ``seen``."""
    own = re.compile(rf"\b{re.escape(k.name)}(?![0-9])")
    name = seen.setdefault(own.sub("@", f"{k.struct}\0{k.code}\0{salt}"), k.name)
    if name != k.name:
        k.struct, k.code, k.name = own.sub(name, k.struct), own.sub(name, k.code), name
    return k
