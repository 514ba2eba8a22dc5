"""Signatures: from annotations (``cv.f32["B", 128]``) or strings ("f32[B,4H], float").

A dict or list of such types (``{"w": cv.f32["I", "O"], "b": cv.f32["O"]}``, ``[layer] * 4``;
in strings ``{w: f32[I, O], b: f32[O]}``) declares an argument that is a dict or list of
arrays and numbers; each of its leaves is a parameter (`ir/signature.Struct`). A class whose
body annotates its attributes so is the type of a method's ``self`` (and of an attribute).

The Signature type itself is in ir/signature.py; this module parses into it.
"""

from __future__ import annotations

import ast
import inspect
import re
import sys
import types
import typing
from dataclasses import replace
from typing import Any

from cuvil_aot.compiler.ir.construct import total
from cuvil_aot.compiler.ir.node import Param
from cuvil_aot.compiler.ir.signature import NONE_DTYPE, Struct, Tree, leaves
from cuvil_aot.compiler.ir.signature import Signature as Signature  # re-exported
from cuvil_aot.compiler.ir.types import Dim, TensorType, np_dtype
from cuvil_aot.marks import ARRAY_DTYPES, ArrayType, DType, Marked, OptionalType, bool_

_DTYPES = {d.short: d for d in ARRAY_DTYPES} | {"bool": bool_}
_SCALARS = {"float": "float64", "int": "int64", "bool": "bool"}
SYNTAX = ("f32[B, 128], f64[4H], i64[N], float, int, f32[N] | None, or a dict or list of "
          f"them (dtypes: {' '.join(d.short for d in ARRAY_DTYPES)})")
MAX_OPTIONAL = 3  # arguments that may be None: each doubles the versions compiled


class SignatureSyntaxError(ValueError):
    def __init__(self, message: str, hint: str = "") -> None:
        super().__init__(message)
        self.hint = hint  # what to write instead, where the message alone does not say


def parse_dim(spec: Any, scope: str = "") -> Dim:
    """128, "B", "4H", "4*H", "H+1", "B*H" -> Dim; each name prefixed with ``scope``."""
    if isinstance(spec, bool):
        raise SignatureSyntaxError(f"invalid dimension {spec!r}")
    if isinstance(spec, int):
        if spec < 0:
            raise SignatureSyntaxError(f"negative dimension {spec}")
        return Dim.of(spec)
    if isinstance(spec, Dim):
        return spec
    if not isinstance(spec, str):
        raise SignatureSyntaxError(f"invalid dimension {spec!r}: use an int or a name like 'B'")
    try:
        tree = ast.parse(_implicit_mul(spec), mode="eval").body
    except SyntaxError:
        raise SignatureSyntaxError(f"invalid dimension expression {spec!r}") from None
    return _dim_expr(tree, spec, scope)


def _implicit_mul(text: str) -> str:
    return re.sub(r"(\d)\s*([A-Za-z_])", r"\1*\2", text)


def _dim_expr(node: ast.expr, spec: str, scope: str = "") -> Dim:
    if isinstance(node, ast.Name):
        return Dim.of(scope + node.id)
    if isinstance(node, ast.Constant) and isinstance(node.value, int):
        return Dim.of(node.value)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Sub | ast.Mult):
        a, b = _dim_expr(node.left, spec, scope), _dim_expr(node.right, spec, scope)
        return a + b if isinstance(node.op, ast.Add) else a - b if isinstance(node.op, ast.Sub) \
            else a * b
    raise SignatureSyntaxError(f"invalid dimension expression {spec!r}: use +, - and * of "
                               "names and integers")


def param_from_spec(name: str, spec: Any, label: str = "", scope: str = "") -> Param:
    if spec is None or spec is type(None):
        return Param(name, TensorType(NONE_DTYPE, ()), True, label)
    if spec in (float, int, bool):
        return Param(name, TensorType(_SCALARS[spec.__name__], (), weak=True), True, label)
    if isinstance(spec, DType):
        spec = ArrayType(spec, ())
    if isinstance(spec, ArrayType):
        dims = tuple(parse_dim(d, scope) for d in spec.dims)
        try:  # bfloat16: registers ml_dtypes' dtype with NumPy, or says to install it
            np_dtype(spec.dtype.np_dtype)
        except ValueError as exc:
            raise SignatureSyntaxError(f"parameter '{label or name}': {exc}") from None
        return Param(name, TensorType(spec.dtype.np_dtype, dims), False, label)
    raise SignatureSyntaxError(f"parameter '{label or name}': unsupported annotation {spec!r}; "
                               f"expected {SYNTAX}")


def signature_from_specs(names: list[str], specs: list[Any], shared: str = "",
                         used: set[str] | None = None) -> list[Signature]:
    """The parameters ``names`` typed by ``specs``; a dict or list spec becomes a `Struct`
    whose leaves are parameters named ``p__key`` (C identifiers), labelled ``p['key']``.
    The size names of an instance's attributes are its own (``I`` of ``self.up.w`` is
    ``self__up__I``: a class is reused at other sizes), except those of the parameter
    ``shared`` (a method's ``self``), which are the signature's. With ``used``, an
    instance holds only the attributes whose labels it names (what the code reads).
    An argument or item that may be None (``f32[N] | None``, ``tuple[X, Y] | None``) gives
    two versions of the signature, one where it is None: several, every combination."""
    params: list[Param] = []
    optional: list[tuple[str, list[int]]] = []  # (label, leaves) of what may be None
    taken = set(names)

    def leaf_name(path: str) -> str:
        base = re.sub(r"\W", "_", path)
        name, n = base, 1
        while name in taken:
            name, n = f"{base}_{n}", n + 1
        taken.add(name)
        return name

    def walk(spec: Any, path: str, label: str, depth: int = 0, scope: str = "") -> Tree:
        if depth > 16:
            raise SignatureSyntaxError(f"parameter '{label}': types nested over 16 deep (a "
                                       "class whose attributes hold itself?)")
        inner = optional_inner(spec)
        if inner is not None:
            before = len(optional)
            tree = walk(inner, path, label, depth, scope)
            if len(optional) > before or any(params[i].type.dtype == NONE_DTYPE
                                              for i in leaves(tree)):
                raise SignatureSyntaxError(
                    f"parameter '{label}': it may be None and so may its items ({inner!r})",
                    "declare the items that may be None, or the whole, not both")
            if not leaves(tree):  # its versions would be one and the same: None in both
                raise SignatureSyntaxError(
                    f"parameter '{label}': {inner!r} may be None, but holds no array or number "
                    "the code reads, so the call could not tell None from one",
                    "declare it without `| None` (or a default of None)")
            optional.append((label, leaves(tree)))
            return tree if isinstance(tree, int) else replace(tree, optional=True)
        spec = _fixed_tuple(spec, label)
        if typing.is_typeddict(spec):
            spec = _typed_dict_items(spec)
        if isinstance(spec, dict):
            if not spec or not all(isinstance(k, str) for k in spec):
                raise SignatureSyntaxError(f"parameter '{label}': a dict type needs string "
                                           f"keys and at least one item, got {spec!r}")
            return Struct("dict", tuple((k, walk(v, f"{path}__{k}", f"{label}[{k!r}]",
                                                 depth + 1, scope))
                                        for k, v in spec.items()), label)
        if isinstance(spec, list | tuple):
            if not spec:
                raise SignatureSyntaxError(f"parameter '{label}': a list type needs at least "
                                           "one item")
            return Struct("list", tuple((i, walk(v, f"{path}__{i}", f"{label}[{i}]",
                                                 depth + 1, scope))
                                        for i, v in enumerate(spec)), label)
        if is_instance_type(spec) or (path == shared and isinstance(spec, type)):
            own = "" if path == shared else f"{path}__"
            return Struct("object", tuple((k, walk(v, f"{path}__{k}", f"{label}.{k}", depth + 1,
                                                   own))
                                          for k, v in declared_attributes(spec).items()
                                          if used is None or f"{label}.{k}" in used),
                          label, f"{spec.__module__}:{spec.__qualname__}")
        params.append(param_from_spec(leaf_name(path) if path != label else path, spec,
                                      "" if path == label else label, scope))
        return len(params) - 1

    trees = [(n, walk(s, n, n)) for n, s in zip(names, specs)]
    plain = all(isinstance(t, int) for _, t in trees)
    if len(optional) > MAX_OPTIONAL:
        shown = ", ".join(label for label, _ in optional)
        raise SignatureSyntaxError(
            f"{len(optional)} arguments may be None ({shown}): each doubles the versions "
            f"compiled, {2 ** len(optional)} in all; up to {MAX_OPTIONAL} are taken",
            "list the combinations you call with: signatures=['f32[N], None, ...', ...]")
    versions = [params]
    for _, group in optional:  # the version with each argument None after the one with it given
        versions = [v for given in versions
                    for v in (given, [param_from_spec(p.name, None, p.label) if i in group else p
                                      for i, p in enumerate(given)])]
    return [Signature(tuple(v), None if plain else tuple(trees)) for v in versions]


def _fixed_tuple(spec: Any, label: str) -> Any:
    """``tuple[X, Y]`` as the list type ``[X, Y]``; a list or tuple of any length refused."""
    origin, args = typing.get_origin(spec), typing.get_args(spec)
    if origin is tuple and args and Ellipsis not in args:
        return list(args)
    if origin in (list, tuple):
        raise SignatureSyntaxError(
            f"parameter '{label}': {spec!r} is a list of any length; the compiled code "
            "takes lists of a length known at the build", "declare the items: [X] * 12, or "
            "tuple[X, Y]")
    return spec


def optional_inner(spec: Any) -> Any:
    """X of ``X | None``, ``None | X``, ``Optional[X]`` (else None)."""
    if isinstance(spec, OptionalType):
        return spec.inner
    if typing.get_origin(spec) in (typing.Union, types.UnionType):
        others = [a for a in typing.get_args(spec) if a is not type(None)]
        if len(others) == 1 and len(typing.get_args(spec)) == 2:
            return others[0]
    return None


def parse_signature_string(text: str) -> list[Any]:
    """"f32[B,I], float" -> [ArrayType, float]."""
    try:
        tree = ast.parse(f"({_implicit_mul(text)},)", mode="eval").body
    except SyntaxError:
        raise SignatureSyntaxError(f"invalid signature {text!r}: expected {SYNTAX}") from None
    assert isinstance(tree, ast.Tuple)
    return [_spec(e, text) for e in tree.elts]


def _spec(node: ast.expr, text: str) -> Any:
    if isinstance(node, ast.Dict) and all(isinstance(k, ast.Name | ast.Constant)
                                          for k in node.keys):
        return {k.id if isinstance(k, ast.Name) else k.value: _spec(v, text)  # type: ignore[union-attr]
                for k, v in zip(node.keys, node.values)}
    if isinstance(node, ast.List | ast.Tuple):
        return [_spec(e, text) for e in node.elts]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult) \
            and isinstance(node.left, ast.List) and isinstance(node.right, ast.Constant) \
            and isinstance(node.right.value, int):
        return _spec(node.left, text) * node.right.value
    if isinstance(node, ast.Constant) and node.value is None:
        return None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr) and any(
            isinstance(e, ast.Constant) and e.value is None for e in (node.left, node.right)):
        other = node.right if isinstance(node.left, ast.Constant) else node.left
        return OptionalType(_spec(other, text))
    if isinstance(node, ast.Name):
        if node.id in _SCALARS:
            return {"float": float, "int": int, "bool": bool}[node.id]
        if node.id in _DTYPES:
            return _DTYPES[node.id]
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) \
            and node.value.id in _DTYPES:
        elts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        return ArrayType(_DTYPES[node.value.id], tuple(_dim_expr(e, text) for e in elts))
    raise SignatureSyntaxError(f"invalid signature {text!r} at {ast.unparse(node)!r}: "
                               f"expected {SYNTAX}")


def signatures_of(dispatcher: Marked, used: set[str] | None = None) -> list[Signature]:
    """The declared signatures of a marked function, from ``signatures=`` or annotations;
    with ``used``, its instance arguments hold only the attributes it names."""
    fn = dispatcher.py_func
    names = _param_names(fn)
    # a method's self: an instance of its class, by the attributes the class declares
    owner = [dispatcher.owner] if dispatcher.owner is not None and names else []
    shared = names[0] if owner else ""
    if dispatcher.signatures is not None:
        result = []
        for text in dispatcher.signatures:
            specs = owner + parse_signature_string(text)
            if len(specs) != len(names):
                raise SignatureSyntaxError(f"signature {text!r} has {len(specs) - len(owner)} "
                                           f"parameters, {fn.__name__} takes "
                                           f"{len(names) - len(owner)}"
                                           f"{' after self' if owner else ''}")
            result += signature_from_specs(names, specs, shared, used)
        return _same_structure(result, fn.__name__)
    hints = dict(fn.__annotations__)
    if owner:
        hints[names[0]] = owner[0]
    missing = [n for n in names if n not in hints]
    if missing:
        raise SignatureSyntaxError(f"parameter(s) {', '.join(missing)} of {fn.__name__} have no "
                                   "type annotation and no signatures=[...] was given",
                                   "an annotation each: x: cv.f32['B', 128], n: int, a dict "
                                   "p: {'w': cv.f32['I', 'O'], 'b': cv.f32['O']}, a list "
                                   "[LAYER] * 12; or signatures=['f32[B, 128], int, ...']")
    resolved = [_none_by_default(_resolve_annotation(hints[n], fn), fn, n) for n in names]
    return signature_from_specs(names, resolved, shared, used)


def _none_by_default(spec: Any, fn: Any, name: str) -> Any:
    """A parameter whose default is None may be None (``mask: cv.f32["B", "T"] = None``)."""
    param = inspect.signature(fn).parameters[name]
    if param.default is None and spec is not None and optional_inner(spec) is None:
        return OptionalType(spec)
    return spec


def merge_sizes(sig: Signature, equal: list[tuple[Dim, Dim]]) -> Signature:
    """``sig`` with each size name of an instance's own (``self__up__O``) that the code
    assumed equal to another size named after it: the instances of a model agree on their
    sizes, so a weight does not broadcast (a call where one is 1 instead is refused,
    never computed as if it were), and the size-one versions NumPy's broadcasting would
    otherwise need are not built. The signature's own names are kept where they join."""
    own = tuple(f"{name}__" for name, _ in sig.arguments)
    declared = {s for p in sig.params for s in p.symbols}  # not a size the call computes
    parent: dict[str, str] = {}

    def root(s: str) -> str:
        while parent.get(s, s) != s:
            s = parent[s]
        return s

    for left, right in equal:
        names = [next(iter(d.symbols)) for d in (left, right)
                 if len(d.symbols) == 1 and d == Dim.of(next(iter(d.symbols)))
                 and d.symbols <= declared]
        if len(names) == 2 and any(n.startswith(own) for n in names):
            a, b = sorted((root(n) for n in names), key=lambda n: (n.startswith(own), n))
            if a != b:
                parent[b] = a  # the signature's own name, else the first, stays
    renames = {s: Dim.of(root(s)) for s in parent}
    if not renames:
        return sig

    def renamed(d: Dim) -> Dim:
        return sum(((Dim.of(coeff) * total(tuple(renames.get(v, Dim.of(v)) for v in monomial)))
                    for monomial, coeff in d.terms), Dim.of(0))

    params = tuple(replace(p, type=TensorType(p.type.dtype, tuple(map(renamed, p.type.shape)),
                                              p.type.weak)) for p in sig.params)
    return Signature(params, sig.structure)


def has_instances(sig: Signature) -> bool:
    """Whether an argument of ``sig`` is, or holds, an instance of a class."""
    def walk(tree: Tree) -> bool:
        return not isinstance(tree, int) and (tree.kind == "object"
                                               or any(walk(t) for _, t in tree.items))
    return any(walk(t) for _, t in sig.arguments)


def _typed_dict_items(cls: Any) -> dict[str, Any]:
    """A TypedDict's keys and their types (its annotations, strings evaluated in its module:
    ``from __future__ import annotations``)."""
    items = {}
    for key, hint in cls.__annotations__.items():
        try:
            items[key] = _evaluated(hint, cls)
        except Exception as exc:
            raise SignatureSyntaxError(f"cannot evaluate the annotation {hint!r} of "
                                       f"{cls.__name__}[{key!r}]: {exc}") from None
    return items


def _evaluated(hint: Any, cls: type) -> Any:
    """An annotation of ``cls``, a string evaluated in its module."""
    if isinstance(hint, typing.ForwardRef):
        hint = hint.__forward_arg__
    if not isinstance(hint, str):
        return hint
    where = vars(sys.modules[cls.__module__]) if cls.__module__ in sys.modules else {}
    return eval(hint, where, {cls.__name__: cls})  # noqa: S307 - the user's annotation text


# where the classes are that are no user's model: not passed as instances
_NOT_INSTANCES = frozenset({"builtins", "typing", "types", "abc", "collections", "enum",
                            "dataclasses", "functools", "numpy", "cuvil_aot", "ml_dtypes",
                            "torch", "cupy", "jax"})


def is_instance_type(spec: Any) -> bool:
    """A user's class, whose instances are passed by their declared attributes."""
    return isinstance(spec, type) and not typing.is_typeddict(spec) \
        and spec.__module__.partition(".")[0] not in _NOT_INSTANCES


def declared_attributes(cls: type) -> dict[str, Any]:
    """The attributes the class body (and its bases') annotate with a type compiled code can
    take (an array, a number, a dict, list or class of them), base classes first; others
    (``name: str``, ``ClassVar``) are not arguments: reading one is refused (methods.py)."""
    found: dict[str, Any] = {}
    for base in reversed(cls.__mro__[:-1]):
        for key, hint in vars(base).get("__annotations__", {}).items():
            try:
                spec = _evaluated(hint, base)
            except Exception:  # noqa: BLE001 - not one compiled code takes: not an argument
                continue
            if passable(spec):
                found[key] = spec
    return found


def passable(spec: Any) -> bool:
    """A type an argument's item may have."""
    inner = optional_inner(spec)
    if inner is not None:
        return passable(inner)
    if typing.get_origin(spec) is tuple:
        return bool(typing.get_args(spec)) and all(passable(s) for s in typing.get_args(spec))
    if spec in (float, int, bool) or isinstance(spec, DType | ArrayType | dict):
        return True
    if isinstance(spec, list | tuple):
        return bool(spec) and all(passable(s) for s in spec)
    return typing.is_typeddict(spec) or is_instance_type(spec)


def _same_structure(signatures: list[Signature], fname: str) -> list[Signature]:
    """The wrapper takes a call's dicts and lists apart before it tries the signatures, so
    they declare the same keys and lengths (their leaves' types may differ)."""
    shapes = {_keys(s.arguments) for s in signatures}
    if len(shapes) > 1:
        raise SignatureSyntaxError(f"the signatures of {fname} declare different keys or "
                                   "lengths for a dict or list argument; declare the same")
    return signatures


def _keys(tree: Any) -> Any:
    if isinstance(tree, Struct):
        return (tree.kind, tree.cls, tree.optional, tuple((k, _keys(t)) for k, t in tree.items))
    if isinstance(tree, tuple):
        return tuple((n, _keys(t)) for n, t in tree)
    return None


def _resolve_annotation(hint: Any, fn: types.FunctionType) -> Any:
    if isinstance(hint, str):  # from __future__ import annotations
        try:
            return eval(hint, fn.__globals__)  # noqa: S307 - the user's own annotation text
        except Exception as exc:
            raise SignatureSyntaxError(f"cannot evaluate the annotation {hint!r}: {exc}") from None
    return hint


def _param_names(fn: types.FunctionType) -> list[str]:
    names = []
    for p in inspect.signature(fn).parameters.values():
        if p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            raise SignatureSyntaxError(f"parameter '{p.name}' of {fn.__name__}: *args, **kwargs "
                                       "and keyword-only parameters are not supported")
        if p.name == "out":
            raise SignatureSyntaxError(f"{fn.__name__}: a parameter may not be named 'out' "
                                       "(it is reserved for the output arrays)")
        names.append(p.name)
    return names
