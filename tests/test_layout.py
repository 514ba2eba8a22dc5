"""The floor plan holds: imports follow docs/ARCHITECTURE.md's arrows, with no cycles, no
private names shared across modules and no file over 500 lines.

A short AST scan of cuvil_aot/: every import counts, at module level or inside a
function, except those under ``if TYPE_CHECKING:`` (they never run).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "cuvil_aot"
NATIVE = "cuvil_aot.runtime.native"
"""The C runtime: an extension module, a leaf that imports nothing of the package. It
lives in ``runtime/`` whose ``__init__`` imports nothing, so importing it adds no arrow
even for a scan that cannot see inside the extension."""
MAX_LINES = 500

# Parts, most specific prefix first, and the parts each may import (itself included).
BASE = ("_version", "marks", "errors", "knobs", "host", "options", "digest")
COMPILER_INSIDE = {
    "compiler.ir": {"compiler.ir"},
    "compiler.frontend": {"compiler.frontend", "compiler.ir"},
    "compiler.passes": {"compiler.passes", "compiler.ir"},
    "compiler.codegen": {"compiler.codegen", "compiler.ir", "compiler.gpu_targets"},
    "compiler.toolchain": {"compiler.toolchain", "compiler.gpu_targets"},
    "compiler.gpu_targets": {"compiler.gpu_targets"},
    "compiler": {"compiler"},
}
ALLOWED = {
    **{part: {"base"} | allowed for part, allowed in COMPILER_INSIDE.items()},
    "base": {"base"},
    "cache": {"cache", "base"},
    "runtime": {"runtime", "base"},
    "load": {"load", "cache", "runtime", "base"},
    "entry": {"entry", "load", "cache", "runtime", "base"},
}
LAZY_DOORS = {"cuvil_aot.load.builder": "compiler", "cuvil_aot.cli.commands": "compiler"}
"""The only modules outside the compiler that may import it, and only inside a function
(a cache hit or a CLI command other than ``show`` never imports the compiler)."""


def part_of(module: str) -> str:
    name = module.removeprefix("cuvil_aot").lstrip(".")
    if name in BASE:
        return "base"
    for part in [*COMPILER_INSIDE, "cache", "runtime", "load"]:
        if name == part or name.startswith(part + "."):
            return part
    return "entry"  # the package itself, api, importer, cli/, build/, nn


def modules() -> dict[str, Path]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _target(name: str, known: dict[str, Path]) -> str:
    while name not in known and "." in name:
        name = name.rsplit(".", 1)[0]
    return name


def imports(module: str, path: Path, known: dict[str, Path]) -> list[tuple[str, str, bool]]:
    """(imported module, name imported from it or "", inside a function) for each import
    of a cuvil_aot module by ``module``."""
    found: list[tuple[str, str, bool]] = []
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                continue
            inner = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef))
            if isinstance(child, ast.Import):
                found.extend((_target(a.name, known), "", inner) for a in child.names
                             if a.name.startswith("cuvil_aot") and a.name != NATIVE)
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    up = package.split(".")[: len(package.split(".")) - child.level + 1]
                    base = ".".join(up + ([base] if base else []))
                if base.startswith("cuvil_aot") and base != NATIVE:
                    for alias in child.names:
                        full = f"{base}.{alias.name}"
                        if full == NATIVE:
                            continue
                        if full in known:
                            found.append((full, "", inner))
                        else:
                            found.append((_target(base, known), alias.name, inner))
            visit(child, inner)

    visit(ast.parse(path.read_text()), False)
    return found


KNOWN = modules()
EDGES = {m: imports(m, p, KNOWN) for m, p in KNOWN.items()}


def cycles() -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    graph = {m: {t for t, _, _ in EDGES[m] if t != m} for m in KNOWN}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def connect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in graph:
        if v not in index:
            connect(v)
    return found


def test_no_import_cycles() -> None:
    assert cycles() == []


def test_no_private_name_is_imported_from_another_module() -> None:
    shared = [f"{m} imports {name} from {t}" for m, edges in EDGES.items()
              for t, name, _ in edges
              if name.startswith("_") and not name.startswith("__") and t != m]
    assert shared == []


def test_the_native_runtime_sits_in_a_package_that_imports_nothing() -> None:
    assert NATIVE.rsplit(".", 1)[0] == "cuvil_aot.runtime"
    assert EDGES["cuvil_aot.runtime"] == []


def test_no_file_over_500_lines() -> None:
    long = {m: n for m, p in KNOWN.items() if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert long == {}


def allowed(module: str, target: str, in_function: bool) -> bool:
    mine, theirs = part_of(module), part_of(target)
    if mine == "compiler":  # the pipeline (compiler/pipeline.py) runs every stage
        return theirs == "base" or theirs.startswith("compiler")
    if theirs.startswith("compiler") and LAZY_DOORS.get(module) == "compiler":
        return in_function
    return theirs in ALLOWED[mine]


def test_imports_follow_the_arrows_of_the_floor_plan() -> None:
    against = [f"{module} ({part_of(module)}) -> {target} ({part_of(target)})"
               for module, edges in EDGES.items()
               for target, _, in_function in edges
               if not allowed(module, target, in_function)]
    assert against == []


@pytest.mark.parametrize("module", ["cuvil_aot.compiler.pipeline", "cuvil_aot.load.artifacts"])
def test_the_scan_sees_the_arrows_it_checks(module: str) -> None:
    """The scan is not vacuous: the pipeline reaches every stage, the loader its store."""
    targets = {t for t, _, _ in EDGES[module]}
    want = ({"cuvil_aot.compiler.frontend", "cuvil_aot.compiler.passes",
             "cuvil_aot.compiler.toolchain.cc"} if module.endswith("pipeline")
            else {"cuvil_aot.load.builder", "cuvil_aot.cache", "cuvil_aot.runtime.binding"})
    assert want <= targets
