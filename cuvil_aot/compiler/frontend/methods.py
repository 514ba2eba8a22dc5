"""A method's ``self`` in compiled code: what ``self.name`` is, and calls through it.

``self.w``, an attribute the class body declares (`signature.declared_attributes`), is its
argument value: an array, a number, or a dict, list or instance of them. Any other name is
the class's own attribute, found as Python finds it on the type (`inspect.getattr_static`):
a method (a `BoundMethod`, inlined with ``self`` first when called), a property (its
getter inlined at once), a static or class method, or a constant (compiled in, part of the
cache key as a global is). An instance could hide a method or a constant under the same
name in its ``__dict__``, or be of a subclass that overrides one: the wrapper refuses it
where it does (`ArgumentObject.read_from_class`).
"""

from __future__ import annotations

import dataclasses
import inspect
import types
import typing
from typing import TYPE_CHECKING, Any

from cuvil_aot.compiler.frontend.struct_arguments import ArgumentObject
from cuvil_aot.compiler.frontend.user_error import UserError
from cuvil_aot.errors import SourceSpan
from cuvil_aot.marks import as_marked

if TYPE_CHECKING:
    from cuvil_aot.compiler.frontend.interp import Interpreter

DECLARE_HINT = "an array (w: cv.f32['I', 'O']), a number (n_head: int), or a dict, list " \
    "or class of them"


@dataclasses.dataclass(frozen=True)
class BoundMethod:
    """``self.f`` of a method ``f``: called, ``f`` is inlined with ``first`` in front."""

    func: types.FunctionType
    first: Any


def attribute(interp: Interpreter, obj: ArgumentObject, name: str, span: SourceSpan) -> Any:
    """``obj.name`` in compiled code."""
    if name in obj.items:
        return obj.read(name)
    try:
        found = inspect.getattr_static(obj.cls, name)
    except AttributeError:
        raise _undeclared(obj, name, span) from None
    if isinstance(found, property) and isinstance(found.fget, types.FunctionType):
        obj.read_from_class(name, hideable=False)  # a data descriptor: no __dict__ hides it
        return interp.call_function(found.fget, [obj], {}, span)
    obj.read_from_class(name)  # the instance must not hide it
    found = as_marked(found)
    found = getattr(found, "py_func", found)  # another marked method: its Python body
    if isinstance(found, staticmethod):
        return found.__func__
    if isinstance(found, classmethod) and isinstance(found.__func__, types.FunctionType):
        obj.read_from_class("", hideable=False)  # what it reads of cls: this class only
        return BoundMethod(found.__func__, obj.cls)
    if isinstance(found, types.FunctionType):
        return BoundMethod(found, obj)
    interp.record_global(obj.cls.__module__, f"{obj.cls.__qualname__}.{name}", found, span)
    return found


def builtin(interp: Interpreter, fn: Any, args: list[Any], span: SourceSpan) -> Any:
    """``getattr(self, name[, default])``, ``isinstance(self, cls)`` and ``hasattr(self,
    name)`` as Python answers them of the instance the call will pass (of its class
    exactly); None where ``fn`` is none of them."""
    obj = args[0]
    if fn is isinstance and len(args) == 2:
        obj.read_from_class("", hideable=False)  # answered for this class: exactly it
        return issubclass(obj.cls, args[1])
    if fn in (getattr, hasattr) and len(args) >= 2 and isinstance(args[1], str):
        known = args[1] in obj.items or hasattr(obj.cls, args[1])
        if fn is hasattr:
            if not known:
                raise _undeclared(obj, args[1], span)
            return True
        if known or len(args) == 2:
            return attribute(interp, obj, args[1], span)
        raise UserError(f"getattr({obj.label}, {args[1]!r}, default): the class does not "
                        "declare it, and whether the instance has it is known only at the "
                        "call", span, f"declare it in class {obj.cls.__name__}")
    return None


def called(obj: ArgumentObject, span: SourceSpan) -> BoundMethod:
    """``self.layer(x)``: what calling an instance runs, its class's ``__call__``."""
    obj.read_from_class("__call__", hideable=False)  # found on the type, never the instance
    found = as_marked(inspect.getattr_static(obj.cls, "__call__", None))
    found = getattr(found, "py_func", found)
    if not isinstance(found, types.FunctionType):
        raise UserError(f"{obj!r} is not callable: its class defines no __call__", span)
    return BoundMethod(found, obj)


def _undeclared(obj: ArgumentObject, name: str, span: SourceSpan) -> UserError:
    cls = obj.cls
    hint = next((vars(b)["__annotations__"][name] for b in cls.__mro__
                 if name in vars(b).get("__annotations__", {})), None)
    if hint is not None:
        shown = hint if isinstance(hint, str) else repr(hint).replace("typing.", "") \
            if typing.get_origin(hint) else getattr(hint, "__name__", repr(hint))
        what = f"declare it as {DECLARE_HINT}{_constant_hint(name)}"
        if shown.lower().startswith(("list[", "tuple[", "sequence[")):  # no length
            what = f"a list of known length: `{name}: [Block] * 12`, or `cv.like(...)` of one"
        return UserError(f"{obj.label}.{name} is declared as {shown}, which compiled code "
                         "cannot take as an argument", span, what)
    return UserError(f"{obj.label}.{name}: class {cls.__name__} does not declare '{name}'; "
                     "compiled code reads an instance by the attributes its class body "
                     "declares", span, f"declare it in class {cls.__name__}: `{name}: ...`, "
                     f"{DECLARE_HINT}{_constant_hint(name)}")


def _constant_hint(name: str) -> str:
    """How a setting that is the same for every instance (a string, a function, a flag, as
    transformers' configs set them in ``__init__``) compiles: a constant of the class."""
    return (f"; or, where it is the same for every instance (a string, a function, a flag), "
            f"a constant of the class: `{name} = ...` in its body (a function as "
            "`staticmethod(f)`), which an instance may set only to the class's value")
