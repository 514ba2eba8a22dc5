"""Python AST -> IR, by abstract interpretation of the function body.

The interpreter runs the user's function with IR nodes standing in for arrays and Python
values for everything known at compile time (ints, floats, tuples, shape dimensions).
Calls to other functions are inlined, ``for _ in range(N)`` unrolls and ``if`` picks a
branch, so what reaches the IR is a straight-line tensor graph (a ``for`` over a run-time
range is one IR loop node of its own: loops.py; ``while``: while_loops.py).

Errors are collected, not thrown on the first: a failing statement records a diagnostic
and binds its targets to ``POISON``, which silently absorbs every later use, so one
compile reports every independent error of a module.
"""

from __future__ import annotations

import ast
import builtins
import inspect
import operator
import types
from collections.abc import MutableMapping
from dataclasses import dataclass, field
from typing import Any

from cuvil_aot.compiler.frontend import assign as assignment
from cuvil_aot.compiler.frontend import (
    branches,
    calls,
    local_functions,
    loops,
    methods,
    numpy_api,
    python_forms,
    subscript,
    ufunc_out,
    unrolled,
    values,
    while_loops,
)
from cuvil_aot.compiler.frontend.identity import identity
from cuvil_aot.compiler.frontend.operators import binary
from cuvil_aot.compiler.frontend.source import FunctionSource, function_source
from cuvil_aot.compiler.frontend.struct_arguments import ArgumentDict, ArgumentObject
from cuvil_aot.compiler.frontend.user_error import UserError
from cuvil_aot.compiler.frontend.values import apply, fold, literal_element, python_value, to_node
from cuvil_aot.compiler.ir.construct import Requirement, ShapeError, derived_symbol
from cuvil_aot.compiler.ir.node import Node
from cuvil_aot.compiler.ir.ops import Op
from cuvil_aot.compiler.ir.run_time import RunTimeSlice
from cuvil_aot.compiler.ir.types import Dim
from cuvil_aot.digest import Undigestible, describe
from cuvil_aot.errors import Diagnostic, SourceSpan, internal_diagnostic

MAX_UNROLL = unrolled.MAX_UNROLL
MAX_INLINE_DEPTH = 64

SUPPORTED_STATEMENTS = ("assignments (also tuple unpacking and +=), return, if, for, while, "
                        "def, assert, del, import, with np.errstate(...)")


class _Poison:
    """The value of an expression that already failed; absorbs every use."""

    def __repr__(self) -> str:
        return "<poison>"


POISON = _Poison()


@dataclass
class Trace:
    """What one compile read besides its own body: the cache key needs it."""

    inlined: dict[str, str] = field(default_factory=dict)  # qualified name -> normalized AST
    globals_read: dict[str, str] = field(default_factory=dict)  # module.name -> repr


@dataclass
class Frame:
    src: FunctionSource
    scope: MutableMapping[str, Any]
    globals: dict[str, Any]


class Interpreter:
    def __init__(self, trace: Trace, diagnostics: list[Diagnostic]):
        self.trace = trace
        self.diagnostics = diagnostics
        self.frames: list[Frame] = []
        self.requirements: list[Requirement] = []  # run-time shape checks (slices)
        self.derived: list[tuple[str, Dim, int | Dim]] = []  # symbols = ceil(length / step)
        self.run_time: list[RunTimeSlice] = []  # slices with run-time bounds
        self.loop_count = 0  # run-time loops so far (loops.py)
        self.loop_depth = 0  # inside a run-time loop's body
        self.loop_params: list[set[int]] = []  # ids of each enclosing loop's parameters
        self.while_depth = 0  # counted while loops being run (while_loops.py)
        self.exact_bools: set[int] = set()  # bool arguments compared by `is` (identity.py)

    # Spans -----------------------------------------------------------------
    def span(self, node: ast.AST) -> SourceSpan:
        return self.frames[-1].src.span(node)

    # Calls -----------------------------------------------------------------
    def call_function(self, fn: types.FunctionType, args: list[Any], kwargs: dict[str, Any],
                      call_span: SourceSpan | None) -> Any:
        """Inline ``fn`` with the given argument values and return its result."""
        self.check_depth(fn.__name__, call_span)
        src = function_source(fn)
        self.trace.inlined.setdefault(f"{fn.__module__}.{fn.__qualname__}", src.normalized)
        try:
            bound = inspect.signature(fn).bind(*args, **kwargs)
        except TypeError as exc:
            raise UserError(f"{fn.__name__}(): {exc}", call_span) from None
        bound.apply_defaults()
        first = len(self.diagnostics)
        result = self.run_frame(Frame(src, dict(bound.arguments), fn.__globals__), src.tree.body)
        if len(self.diagnostics) > first and _numpy_source(fn):
            self._refuse_numpy_body(fn, first, call_span)
        return result

    def _refuse_numpy_body(self, fn: types.FunctionType, first: int,
                           call_span: SourceSpan | None) -> None:
        """NumPy functions written in Python (np.triu_indices) are inlined like the user's
        own; where their body holds what the compiler refuses, the error is the user's
        call, with NumPy's line as a note, not a caret in NumPy's source alone."""
        inner = self.diagnostics[first]
        del self.diagnostics[first:]
        notes = ((inner.span, inner.message),) if inner.span else ()
        raise UserError(f"np.{fn.__name__}() is written in Python inside NumPy, and that "
                        "code does not compile", call_span, numpy_api.SUPPORTED_FUNCTIONS, notes)

    def check_depth(self, name: str, span: SourceSpan | None) -> None:
        if len(self.frames) >= MAX_INLINE_DEPTH:
            raise UserError(f"call depth over {MAX_INLINE_DEPTH} while inlining {name} "
                            "(recursion is not supported)", span)

    def run_frame(self, frame: Frame, body: list[ast.stmt]) -> Any:
        """Run an inlined function's ``body`` in ``frame``: the value it returns."""
        self.frames.append(frame)
        try:
            self.run_block(body)
        except branches.FunctionReturn as ret:
            return ret.value
        finally:
            self.frames.pop()
        return None

    # Statements --------------------------------------------------------------
    def run_block(self, stmts: list[ast.stmt]) -> None:
        for stmt in branches.early_returns(stmts):
            try:
                self.run_stmt(stmt)
            except UserError as err:
                self.diagnostics.append(err.diagnostic)
                self._poison_targets(stmt)
            except ShapeError as err:  # from a builder without a closer span
                self.diagnostics.append(Diagnostic(self.span(stmt), str(err)))
                self._poison_targets(stmt)
            except branches.PASSING:
                raise
            except Exception as exc:  # a bug in cuvil_aot: refuse the function, at this line
                self.diagnostics.append(internal_diagnostic(self.span(stmt), exc))
                self._poison_targets(stmt)

    def _poison_targets(self, stmt: ast.stmt) -> None:
        scope = self.frames[-1].scope
        for node in ast.walk(stmt):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                scope[node.id] = POISON
        if isinstance(stmt, ast.Return):
            raise branches.FunctionReturn(POISON)

    def run_stmt(self, stmt: ast.stmt) -> None:
        method = getattr(self, "stmt_" + type(stmt).__name__, None)
        if method is not None:
            method(stmt)
            return
        form = python_forms.STATEMENTS.get(type(stmt))
        if form is None:
            raise UserError(f"the statement '{type(stmt).__name__}' is not supported",
                            self.span(stmt), SUPPORTED_STATEMENTS)
        form(self, stmt, POISON)

    def stmt_Expr(self, stmt: ast.Expr) -> None:
        if isinstance(stmt.value, ast.Constant):  # docstring
            return
        self.eval(stmt.value)

    def stmt_FunctionDef(self, stmt: ast.FunctionDef) -> None:
        self.frames[-1].scope[stmt.name] = local_functions.define(self, stmt)

    def expr_Lambda(self, expr: ast.Lambda) -> Any:
        return local_functions.define(self, local_functions.as_def(expr))

    def call_local(self, fn: local_functions.LocalFunction, args: list[Any],
                   kwargs: dict[str, Any], span: SourceSpan) -> Any:
        """Inline a function defined inside the compiled one, in its defining source."""
        self.check_depth(fn.node.name, span)
        try:
            scope = fn.scope(args, kwargs)
        except TypeError as exc:
            raise UserError(f"{fn.node.name}(): {exc}", span) from None
        outer = self.frames[-1]
        return self.run_frame(Frame(outer.src, scope, outer.globals), fn.node.body)

    def stmt_Assign(self, stmt: ast.Assign) -> None:
        value = self.eval(stmt.value)
        for target in stmt.targets:
            self.assign(target, value)

    def stmt_AnnAssign(self, stmt: ast.AnnAssign) -> None:
        if stmt.value is not None:
            self.assign(stmt.target, self.eval(stmt.value))

    def stmt_AugAssign(self, stmt: ast.AugAssign) -> None:
        if assignment.augmented(self, stmt, POISON):  # into an array, in place (assign.py)
            return
        assert isinstance(stmt.target, ast.Name)
        current = self.load_name(stmt.target.id, stmt.target)
        value = self.binop(stmt.op, current, self.eval(stmt.value), stmt)
        self.assign(stmt.target, value)

    def stmt_Return(self, stmt: ast.Return) -> None:
        raise branches.FunctionReturn(None if stmt.value is None else self.eval(stmt.value))

    def stmt_If(self, stmt: ast.If) -> None:
        branches.if_statement(self, stmt, POISON)

    def stmt_For(self, stmt: ast.For) -> None:
        if stmt.orelse:
            raise UserError("for ... else is not supported", self.span(stmt))
        args = loops.run_time_range(stmt.iter, self.eval)
        if args is not None:  # a trip count known only at run time: an IR loop
            loops.run_loop(self, stmt, args, POISON)
            return
        source = self.eval(stmt.iter)
        if source is POISON:
            return
        items = unrolled.items(source)
        if items is None:
            raise UserError("only loops over range() or a tuple known at compile time "
                            "are supported", self.span(stmt.iter), unrolled.LOOP_HINT)
        if len(items) > MAX_UNROLL:
            raise UserError(f"loop of {len(items)} iterations is too long to unroll "
                            f"(at most {MAX_UNROLL})", self.span(stmt.iter))
        for item in items:
            self.assign(stmt.target, item)
            self.run_block(stmt.body)

    def stmt_While(self, stmt: ast.While) -> None:
        while_loops.run_while(self, stmt, POISON, MAX_UNROLL)

    def assign(self, target: ast.expr, value: Any) -> None:
        scope = self.frames[-1].scope
        if isinstance(target, ast.Name):
            scope[target.id] = value
        elif isinstance(target, ast.Tuple | ast.List):
            if value is POISON:
                for elt in target.elts:
                    self.assign(elt, POISON)
                return
            if isinstance(value, Node):
                if not value.shape or not value.shape[0].is_static:
                    raise UserError("unpacking an array needs a static first dimension",
                                    self.span(target))
                value = tuple(self.subscript(value, i, target) for i in range(value.shape[0].value))
            for elt, item in python_forms.unpacked(self, target, value):
                self.assign(elt, item)
        elif isinstance(target, ast.Subscript):  # x[i] = v (assign.py)
            assignment.setitem(self, target, value, POISON)
        else:  # self.x = v, ...
            raise assignment.unsupported_target(self, target)

    # Expressions -------------------------------------------------------------
    def eval(self, expr: ast.expr) -> Any:
        method = getattr(self, "expr_" + type(expr).__name__, None)
        if method is not None:
            return method(expr)
        form = python_forms.EXPRESSIONS.get(type(expr))
        if form is None:
            raise UserError(f"the expression '{type(expr).__name__}' is not supported",
                            self.span(expr), "arithmetic, NumPy calls, indexing, attributes")
        return form(self, expr, POISON)

    def expr_Name(self, expr: ast.Name) -> Any:
        return self.load_name(expr.id, expr)

    def load_name(self, name: str, where: ast.AST) -> Any:
        frame = self.frames[-1]
        if name in frame.scope:
            if isinstance(frame.scope[name], values.Unbound):
                raise UserError(frame.scope[name].why, self.span(where))
            return frame.scope[name]
        if name in frame.globals:
            value = frame.globals[name]
            self.record_global(str(frame.globals.get("__name__", "?")), name, value, where)
            return value
        if hasattr(builtins, name):
            return getattr(builtins, name)
        raise UserError(f"name '{name}' is not defined", self.span(where))

    def record_global(self, owner: str, name: str, value: Any, where: ast.AST | SourceSpan) -> None:
        """Put what the compiled code read from outside into the cache key, by value."""
        try:
            self.trace.globals_read[f"{owner}.{name}"] = describe(value)
        except Undigestible as exc:
            span = where if isinstance(where, SourceSpan) else self.span(where)
            raise UserError(f"'{name}' is {exc}: cuvil_aot cannot tell when it changes, so it "
                            "cannot be part of compiled code", span,
                            "a module-level constant (a number, string, tuple, list or dict "
                            "of them, a NumPy dtype, array or function), or pass it as an "
                            "argument") from None

    def expr_Tuple(self, expr: ast.Tuple) -> Any:
        return tuple(self.eval_starred(expr.elts))

    def expr_List(self, expr: ast.List) -> Any:
        return list(self.eval_starred(expr.elts))

    def expr_Dict(self, expr: ast.Dict) -> Any:
        return calls.dict_display(self, expr, POISON)

    def eval_starred(self, elts: list[ast.expr]) -> list[Any]:
        out: list[Any] = []
        for e in elts:
            if isinstance(e, ast.Starred):
                value = self.eval(e.value)
                out.extend([POISON] if value is POISON else value)  # already reported
            else:
                out.append(self.eval(e))
        return out

    def expr_ListComp(self, expr: ast.ListComp) -> Any:
        return unrolled.list_comp(self, expr, POISON, MAX_UNROLL)

    def expr_GeneratorExp(self, expr: ast.GeneratorExp) -> Any:
        return unrolled.generator(self, expr, POISON, MAX_UNROLL)

    def expr_IfExp(self, expr: ast.IfExp) -> Any:
        return branches.if_exp(self, expr, POISON)

    def expr_BoolOp(self, expr: ast.BoolOp) -> Any:
        return branches.bool_op(self, isinstance(expr.op, ast.And), expr.values, POISON)

    def truth(self, value: Any, where: ast.AST) -> Any:
        """``bool(value)``: a bool when known at compile time, else a run-time scalar."""
        if isinstance(value, Node):
            if value.shape:
                raise UserError("the truth value of an array is not known at compile time",
                                self.span(where), "np.where(cond, a, b) to select elementwise")
            return python_value(value, bool, self.span(where))
        if isinstance(value, Dim) and not value.is_static:
            if value.known_positive():
                return True
            return binary("NotEq", value, 0, *[self.span(where)] * 3)
        return bool(fold(value))

    def expr_BinOp(self, expr: ast.BinOp) -> Any:
        return self.binop(expr.op, self.eval(expr.left), self.eval(expr.right), expr)

    def expr_UnaryOp(self, expr: ast.UnaryOp) -> Any:
        value = self.eval(expr.operand)
        if value is POISON:
            return POISON
        span = self.span(expr)
        if isinstance(expr.op, ast.UAdd):
            return value
        if isinstance(expr.op, ast.Not):
            truth = self.truth(value, expr.operand)
            return apply(Op.INVERT, [truth], span) if isinstance(truth, Node) else not truth
        if isinstance(expr.op, ast.USub) and isinstance(value, Dim):
            return fold(-value)
        if isinstance(value, Node | Dim):
            node = to_node(value, span)
            if node.type.weak and node.dtype == "bool":  # Python: -True == -1, ~True == -2
                node = python_value(node, int, span)
            return apply(Op.NEG if isinstance(expr.op, ast.USub) else Op.INVERT, [node], span)
        fn = operator.neg if isinstance(expr.op, ast.USub) else operator.invert
        try:
            return fold(fn(value))
        except TypeError as exc:  # the user's constant arithmetic failed, as Python would
            raise UserError(f"TypeError: {exc}", span) from None

    def binop(self, op: ast.operator, left: Any, right: Any, expr: ast.AST) -> Any:
        if left is POISON or right is POISON:
            return POISON
        span = self.span(expr)
        left_span = self.span(expr.left) if isinstance(expr, ast.BinOp) else span
        right_span = self.span(expr.right) if isinstance(expr, ast.BinOp) else span
        name = type(op).__name__
        if name in ("FloorDiv", "Mod"):
            quotient = self.floor_quotient(left, right)
            if quotient is not None:
                return fold(quotient if name == "FloorDiv" else Dim.of(left) - quotient * right)
        return binary(name, left, right, span, left_span, right_span)

    def floor_quotient(self, left: Any, right: Any) -> Dim | None:
        """``left // right`` for a size and a positive constant that need not divide it: a
        symbol the call computes, floor(n / k) = ceil((n - (k - 1)) / k) (None where
        dimension arithmetic has the answer already, or it is no such quotient)."""
        if not isinstance(left, Dim) or left.is_static or not left.known_nonnegative() \
                or isinstance(right, bool) or not isinstance(right, int) or right <= 0 \
                or left.exact_div(right) is not None:
            return None
        length = left - (right - 1)
        name = derived_symbol(length, right)
        self.derived.append((name, length, right))
        return Dim.of(name)

    def expr_Compare(self, expr: ast.Compare) -> Any:
        if len(expr.ops) != 1:  # a < b < c is (a < b) and (b < c), as in Python
            terms = [expr.left, *expr.comparators]
            return branches.bool_op(self, True, [ast.copy_location(ast.Compare(a, [op], [b]), expr)
                                                 for a, op, b in zip(terms, expr.ops, terms[1:])],
                                    POISON)
        left, right = self.eval(expr.left), self.eval(expr.comparators[0])
        if left is POISON or right is POISON:
            return POISON
        name = type(expr.ops[0]).__name__
        if name in ("Is", "IsNot", "In", "NotIn"):
            return identity(name, left, right, self.exact_bools, self.span(expr))
        span = self.span(expr)
        return binary(name, left, right, span, span, span)

    def expr_Attribute(self, expr: ast.Attribute) -> Any:
        value = self.eval(expr.value)
        if value is POISON:
            return POISON
        if isinstance(value, ArgumentObject):  # self.w, self.method (methods.py)
            return methods.attribute(self, value, expr.attr, self.span(expr))
        result = numpy_api.attribute(value, expr.attr, self.span(expr))
        if isinstance(value, types.ModuleType):  # kdep.SCALE: a value of another module
            self.record_global(value.__name__, expr.attr, result, expr)
        return result

    def expr_Subscript(self, expr: ast.Subscript) -> Any:
        value = self.eval(expr.value)
        index = self.eval(expr.slice)
        if value is POISON or _poisoned(index):
            return POISON
        return self.subscript(value, index, expr)

    def subscript(self, value: Any, index: Any, expr: ast.AST) -> Any:
        # a run-time int as an index is a gather (gather.py); as a slice bound, a size the
        # call computes (runtime_slices.py)
        if isinstance(value, Node):
            folded = literal_element(value, index, self.span(expr))
            if folded is not None:
                return folded
            node, needs = subscript.index(value, index, self.span(expr))
            subscript.record(needs, self)
            return node
        try:
            return value[index]
        except (TypeError, IndexError, KeyError) as exc:
            raise values.indexing_error(self.describe(value), index, exc, self.span(expr)) from None

    def expr_Slice(self, expr: ast.Slice) -> Any:
        parts = [None if e is None else self.eval(e) for e in (expr.lower, expr.upper, expr.step)]
        if any(p is POISON for p in parts):
            return POISON
        return slice(*parts)

    def expr_Starred(self, expr: ast.Starred) -> Any:
        raise UserError("starred expressions are only supported inside tuples and calls",
                        self.span(expr))

    def expr_Call(self, expr: ast.Call) -> Any:
        fn = self.eval(expr.func)
        if fn is not POISON and ufunc_out.applies(fn, expr):
            return ufunc_out.call(self, fn, expr, POISON)
        args = self.eval_starred(expr.args)
        kwargs = calls.keywords(self, expr.keywords, POISON)
        if fn is POISON or any(map(_poisoned, [*args, *kwargs.values()])):
            return POISON
        return calls.call_value(self, fn, args, kwargs, self.span(expr),
                                [self.span(a) for a in expr.args])

    def describe(self, value: Any) -> str:
        if isinstance(value, Node):
            return f"an array {value.type}"
        return repr(value) if isinstance(value, ArgumentDict | ArgumentObject) \
            else f"a {type(value).__name__}"


def _numpy_source(fn: types.FunctionType) -> bool:
    """``fn`` is one of NumPy's own functions (its Python source in NumPy's package)."""
    return (fn.__module__ or "").split(".")[0] == "numpy"


def _poisoned(value: Any) -> bool:
    """``value`` is POISON or a list or tuple holding it (np.concatenate([np.sin(a), ...])
    of an ``a`` whose error was reported: no second error about the list)."""
    if isinstance(value, list | tuple):
        return any(map(_poisoned, value))
    if isinstance(value, slice):  # x[:, :n] of an n whose error was reported
        return any(map(_poisoned, (value.start, value.stop, value.step)))
    return value is POISON
