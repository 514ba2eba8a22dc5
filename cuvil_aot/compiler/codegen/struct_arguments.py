"""Dict and list arguments (`ir/signature.Struct`): the wrapper takes each declared item
out of them, a new reference held until the call returns (no Python runs while kernels
do, but another thread may drop the caller's last reference to an item), into the
leaves' argv; the signatures are then matched on the leaves alone."""

from __future__ import annotations

from cuvil_aot.compiler.codegen.writer import Writer, c_string
from cuvil_aot.compiler.ir.signature import Tree


def unpack(w: Writer, index: int, name: str, structure: tuple[tuple[str, Tree], ...],
           closed: frozenset[str]) -> None:
    """The body of ``py_f{index}`` after its argv: parse the arguments, take them apart,
    call ``py_f{index}_leaves``, release what was taken. The dicts in ``closed`` (labels)
    must hold exactly their declared keys."""
    items = sum(_count(t) for _, t in structure)
    keys = sum(_count(t, dicts_only=True) for _, t in structure)
    top = ", ".join(c_string(a) for a, _ in structure)
    w.line(f"static const char *const arg_names[] = {{{top}}};")
    if keys:
        w.line(f"static PyObject *keys[{keys}];")
    w.line(f"PyObject *top[{len(structure)}], *held[{items}] = {{0}}, *res = NULL;")
    w.line(f"if (cv_parse_args({c_string(name)}, arg_names, {len(structure)}, args, nargs, "
           "kwnames, top, &out, &stream) < 0) return NULL;")
    counter = {"held": 0, "keys": 0}
    for a, (_, tree) in enumerate(structure):
        _take(w, name, f"top[{a}]", tree, closed, counter)
    w.line(f"res = py_f{index}_leaves(argv, out, stream);")
    w.line("done:")
    w.line(f"for (int i = 0; i < {items}; i++) Py_XDECREF(held[i]);")
    w.line("return res;")


def _take(w: Writer, fname: str, obj: str, tree: Tree, closed: frozenset[str],
          counter: dict[str, int]) -> None:
    """``obj`` (a C expression) is ``tree``'s argument: a leaf into its argv slot, or its
    items taken apart in turn."""
    if isinstance(tree, int):
        w.line(f"argv[{tree}] = {obj};")
        return
    label = tree.label
    if not tree.is_dict:
        w.line(f"if (cv_list_check({c_string(fname)}, {c_string(label)}, {obj}, "
               f"{len(tree.items)}) < 0) goto done;")
    for key, sub in tree.items:
        h = counter["held"]
        counter["held"] += 1
        if tree.is_dict:
            k = counter["keys"]
            counter["keys"] += 1
            w.line(f"held[{h}] = cv_dict_item({c_string(fname)}, {c_string(label)}, {obj}, "
                   f"{c_string(str(key))}, &keys[{k}]);")
            w.line(f"if (!held[{h}]) goto done;")
        else:
            w.line(f"held[{h}] = Py_NewRef(PySequence_Fast_GET_ITEM({obj}, {key}));")
        _take(w, fname, f"held[{h}]", sub, closed, counter)
    if label in closed:
        declared = ", ".join(repr(k) for k, _ in tree.items)
        w.line(f"if (cv_dict_exact({c_string(fname)}, {c_string(label)}, {obj}, "
               f"{len(tree.items)}, {c_string(declared)}) < 0) goto done;")


def _count(tree: Tree, dicts_only: bool = False) -> int:
    """Items under ``tree`` (of dicts only: the keys' cache slots)."""
    if isinstance(tree, int):
        return 0
    own = len(tree.items) if tree.is_dict or not dicts_only else 0
    return own + sum(_count(t, dicts_only) for _, t in tree.items)
