"""A signature: the typed parameters one compiled version of a function accepts.

The frontend builds signatures from annotations or strings (frontend/signature.py); the
wrapper (codegen/) checks arguments against them and names them in its error messages.
An argument may be a dict or list of arrays and numbers (a state dict, a list of layers):
its leaves are parameters, which the wrapper takes out of it at each call (`Struct`);
so is a method's ``self``, by the attributes its class declares.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Union

from cuvil_aot.compiler.ir.node import Param
from cuvil_aot.marks import ARRAY_DTYPES

_SHORT_NAMES = {d.np_dtype: d.short for d in ARRAY_DTYPES}
_SCALAR_NAMES = {"float64": "float", "int64": "int", "bool": "bool"}

Tree = Union[int, "Struct"]  # an int: the index of a leaf in Signature.params


@dataclass(frozen=True)
class Struct:
    """An argument that is a dict (string keys), a list (keys 0, 1, ...) or an instance of
    a class (its declared attributes: a method's ``self``), whose items are leaves or more
    of them; ``label`` names it in messages and in `Function.closed`; ``cls`` is the
    instance's class, "module:qualname"; ``optional``: the argument may be None instead
    (in the version where it is, every leaf is a None parameter: none may be on its own)."""

    kind: str  # "dict", "list" or "object"
    items: tuple[tuple[str | int, Tree], ...]
    label: str
    cls: str = ""
    optional: bool = False


def leaves(tree: Tree) -> list[int]:
    """The parameters' indices under ``tree``."""
    return [tree] if isinstance(tree, int) else [i for _, t in tree.items for i in leaves(t)]


@dataclass(frozen=True)
class Signature:
    params: tuple[Param, ...]
    # the arguments as the caller passes them, by name; None: each parameter is one
    structure: tuple[tuple[str, Tree], ...] | None = None
    # a version's conditions decided at build: (the condition's structure, the block
    # taken, the if's test as written), checked at the call (frontend/versions.py)
    decisions: tuple[tuple[str, bool, str], ...] = ()

    @property
    def arguments(self) -> tuple[tuple[str, Tree], ...]:
        if self.structure is None:
            return tuple((p.name, i) for i, p in enumerate(self.params))
        return self.structure

    def __str__(self) -> str:
        where = " and ".join(text if taken else f"not ({text})"
                             for _, taken, text in self.decisions)
        return ", ".join(s for _, tree in self.arguments for s in self._shown(tree)) + \
            (f" where {where}" if where else "")

    def _shown(self, tree: Tree) -> list[str]:
        """``label: type`` of each leaf of ``tree``; of the whole where it is None."""
        if isinstance(tree, int):
            return [f"{self.params[tree].shown}: {render_type(self.params[tree])}"]
        if is_none(self, tree):
            return [f"{tree.label}: None"]
        return [s for _, t in tree.items for s in self._shown(t)]


NONE_DTYPE = "none"  # a parameter that is None in this version (`frontend.signature`)


def is_none(sig: Signature, tree: Tree) -> bool:
    """Whether the argument (or item) ``tree`` is None in this version of the signature."""
    if isinstance(tree, int):
        return sig.params[tree].type.dtype == NONE_DTYPE
    return tree.optional and all(is_none(sig, i) for i in leaves(tree))


def none_arguments(sig: Signature) -> list[str]:
    """The labels of the arguments and items that are None in this version."""
    def walk(tree: Tree, shown: str) -> list[str]:
        if is_none(sig, tree):
            return [shown]
        return [] if isinstance(tree, int) else \
            [s for _, t in tree.items for s in walk(t, _shown(sig, t))]
    return [s for name, tree in sig.arguments for s in walk(tree, name)]


def _shown(sig: Signature, tree: Tree) -> str:
    return sig.params[tree].shown if isinstance(tree, int) else tree.label


def render_type(p: Param) -> str:
    """A parameter's type as the user writes it: ``f32[B, 128]``, ``float``, ``None``."""
    if p.type.dtype == NONE_DTYPE:
        return "None"
    if p.is_scalar:
        return _SCALAR_NAMES[p.type.dtype]
    return f"{_SHORT_NAMES[p.type.dtype]}[{', '.join(str(d) for d in p.type.shape)}]"
