"""Dict and list arguments as the compiled code sees them (`ir/signature.Struct`).

A list argument is a tuple of its items (`ArgumentList`: the code cannot change the
caller's list). A dict
argument is an `ArgumentDict`: its declared items, read only. The caller's dict may hold
more keys, which code that only reads declared items never sees; code that looks at the
keys themselves (a loop over the dict, ``len``, ``in`` or ``.get`` of an undeclared key,
``**d``) would see them in Python, so such a dict is *closed*: the call then insists on
exactly the declared keys (`Function.closed`, checked by the wrapper). An instance (a
method's ``self``) is an `ArgumentObject`: its declared attributes, and what the code reads
from its class (methods, constants: methods.py), which the instance must not shadow
(`Function.from_class`, checked by the wrapper).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

from cuvil_aot.compiler.ir.node import Node
from cuvil_aot.compiler.ir.signature import Tree, leaves
from cuvil_aot.marks import find_class

__all__ = ["DICT_METHODS", "ArgumentDict", "ArgumentList", "ArgumentObject", "argument_value"]

DICT_METHODS = frozenset({"get", "keys", "values", "items", "copy"})


class ArgumentDict(Mapping[str, Any]):
    def __init__(self, label: str, items: dict[str, Any], closed: set[str]) -> None:
        self.label, self._items, self._closed = label, items, closed

    def _keys_seen(self) -> None:
        self._closed.add(self.label)

    def __getitem__(self, key: str) -> Any:
        return self._items[key]  # an undeclared key: KeyError, the frontend's diagnostic

    def __iter__(self) -> Iterator[str]:
        self._keys_seen()
        return iter(self._items)

    def __len__(self) -> int:
        self._keys_seen()
        return len(self._items)

    def __contains__(self, key: object) -> bool:
        if key not in self._items:
            self._keys_seen()
        return key in self._items

    def get(self, key: str, default: Any = None) -> Any:
        return self._items[key] if key in self else default

    # lists, not views: what the unrolled loops and comprehensions iterate
    def keys(self) -> list[str]:  # type: ignore[override]
        return list(self)

    def values(self) -> list[Any]:  # type: ignore[override]
        return [self._items[k] for k in self]

    def items(self) -> list[tuple[str, Any]]:  # type: ignore[override]
        return [(k, self._items[k]) for k in self]

    def copy(self) -> dict[str, Any]:
        return dict(self.items())

    def replace_items(self, replaced: Callable[[Any], Any]) -> None:
        """Each item as ``replaced`` makes it (an item written in place: its new node)."""
        self._items = {k: replaced(v) for k, v in self._items.items()}

    def __repr__(self) -> str:
        declared = ", ".join(map(repr, self._items))
        return f"the dict argument {self.label} (declared keys: {declared})"


class ArgumentList(tuple[Any, ...]):
    """A list argument's items, read only; ``label`` names it in messages."""

    label: str

    def __new__(cls, label: str, items: list[Any]) -> ArgumentList:
        self = super().__new__(cls, items)
        self.label = label
        return self


class ArgumentObject:
    """An instance argument: ``items``, its declared attributes' values; ``cls``, its class
    (exactly: the wrapper checks it); ``from_class`` collects (label, name, hideable) of what
    the code reads from the class instead, ``used`` the labels of what it reads at all (the instance
    and its attributes: the signature then passes only those)."""

    def __init__(self, label: str, cls: type, items: dict[str, Any],
                 from_class: set[tuple[str, str, bool]], used: set[str]) -> None:
        self.label, self.cls, self.items, self._from_class = label, cls, items, from_class
        self._used = used

    def read(self, name: str | None = None) -> Any:
        """Note that the code reads the instance (and its attribute ``name``: its value)."""
        self._used.add(self.label)
        if name is not None:
            self._used.add(f"{self.label}.{name}")
            return self.items[name]
        return None

    def read_from_class(self, name: str, hideable: bool = True) -> None:
        """Note that the code took ``name`` from the class (a method, constant, property,
        ``__call__``; "": it asked ``isinstance``): an instance of a subclass must find the
        same there, and one whose ``__dict__`` holds a ``hideable`` name would hide it."""
        self.read()
        self._from_class.add((self.label, name, hideable))

    def replace_items(self, replaced: Callable[[Any], Any]) -> None:
        self.items = {k: replaced(v) for k, v in self.items.items()}

    def __repr__(self) -> str:
        return f"{self.label}, a {self.cls.__name__}"



def argument_value(tree: Tree, params: tuple[Node | None, ...], closed: set[str],
                   from_class: set[tuple[str, str, bool]], used: set[str]) -> Any:
    """What the function's code sees of an argument: a parameter's node (or None), or an
    `ArgumentDict`, `ArgumentList` or `ArgumentObject` of more of them; ``closed`` collects
    the labels of the dicts whose keys the code looks at, ``from_class`` what it reads from
    an instance's class, ``used`` what it reads of instances."""
    if isinstance(tree, int):
        return params[tree]
    if tree.optional and all(params[i] is None for i in leaves(tree)):
        return None  # this version's: the argument is None (its leaves are none alone)
    items = {k: argument_value(t, params, closed, from_class, used) for k, t in tree.items}
    if tree.kind == "dict":
        return ArgumentDict(tree.label, items, closed)  # type: ignore[arg-type]
    if tree.kind == "object":
        return ArgumentObject(tree.label, find_class(tree.cls), items,  # type: ignore[arg-type]
                              from_class, used)
    return ArgumentList(tree.label, list(items.values()))
