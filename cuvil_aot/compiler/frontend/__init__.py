"""Frontend: marked Python functions -> IR functions, one per declared signature."""

from __future__ import annotations

import types
from dataclasses import dataclass, field, replace
from typing import Any

from cuvil_aot.compiler.frontend import assign, call_checks, promotion, versions
from cuvil_aot.compiler.frontend.interp import POISON, Interpreter, Trace
from cuvil_aot.compiler.frontend.signature import (
    Signature,
    SignatureSyntaxError,
    has_instances,
    merge_sizes,
    signatures_of,
)
from cuvil_aot.compiler.frontend.size_one import (
    size_one_specializations,
    specializations_per_version,
)
from cuvil_aot.compiler.frontend.source import (
    SourceUnavailable,
    function_source,
    signature_diagnostic,
)
from cuvil_aot.compiler.frontend.struct_arguments import argument_value
from cuvil_aot.compiler.frontend.user_error import UserError
from cuvil_aot.compiler.frontend.values import to_node
from cuvil_aot.compiler.ir.construct import assuming
from cuvil_aot.compiler.ir.node import Function, Node
from cuvil_aot.compiler.ir.ops import Op
from cuvil_aot.compiler.ir.signature import NONE_DTYPE, none_arguments
from cuvil_aot.compiler.ir.types import Dim, TensorType
from cuvil_aot.errors import (
    CompileError,
    Diagnostic,
    PromotionWarning,
    SourceSpan,
    internal_diagnostic,
    render_all,
    warn_user,
)
from cuvil_aot.marks import Marked, marked

__all__ = ["LoweredModule", "lower_module"]


@dataclass
class LoweredModule:
    """The lowered functions of a module, and those refused, each with its diagnostics.

    A refused function is left out of the build; calling it raises its diagnostics."""

    name: str
    functions: dict[str, list[tuple[Signature, Function]]] = field(default_factory=dict)
    trace: Trace = field(default_factory=Trace)
    sources: dict[str, str] = field(default_factory=dict)  # marked function -> normalized AST
    refused: dict[str, list[Diagnostic]] = field(default_factory=dict)
    defs: dict[str, SourceSpan | None] = field(default_factory=dict)  # each def line
    promotions: dict[str, list[str]] = field(default_factory=dict)  # promotion.py's warnings

    def refuse(self, name: str, diagnostics: list[Diagnostic]) -> None:
        """Take ``name`` out of the build; its diagnostics say why (each once)."""
        self.functions.pop(name, None)
        found = self.refused.setdefault(name, [])
        found += [d for d in diagnostics if d not in found]

    def rendered_refusals(self) -> dict[str, str]:
        """Each refused function's diagnostics as its CompileError shows them."""
        return {name: render_all(diags) for name, diags in self.refused.items()}

    def warn(self) -> None:
        """Warn of each float32 array a NumPy float64 scalar makes float64 (promotion.py),
        in the functions that are built."""
        for name in self.functions:
            for text in self.promotions.get(name, []):
                warn_user(text, PromotionWarning)

    def check(self) -> None:
        """Raise one CompileError with every diagnostic of every refused function."""
        if self.refused:
            raise CompileError([d for diags in self.refused.values() for d in diags])


def lower_module(module: types.ModuleType) -> LoweredModule:
    """Lower every signature of every marked function, function by function: one refused
    (an error in it, or a crash of the compiler on it) lands in ``refused`` with its
    diagnostics, and the others still lower. ``check()`` raises them all at once."""
    result = LoweredModule(module.__name__)
    for name, dispatcher in marked(module).items():
        fn = dispatcher.py_func
        diagnostics: list[Diagnostic] = []
        with promotion.collecting() as promoted:
            try:
                lowered = _lower_marked(name, dispatcher, result, diagnostics)
            except Exception as exc:  # a bug in cuvil_aot: refuse this function, at its def
                diagnostics.append(internal_diagnostic(def_span(fn), exc))
        if diagnostics:
            result.refuse(name, diagnostics)
        else:
            result.functions[name] = lowered
            result.promotions[name] = [promotion.message(*p) for p in promoted]
    return result


def def_span(fn: types.FunctionType) -> SourceSpan | None:
    """The def line of ``fn``, or None when its source cannot be read."""
    return signature_diagnostic(fn, "").span


def _lower_marked(name: str, dispatcher: Marked, result: LoweredModule,
                  diagnostics: list[Diagnostic]) -> list[tuple[Signature, Function]]:
    fn = dispatcher.py_func
    try:
        result.sources[name] = function_source(fn).normalized
        result.defs[name] = def_span(fn)
        signatures = signatures_of(dispatcher)
        if any(map(has_instances, signatures)):  # pass only the attributes the code reads
            read = _attributes_read(name, fn, signatures, result.trace, diagnostics)
            if read is None:
                return []
            signatures = [merge_sizes(sig, read[1]) for sig in signatures_of(dispatcher, read[0])]
    except (SignatureSyntaxError, SourceUnavailable) as exc:
        diagnostics.append(signature_diagnostic(fn, str(exc), getattr(exc, "hint", "")))
        return []

    def specialized(special: Signature) -> Function | None:
        if special in signatures:  # declared: lowered in its own place
            return None
        function = _lower_quietly(name, fn, special, result.trace)
        return function.replace(precision=dispatcher.precision) if function else None

    lowered = []
    for declared in signatures:
        made = versions.lowered(declared, lambda s: _lower_saying_none(
            name, fn, s, result.trace, diagnostics))
        limit = specializations_per_version(len(made))
        for sig, function in made:
            if function is not None:
                function = function.replace(precision=dispatcher.precision)
                lowered.append((sig, function))
                lowered += size_one_specializations(sig, function, specialized, limit)
    return lowered


def _lower_saying_none(name: str, fn: types.FunctionType, sig: Signature, trace: Trace,
                       diagnostics: list[Diagnostic]) -> Function | None:
    """`lower_function`, its diagnostics saying which arguments are None in ``sig``."""
    before = len(diagnostics)
    function = lower_function(name, fn, sig, trace, diagnostics)
    diagnostics[before:] = [_where_none(sig, d) for d in diagnostics[before:]]
    return function


def _where_none(sig: Signature, diagnostic: Diagnostic) -> Diagnostic:
    """A diagnostic of the version of ``sig`` where some arguments are None, saying so."""
    nones = none_arguments(sig)
    if not nones:
        return diagnostic
    return replace(diagnostic, message=f"{diagnostic.message} (where {' and '.join(nones)} "
                                       f"{'is' if len(nones) == 1 else 'are'} None)",
                   hint=diagnostic.hint or f"test it first: `if {nones[0]} is not None:`")


def _attributes_read(name: str, fn: types.FunctionType, signatures: list[Signature],
                     trace: Trace, diagnostics: list[Diagnostic]
                     ) -> tuple[set[str], list[tuple[Dim, Dim]]] | None:
    """The labels of the instance arguments' attributes the code reads (and of the
    instances it reads anything of), and the sizes it assumes equal in every version of
    every signature, from lowering each with every attribute their classes declare; None
    where that is refused (its diagnostics said). (Only what all assume: with only the
    attributes read, other versions may remain, and one version's condition may make
    sizes equal, ``n_rep == 1``, that another's does not.)"""
    used: set[str] = set()
    equal: list[tuple[Dim, Dim]] | None = None
    for _, function in [v for s in signatures for v in versions.lowered(
            s, lambda s: lower_function(name, fn, s, trace, diagnostics, used))]:
        if function is None:
            return None
        mine = [(a.left, a.right) for a in function.assumptions]
        equal = mine if equal is None else [e for e in equal if e in mine]
    return used, equal or []


def _lower_quietly(name: str, fn: types.FunctionType, sig: Signature,
                   trace: Trace) -> Function | None:
    """A specialization lowered, or None where it is refused (its errors unsaid: the
    general signature's refusal at the call names what to write instead)."""
    diagnostics: list[Diagnostic] = []
    try:
        function = lower_function(name, fn, sig, trace, diagnostics)
    except Exception:  # a bug the general signature did not show: keep the refusal
        return None
    return None if diagnostics else function


def lower_function(name: str, fn: types.FunctionType, sig: Signature, trace: Trace,
                   diagnostics: list[Diagnostic], used: set[str] | None = None) -> Function | None:
    before = len(diagnostics)
    interp = Interpreter(trace, diagnostics)
    closed: set[str] = set()  # dict arguments whose keys the code looks at
    from_class: set[tuple[str, str, bool]] = set()  # what the code read from instances' classes
    # a parameter None in this version: a 0-d bool node no one reads; the code sees None
    params = tuple(Node(Op.PARAM, TensorType("bool", ()) if p.type.dtype == NONE_DTYPE else p.type,
                        attrs=(i, p.name)) for i, p in enumerate(sig.params))
    seen = tuple(None if p.type.dtype == NONE_DTYPE else n for p, n in zip(sig.params, params))
    try:
        # dimensions NumPy checks at the call (construct.unify), and Python's and NumPy's
        # errors on numbers the call knows (call_checks.py); this version's decisions
        with assuming() as facts, call_checks.recording(interp.run_time), \
                versions.deciding(sig):
            value = interp.call_function(fn, [argument_value(t, seen, closed, from_class,
                                                             set() if used is None else used)
                                              for _, t in sig.arguments], {}, None)
    except UserError as err:
        diagnostics.append(err.diagnostic)
        return None
    except versions.Undecided:  # lowered again, once each way: what this one said is moot
        del diagnostics[before:]
        raise
    if len(diagnostics) > before or value is POISON:
        return None
    src = function_source(fn)
    outputs: list[Node] = []
    returns = _returns(value, outputs, src.span(src.tree))
    if isinstance(returns, str):
        diagnostics.append(Diagnostic(
            src.span(src.tree), f"{name} must return arrays or numbers (or tuples of them, "
            f"or None), got a {returns}", "return NumPy array expressions"))
        return None
    outputs, writes = assign.finish(interp, outputs, facts)  # arguments written into
    nodes = facts.apply(params + tuple(outputs))  # one symbol for dimensions assumed equal
    return Function(name, sig.params, nodes[:len(params)], nodes[len(params):], returns,
                    **writes,
                    requirements=tuple(dict.fromkeys(interp.requirements)),
                    derived=tuple(dict.fromkeys(interp.derived)),
                    assumptions=tuple(dict.fromkeys(facts.made)),
                    run_time=tuple(dict.fromkeys(interp.run_time)), closed=tuple(sorted(closed)),
                    from_class=tuple(sorted(from_class)),
                    exact_bools=tuple(sorted(interp.exact_bools)))


def _returns(value: Any, outputs: list[Node], span: SourceSpan) -> Any:
    """`Function.returns` of what the code returned, its arrays and numbers appended to
    ``outputs``; else the name of the type that cannot be returned."""
    if value is None:
        return None
    if isinstance(value, tuple) and not isinstance(value, Node):
        items = [_returns(v, outputs, span) for v in value]
        return next((i for i in items if isinstance(i, str)), tuple(items))
    node = _returned(value, span)
    if node is None:
        return type(value).__name__
    outputs.append(node)
    return len(outputs) - 1


def _returned(value: Any, span: SourceSpan) -> Node | None:
    """What the function returns as an output node; None if it is no array or number.

    A parameter or constant still needs a kernel that copies it out, and a Python number
    (weak under NEP 50) comes back as NumPy's scalar of its type (np.float64, np.int64)."""
    if isinstance(value, bool | int | float | Dim) and not isinstance(value, Node):
        value = to_node(value, span)
    if not isinstance(value, Node):
        return None
    if value.type.weak or value.op in (Op.PARAM, Op.CONST):
        return Node(Op.CAST, TensorType(value.type.dtype, value.type.shape), (value,),
                    span=value.span)
    return value
