"""Size-1 broadcasting of symbolic dimensions: a specialization where a symbol is 1.

Where an op broadcasts a dimension the signature names (``a: f32[A]`` plus ``b: f32[B]``)
the two are assumed equal and checked at the call (``construct.Assumption``). NumPy also
broadcasts where one of them is 1, which code built for equal sizes cannot do: every read
of ``a`` there reads B elements, and ``a.sum()`` or ``a.shape[0]`` elsewhere in the body
must still see one. So each symbol that may be 1 at such an op gets a specialization of
its own, the signature with the symbol written as a literal 1, lowered after the general
one. The wrapper tries signatures in order: a call whose sizes differ where one is 1 fails
the general signature's check (not NumPy's error: a failed match) and matches the
specialization, which broadcasts like NumPy. Fewest ones first, at most
``MAX_SPECIALIZATIONS`` per declared signature (each is compiled code), half as many
shared by its versions where it has several (frontend/versions.py: each version is
compiled code too); a call none of them covers is refused with the reason
(``Assumption.refusal``)."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import replace

from cuvil_aot.compiler.ir.construct import Assumptions
from cuvil_aot.compiler.ir.node import Function
from cuvil_aot.compiler.ir.signature import Signature
from cuvil_aot.compiler.ir.types import Dim, TensorType

__all__ = ["MAX_SPECIALIZATIONS", "size_one_specializations", "specializations_per_version"]

MAX_SPECIALIZATIONS = 8  # two axes of independent symbols: 3 * 3 - 1

Lower = Callable[[Signature], "Function | None"]


def specializations_per_version(versions: int) -> int:
    """How many each of a signature's ``versions`` gets."""
    return MAX_SPECIALIZATIONS if versions == 1 else MAX_SPECIALIZATIONS // (2 * versions)


def size_one_specializations(sig: Signature, function: Function, lower: Lower,
                             limit: int = MAX_SPECIALIZATIONS
                             ) -> list[tuple[Signature, Function]]:
    """Up to ``limit`` specializations of ``sig`` (lowered as ``function``) for symbols
    that NumPy would broadcast at size 1; ``lower`` lowers one (None where it is refused:
    then the refusal at the call stands)."""
    found: list[tuple[Signature, Function]] = []
    seen: set[frozenset[str]] = {frozenset()}
    queue = deque([(frozenset[str](), sig, function)])
    while queue and len(found) < limit:
        ones, base_sig, base = queue.popleft()
        for symbols in _may_be_one(base, base_sig):
            both = ones | symbols
            if both in seen:
                continue
            seen.add(both)
            special_sig = with_ones(sig, both)
            special = lower(special_sig)
            if special is None:
                continue
            found.append((special_sig, special))
            queue.append((both, special_sig, special))
            if len(found) == limit:
                break
    return found


def _may_be_one(fn: Function, sig: Signature) -> Iterator[frozenset[str]]:
    """Sets of the signature's symbols that, all 1, make a broadcast side of an assumed
    equation 1 (``A``, ``A*B``; not ``4H``, which is never 1)."""
    declared = frozenset().union(*(p.symbols for p in sig.params))
    for assumption in fn.assumptions:
        for p, q, both in assumption.fits:
            for side in (p, q) if both else (p,):
                if side.symbols and side.symbols <= declared and \
                        _ones(side.symbols).resolve(side) == Dim.of(1):
                    yield side.symbols


def with_ones(sig: Signature, symbols: frozenset[str]) -> Signature:
    """``sig`` with each of ``symbols`` written as 1."""
    ones = _ones(symbols)
    return replace(sig, params=tuple(replace(p, type=TensorType(
        p.type.dtype, tuple(ones.resolve(d) for d in p.type.shape), p.type.weak))
        for p in sig.params))


def _ones(symbols: frozenset[str]) -> Assumptions:
    facts = Assumptions()
    facts.subst = {s: Dim.of(1) for s in symbols}
    return facts
