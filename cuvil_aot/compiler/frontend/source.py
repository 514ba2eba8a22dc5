"""Finding a function's source and its AST, with exact positions in its file."""

from __future__ import annotations

import ast
import hashlib
import inspect
import linecache
import tokenize
import types
from dataclasses import dataclass

from cuvil_aot.errors import Diagnostic, SourceSpan


class SourceUnavailable(Exception):
    pass


@dataclass(frozen=True)
class FunctionSource:
    file: str
    lines: tuple[str, ...]
    tree: ast.FunctionDef
    text: str  # the function's own lines, decorators included

    @property
    def normalized(self) -> str:
        """The function's AST without positions: comments and layout do not change it."""
        return ast.dump(self.tree, include_attributes=False)

    def span(self, node: ast.AST) -> SourceSpan:
        line = getattr(node, "lineno", self.tree.lineno)
        col = getattr(node, "col_offset", 0)
        end_line = getattr(node, "end_lineno", None) or line
        end_col = getattr(node, "end_col_offset", None) or col + 1
        text = self.lines[line - 1] if 0 < line <= len(self.lines) else ""
        return SourceSpan(self.file, line, col, end_line, end_col, text.rstrip("\n"))


_MODULE_TREES: dict[tuple[str, str], ast.Module] = {}


def _module_tree(file: str, text: str) -> ast.Module:
    key = (file, hashlib.sha256(text.encode()).hexdigest())
    tree = _MODULE_TREES.get(key)
    if tree is None:
        tree = _MODULE_TREES[key] = ast.parse(text, file)
    return tree


def _current_lines(file: str, fn: types.FunctionType) -> tuple[str, ...]:
    """The file's lines as they are now: read from disk each time, never from linecache,
    which keeps a file's first text for the whole process (an edit followed by
    importlib.reload would compile the old code). Sources without a file (a loader's
    get_source) come through linecache."""
    try:
        with tokenize.open(file) as source:
            return tuple(source.readlines())
    except (OSError, SyntaxError):
        return tuple(linecache.getlines(file, fn.__globals__))


def function_source(fn: types.FunctionType) -> FunctionSource:
    """The AST of ``fn`` located in its module's file, so spans are file positions."""
    file = inspect.getsourcefile(fn) or fn.__code__.co_filename
    lines = _current_lines(file, fn)
    if not lines:
        raise SourceUnavailable(f"the source of {fn.__qualname__} is not available "
                                f"(defined in {file!r}); define it in a .py file")
    tree = _module_tree(file, "".join(lines))
    first = fn.__code__.co_firstlineno
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == fn.__name__:
            start = min([node.lineno] + [d.lineno for d in node.decorator_list])
            if first in (start, node.lineno):
                text = "".join(lines[start - 1:node.end_lineno])
                return FunctionSource(file, lines, node, text)
    if fn.__name__ == "<lambda>":
        raise SourceUnavailable("lambdas cannot be compiled; use a def")
    raise SourceUnavailable(f"cannot find the definition of {fn.__qualname__} in {file}")


def signature_diagnostic(fn: types.FunctionType, message: str, hint: str = "") -> Diagnostic:
    """A diagnostic pointing at the def line of ``fn``."""
    try:
        src = function_source(fn)
    except SourceUnavailable:
        return Diagnostic(None, f"{fn.__qualname__}: {message}", hint)
    return Diagnostic(src.span(src.tree), message, hint)
