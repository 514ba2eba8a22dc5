"""Frontend: marked Python functions -> IR functions, one per declared signature."""

from __future__ import annotations

import types
from dataclasses import dataclass, field

from cuvil_aot.compiler.frontend.interp import POISON, Interpreter, Trace
from cuvil_aot.compiler.frontend.signature import Signature, SignatureSyntaxError, signatures_of
from cuvil_aot.compiler.frontend.source import (
    SourceUnavailable,
    function_source,
    signature_diagnostic,
)
from cuvil_aot.compiler.frontend.user_error import UserError
from cuvil_aot.compiler.ir.node import Function, Node
from cuvil_aot.compiler.ir.ops import Op
from cuvil_aot.errors import CompileError, Diagnostic
from cuvil_aot.marks import marked

__all__ = ["LoweredModule", "lower_module"]


@dataclass
class LoweredModule:
    name: str
    functions: dict[str, list[tuple[Signature, Function]]] = field(default_factory=dict)
    trace: Trace = field(default_factory=Trace)
    sources: dict[str, str] = field(default_factory=dict)  # marked function -> normalized AST


def lower_module(module: types.ModuleType) -> LoweredModule:
    """Lower every signature of every marked function; raise CompileError with all errors."""
    result = LoweredModule(module.__name__)
    diagnostics: list[Diagnostic] = []
    for name, dispatcher in marked(module).items():
        fn = dispatcher.py_func
        try:
            result.sources[name] = function_source(fn).normalized
            signatures = signatures_of(dispatcher)
        except (SignatureSyntaxError, SourceUnavailable) as exc:
            diagnostics.append(signature_diagnostic(fn, str(exc)))
            continue
        lowered = []
        for sig in signatures:
            function = lower_function(name, fn, sig, result.trace, diagnostics)
            if function is not None:
                lowered.append((sig, function))
        result.functions[name] = lowered
    if diagnostics:
        unique = list({d.render(): d for d in diagnostics}.values())  # once per signature
        raise CompileError(unique)
    return result


def lower_function(name: str, fn: types.FunctionType, sig: Signature, trace: Trace,
                   diagnostics: list[Diagnostic]) -> Function | None:
    before = len(diagnostics)
    interp = Interpreter(trace, diagnostics)
    params = tuple(Node(Op.PARAM, p.type, attrs=(i, p.name)) for i, p in enumerate(sig.params))
    try:
        value = interp.call_function(fn, list(params), {}, None)
    except UserError as err:
        diagnostics.append(err.diagnostic)
        return None
    if len(diagnostics) > before or value is POISON:
        return None
    outputs = value if isinstance(value, tuple) else (value,)
    # A returned parameter or constant still needs a kernel that copies it out.
    outputs = tuple(Node(Op.CAST, o.type, (o,), span=o.span)
                    if isinstance(o, Node) and o.op in (Op.PARAM, Op.CONST) and not o.type.weak
                    else o for o in outputs)
    src = function_source(fn)
    for out in outputs:
        if not isinstance(out, Node) or out.type.weak:
            diagnostics.append(Diagnostic(
                src.span(src.tree), f"{name} must return arrays (or a tuple of arrays), got "
                f"{type(out).__name__}", "return NumPy array expressions"))
            return None
    return Function(name, sig.params, params, outputs, isinstance(value, tuple),
                    requirements=tuple(dict.fromkeys(interp.requirements)),
                    derived=tuple(dict.fromkeys(interp.derived)))
