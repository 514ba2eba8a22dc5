"""Dict, list and instance arguments (`ir/signature.Struct`): the wrapper takes each
declared item out of them (an instance's by attribute, once its class is checked), a new
reference held until the call returns (no Python runs while kernels do, but another thread
may drop the caller's last reference to an item), into the leaves' argv; the signatures
are then matched on the leaves alone."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from cuvil_aot.compiler.codegen.writer import Writer, c_string
from cuvil_aot.compiler.ir.signature import Tree, leaves


@dataclass(frozen=True)
class Checks:
    """What the call checks beyond the declared items: the dicts whose keys the code looks
    at must hold exactly those (labels); what the code read from an instance's class (label
    -> (name, hideable)), a subclass must find there too, and the instance must not hide
    in its ``__dict__`` where hideable; ``classes``: each instance's class by `Struct.cls`,
    its slot in the module's ``cv_classes``."""

    closed: frozenset[str]
    from_class: dict[str, tuple[tuple[str, bool], ...]]
    classes: dict[str, int]


def unpack(w: Writer, index: int, name: str, structure: tuple[tuple[str, Tree], ...],
           checks: Checks) -> None:
    """The body of ``py_f{index}`` after its argv: parse the arguments, take them apart,
    call ``py_f{index}_leaves``, release what was taken."""
    items = sum(_count(t) for _, t in structure)
    keys = sum(_count(t, named_only=True) for _, t in structure)
    top = ", ".join(c_string(a) for a, _ in structure)
    w.line(f"static const char *const arg_names[] = {{{top}}};")
    if keys:
        w.line(f"static PyObject *keys[{keys}];")
    w.line(f"PyObject *top[{len(structure)}], *held[{max(items, 1)}] = {{0}}, *res = NULL;")
    w.line(f"if (cv_parse_args({c_string(name)}, arg_names, {len(structure)}, args, nargs, "
           "kwnames, top, &out, &stream) < 0) return NULL;")
    counter = {"held": 0, "keys": 0}
    for a, (_, tree) in enumerate(structure):
        _take(w, name, f"top[{a}]", tree, checks, counter)
    w.line(f"res = py_f{index}_leaves(argv, out, stream);")
    w.line("done:")
    w.line(f"for (int i = 0; i < {items}; i++) Py_XDECREF(held[i]);")
    w.line("return res;")


def _take(w: Writer, fname: str, obj: str, tree: Tree, checks: Checks,
          counter: dict[str, int]) -> None:
    """``obj`` (a C expression) is ``tree``'s argument: a leaf into its argv slot, or its
    items taken apart in turn."""
    if isinstance(tree, int):
        w.line(f"argv[{tree}] = {obj};")
        return
    if tree.optional:  # None: its leaves are, in the version that takes it so
        w.line(f"if ({obj} == Py_None) {{")
        for leaf in leaves(tree):
            w.line(f"argv[{leaf}] = Py_None;")
        w.line("} else {")
        _take(w, fname, obj, replace(tree, optional=False), checks, counter)
        w.line("}")
        return
    f, label = c_string(fname), c_string(tree.label)
    if tree.kind == "list":
        w.line(f"if (cv_list_check({f}, {label}, {obj}, {len(tree.items)}) < 0) goto done;")
    read = checks.from_class.get(tree.label, ())
    if tree.kind == "object":
        shown = tree.cls.rpartition(":")[2]
        slot = checks.classes[tree.cls]
        same = _names(n for n, _ in read if n) if ("", False) not in read else "NULL"
        w.line(f"if (cv_instance_check({f}, {label}, {obj}, cv_classes[{slot}], "
               f"{c_string(shown)}, {same}) < 0) goto done;")
    for key, sub in tree.items:
        h = counter["held"]
        counter["held"] += 1
        if tree.kind == "list":
            w.line(f"held[{h}] = Py_NewRef(PySequence_Fast_GET_ITEM({obj}, {key}));")
        else:
            k = counter["keys"]
            counter["keys"] += 1
            take = "cv_dict_item" if tree.kind == "dict" else "cv_attribute"
            w.line(f"held[{h}] = {take}({f}, {label}, {obj}, {c_string(str(key))}, &keys[{k}]);")
            w.line(f"if (!held[{h}]) goto done;")
        _take(w, fname, f"held[{h}]", sub, checks, counter)
    if tree.label in checks.closed:
        declared = ", ".join(repr(k) for k, _ in tree.items)
        w.line(f"if (cv_dict_exact({f}, {label}, {obj}, {len(tree.items)}, "
               f"{c_string(declared)}) < 0) goto done;")
    hideable = [n for n, h in read if h]
    if hideable:
        w.line(f"if (cv_not_hidden({f}, {label}, {obj}, {_names(hideable)}) < 0) goto done;")


def _names(names: Any) -> str:
    """A C string of ``names``, each ended by a NUL."""
    return c_string("".join(n + "\0" for n in names))


def classes(structures: list[tuple[tuple[str, Tree], ...]]) -> dict[str, int]:
    """Every instance argument's class in ``structures``, numbered: their ``cv_classes``
    slots, which binding fills with the class objects (``_cv_set_classes``)."""
    found: dict[str, int] = {}

    def walk(tree: Tree) -> None:
        if not isinstance(tree, int):
            if tree.kind == "object":
                found.setdefault(tree.cls, len(found))
            for _, sub in tree.items:
                walk(sub)
    for structure in structures:
        for _, tree in structure:
            walk(tree)
    return found


def _count(tree: Tree, named_only: bool = False) -> int:
    """Items under ``tree`` (of dicts and instances only: the names' cache slots)."""
    if isinstance(tree, int):
        return 0
    own = len(tree.items) if tree.kind != "list" or not named_only else 0
    return own + sum(_count(t, named_only) for _, t in tree.items)
