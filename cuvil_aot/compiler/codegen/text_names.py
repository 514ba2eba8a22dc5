"""Kernels that are the same but for their names, one kernel: the versions of a function
(``use_cache`` or not, a mask or None, sizes of one) mostly run the same kernels, and each
text is compiled once (Hugging Face's GPT-2 block, 32 versions: 448 CPU kernels, 38
distinct; 2.66 MB of CUDA, 0.22 MB of it distinct). The C table points a repeated kernel
at the first (pymodule.kernels_source); a repeated CUDA kernel takes the first's name
(gpu_plan._named). Host code fills each version's own arguments struct, laid out as the
kernel's by the same text."""

from __future__ import annotations

import re
from typing import TypeVar

from cuvil_aot.compiler.codegen.kernel_emitter import Kernel

K = TypeVar("K", bound=Kernel)


def nameless(k: Kernel, salt: str = "") -> str:
    """``k``'s struct and code with its name (and the names made from it) blanked, and
    ``salt`` (what else tells kernels of one text apart): equal for the same kernel."""
    return own_names(k.name).sub("@", f"{k.struct}\0{k.code}\0{salt}")


def first_of_its_text(k: K, seen: dict[str, str], salt: str = "") -> K:
    """``k`` named as the kernel in ``seen`` (text -> name) of its `nameless` text; where
    there is none, ``k`` as it is, recorded in ``seen``."""
    name = seen.setdefault(nameless(k, salt), k.name)
    if name != k.name:
        own = own_names(k.name)
        k.struct, k.code, k.name = own.sub(name, k.struct), own.sub(name, k.code), name
    return k


def own_names(name: str) -> re.Pattern[str]:
    """``name`` and the names made from it (``{name}_args``, ``{name}_score``), not a
    longer number (``f0_s1`` is not ``f0_s12``)."""
    return re.compile(rf"\b{re.escape(name)}(?![0-9])")
